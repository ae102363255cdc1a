"""The report's last section, "Files and reproduction": each file of the run folder with its own description, and how
to rerun the study or rebuild the report.
"""

from __future__ import annotations

from collections.abc import Sequence

from headstats.report.blocks import Report


def files_section(report: Report, analysis_files: dict[str, str] | None = None, *,
                  formats: Sequence[str] | None = None) -> None:
    from headstats.plots.style import FORMATS

    others = [f.upper() for f in (FORMATS if formats is None else formats) if f != "png"]
    papers = f" and {', '.join(others)} (for papers)" if others else ""
    report.heading("Files and reproduction")
    report.text(
        "- `scores.parquet`: one row per input, layer, head and role (column `score`)\n"
        "- `tests.csv` / `tests.parquet`: one row per model, data set, role, layer and head\n"
        "- `roles.csv`: one row per head, a boolean column per role\n"
        + "".join(f"- `{name}.csv`: {what}\n" for name, what in (analysis_files or {}).items()) +
        f"- `figures/`: every figure as PNG (shown here){papers}\n"
        "- `manifest.json`: versions, model weight hashes, data hashes, seed, counts\n"
        "- `protocol.resolved.yaml`: rerun with `headstats run protocol.resolved.yaml`; rebuild this report from "
        "the tables with `headstats report RUN_DIR`"
    )
