"""The report's last section, "Files and reproduction": each file of the run folder with its own description, and how
to rerun the study or rebuild the report.
"""

from __future__ import annotations

from collections.abc import Sequence

from headstats.report.blocks import Report
from headstats.tables import TABLES, RunTables
from headstats.tables.declared import STUDY
from headstats.tables.study_tables import SCORES


def files_section(report: Report, tables: RunTables, *, formats: Sequence[str] | None = None) -> None:
    """The files of the run folder, each described by its declared spec (:class:`headstats.tables.RunTables`): the
    study's own tables it wrote (``scores.parquet``, written from the score arrays, always), the LaTeX tables,
    the analyses', figures and how to rerun."""
    from headstats.plots.style import FORMATS

    others = [f.upper() for f in (FORMATS if formats is None else formats) if f != "png"]
    papers = f" and {', '.join(others)} (for papers)" if others else ""
    written = {*tables, SCORES.name}
    study = [spec for _, spec in TABLES.items() if spec.owner == STUDY and spec.listed and spec.name in written]
    report.heading("Files and reproduction")
    report.text(
        "".join(f"- {' / '.join(f'`{file}`' for file in spec.files)}: {spec.description}\n" for spec in study)
        + "- `*.tex`: the main tables as LaTeX (booktabs) for a paper, each caption with its own method sentence\n"
        + "".join(f"- `{name}.csv`: {tables.describe(name)}\n" for own in tables.analyses().values() for name in own
                  if tables.spec(name).listed)
        + f"- `figures/`: every figure as PNG (shown here){papers}\n"
        "- `manifest.json`: versions, model weight hashes, data hashes, seed, counts\n"
        "- `protocol.resolved.yaml`: rerun with `headstats run protocol.resolved.yaml`; rebuild this report from "
        "the tables with `headstats report RUN_DIR`"
    )
