"""What a study's steps hand each other and what a study gives back: a data set read (:class:`LoadedData`),
everything a study computed (:class:`StudyResult`), and the log callback every step takes (:data:`Log`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from headstats.config.protocol import DatasetSpec
from headstats.errors import HeadstatsError
from headstats.inputs.records import Record
from headstats.measures import MeasureArray
from headstats.tables import RunTables

#: Called with each line of a study's log.
Log = Callable[[str], None]
#: Writes a study's report into its staged output folder, before the manifest lists the folder's files:
#: ``report(folder, protocol, analysis, manifest, comparison=..., analyses=..., log=...)``, i.e. the report
#: layer's :func:`headstats.report.builder.build_report`. The report layer sits above the study, which never
#: imports it: whoever runs a study and wants its report passes one (``headstats run``, ``headstats merge``,
#: ``hs.run``); without one, the run folder holds the tables and the manifest, and ``headstats report`` builds the
#: report from them later.
ReportWriter = Callable[..., object]


@dataclass
class LoadedData:
    """A data set's records and where they came from."""

    spec: DatasetSpec
    #: The records (a list; from the cache, a sequence that reads them at the first look).
    records: Sequence[Record]
    files: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    #: ``(sentence_id, reason)`` of records left out before parsing (empty, or too long to ever fit).
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Whether some record is a pair, and whether some record is parsed (which roles apply).
    has_pairs: bool = False
    has_parses: bool = False
    #: The :func:`~headstats.engine.cache.record_digest` of each record, when the run caches (chunk keys).
    digests: list[bytes] | None = None

    def counted(self, counts: dict) -> dict:
        """``counts`` of a scoring of :attr:`records` with the records left out before parsing added in."""
        return with_skipped(counts, self.skipped)


def with_skipped(counts: dict, skipped: list[tuple[str, str]]) -> dict:
    """A scoring's ``counts`` with the records left out before it (``(sentence_id, reason)``) added in:
    ``n_records`` grows by their number and ``skipped`` by their reasons."""
    from collections import Counter

    from headstats.inputs.filters import skipped_counts

    merged = Counter(counts.get("skipped", {})) + Counter(skipped_counts(skipped))
    return counts | {"n_records": counts.get("n_records", 0) + len(skipped), "skipped": dict(merged)}


def in_notebook() -> bool:
    """Whether this code runs in a notebook's kernel (Jupyter, VS Code, Colab): an IPython shell that has a
    kernel, not merely an importable IPython or a terminal IPython."""
    import sys

    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


@dataclass
class StudyResult:
    """Everything a study computed (also written to the output folder).

    ``scores`` holds one :class:`~headstats.measures.MeasureArray` per (measure, model, data set);
    :meth:`scores_frame` makes the long table of ``scores.parquet``.
    """

    out: Path
    scores: list[MeasureArray]
    tests: pd.DataFrame
    roles: pd.DataFrame
    tables: RunTables
    manifest: dict

    def scores_frame(self) -> pd.DataFrame:
        """The long scores table ``model, dataset, measure, sentence_id, layer, head, role, score``."""
        from headstats.study.scoring import long_frame

        return long_frame(self.scores)

    @property
    def report_path(self) -> Path | None:
        """The report's file (``report.html``, else ``report.md``), or None when the run wrote neither."""
        for name in ("report.html", "report.md"):
            if (self.out / name).is_file():
                return self.out / name
        return None

    def show_report(self, *, height: int = 800):
        """Show the run's report: in a notebook (a running Jupyter kernel), ``report.html`` embedded in it (it is
        self-contained, so it shows offline); in a terminal, a script or plain IPython, opened in the web browser.

        Returns
        -------
        IPython.display.HTML or Path
            The displayable report in a notebook (the last expression of a cell shows it), else the report's
            path.
        """
        import html

        path = self.report_path
        if path is None:
            raise HeadstatsError(f"{self.out} holds no report; rebuild it with headstats report {self.out}")
        if not in_notebook():
            import webbrowser

            webbrowser.open(path.resolve().as_uri())
            return path
        from IPython.display import HTML, Markdown

        if path.suffix != ".html":
            return Markdown(path.read_text(encoding="utf-8"))
        page = html.escape(path.read_text(encoding="utf-8"), quote=True)
        # in a <div>: IPython warns about HTML that starts with an <iframe>
        return HTML(f'<div><iframe srcdoc="{page}" style="width:100%;height:{int(height)}px;border:1px solid '
                    '#ccc"></iframe></div>')

    def _summary_rows(self) -> list[list]:
        """Per (model, data set): inputs scored, heads, heads with a role, and the heads per role (under the
        primary attention measure; with several, the heads whose roles hold under every measure too)."""
        from headstats.tables.study_tables import role_columns
        from headstats.measures import attention_measures, on_measure

        roles = self.roles
        if roles.empty or not {"model", "dataset"} <= set(roles.columns):  # a shard: no statistics
            return []
        measures = attention_measures(roles)
        roles = on_measure(roles, measures[0])
        columns = role_columns(roles)
        rows = []
        for (model, dataset), group in roles.groupby(["model", "dataset"], sort=False):
            held = group[columns].astype("boolean")
            counts = ", ".join(f"{c} {int(held[c].sum())}" for c in columns if held[c].notna().any())
            if len(measures) > 1:
                robust = int(group["robust_across_measures"].fillna(False).astype(bool).sum())
                counts = (f"under {measures[0]}: {counts}; heads whose roles all hold under "
                          f"{' and '.join(measures)}: {robust}")
            scored = self.manifest.get("inputs", {}).get(f"{model}/{dataset}", {}).get("n_scored")
            rows.append([model, dataset, scored, len(group), int(held.fillna(False).any(axis=1).sum()), counts])
        return rows

    def summary_frame(self) -> pd.DataFrame:
        """The end of a run in one table: per (model, data set) the inputs scored, the heads, the heads with a
        role, the heads per role, and the verdicts of the claims (``2 supported, 1 cannot tell``)."""
        columns = ["model", "dataset", "inputs", "heads", "with a role", "heads per role"]
        frame = pd.DataFrame(self._summary_rows(), columns=columns)
        claims = self.tables.get("claims")
        if claims is None or claims.empty or frame.empty:
            return frame
        order = ("supported", "contradicted", "not shown", "cannot tell")

        def tally(model, dataset) -> str:
            part = claims[(claims["model"].astype(str) == str(model)) & (claims["dataset"].astype(str) == str(dataset))]
            counts = part["verdict"].value_counts()
            return ", ".join(f"{int(counts[v])} {v}" for v in order if v in counts)

        return frame.assign(claims=[tally(m, d) for m, d in zip(frame["model"], frame["dataset"])])

    def __repr__(self) -> str:
        """At most 15 lines: per (model, data set) the heads holding each role, the tables, the output folder
        and the report (never the tables themselves)."""
        from headstats.measures import text_summary

        report = self.report_path
        facts = {"report": f"{report} (.show_report())" if report else None,
                 "tables": ", ".join(["tests", "roles", *self.tables]),
                 "wall time": f"{self.manifest['wall_time_s']} s" if self.manifest.get("wall_time_s") else None,
                 "protocol sha256": str(self.manifest.get("protocol_sha256", ""))[:16]}
        return text_summary(f"StudyResult in {self.out}", ["model", "dataset", "inputs", "heads", "with a role",
                                                           "heads per role"], self._summary_rows(), facts,
                            what="(model, data set) rows", width=150)

    def _repr_html_(self) -> str:
        """A short HTML summary for Jupyter: per (model, data set) the inputs scored and the heads holding each
        role, the output folder and a link to the report (``show_report()`` shows it here)."""
        from headstats.measures import HTML_ROWS, html_summary

        rows = self._summary_rows()
        more = f"and {len(rows) - HTML_ROWS} more" if len(rows) > HTML_ROWS else ""
        report = self.report_path
        link = (f" <a href='{report.resolve().as_uri()}' target='_blank'>{report.name}</a>" if report else "")
        import html

        title = (f"<b>StudyResult</b> <code>{html.escape(str(self.manifest.get('headstats_run', '')))}</code> in "
                 f"<code>{html.escape(str(self.out))}</code>:{link} (<code>.show_report()</code> shows it here)")
        facts = {"tables": ", ".join(["tests", "roles", *self.tables]),
                 "wall time": f"{self.manifest['wall_time_s']} s" if self.manifest.get("wall_time_s") else None,
                 "protocol sha256": str(self.manifest.get("protocol_sha256", ""))[:16]}
        return html_summary(title, ["model", "dataset", "inputs scored", "heads", "heads with a role",
                                    "heads per role"], rows[:HTML_ROWS], facts, more)
