"""The study report, assembled: :func:`build_report` puts the sections in their order and writes ``report.md``,
``report.html`` and ``figures/``; :func:`rebuild_report` rebuilds them from a finished run folder's tables, without
any model (and without importing torch).

The order: first the claims, tested (the claims table of ``claims.csv``, claim by data set), then, when the protocol
names analyses, their sections (:func:`analysis_sections`), then the summary of the roles per data set, the methods
paragraph generated from the resolved protocol, the inputs used and skipped, role-assignment figures and tables per
model and data set, the statistics that qualify the roles, the strongest heads, the comparison and the files.

Each section is its own module in :mod:`headstats.report.sections` (the methods paragraph is
:mod:`headstats.report.methods`); this module only assembles them. Report layer: takes tables (never tests
anything) and figures from :mod:`headstats.plots`. Every verdict it prints comes from the registry of claims
(:mod:`headstats.stats.claims`, written to ``claims.csv`` by the run).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from headstats.tables.study_tables import Analysis
from headstats.tables.study_tables import role_columns
from headstats.errors import HeadstatsError, OutputError
from headstats.provenance import package_versions
from headstats.report.blocks import Report, render_tables, write_report
from headstats.report.figures import FigureRenderer, active_renderer
from headstats.report.methods import methods_section
from headstats.report.sections.claims_section import claims_section
from headstats.report.sections.files_section import files_section
from headstats.report.sections.inputs_section import inputs_section
from headstats.report.sections.skipped_section import skipped_section
from headstats.report.sections.statistics_section import statistics_sections
from headstats.tables import RunTables
from headstats.tables.study_tables import MODELS, ROLES, models_table


# ============================================================================================ assembly

def analysis_sections(report: Report, root: Path, tables: RunTables, claims: pd.DataFrame | None = None,
                      log: Callable[[str], None] = lambda message: None, *, builtin: bool = False,
                      inputs: Mapping[str, pd.DataFrame] | None = None, answers: bool = False) -> None:
    """The section of each analysis of the run (the ``section`` of its registry entry, see
    :mod:`headstats.analyses`), given its tables (a :class:`~headstats.tables.RunTables` indexed by their specs),
    the study's tables its spec ``reads`` that ``inputs`` holds (name -> frame) and the run's ``claims`` (as
    ``tables["claims"]``: a section states verdicts only from there). ``builtin``: the analyses a protocol section
    of their own turns on (their spec's ``protocol_field``), else those of ``analyses:``; ``answers``: their
    ``answer`` sections (drawn right after the claims) instead. ``log`` gets a line as each section starts (a Clark
    run's take most of a minute together)."""
    from headstats.analyses import get_analysis

    for name, own in tables.analyses().items():
        spec = get_analysis(name)
        if (spec.protocol_field is not None) != builtin:
            continue
        section = spec.answer_function() if answers else spec.section_function()
        if section is not None:
            log(f"report: the {'answer' if answers else 'section'} of {name}")
            mine = RunTables(own, owner=name).replaced(
                {**{r.name: inputs[r.name] for r in spec.reads if inputs and r.name in inputs},
                 **({"claims": claims} if claims is not None else {})})
            section(report, root, mine)


@dataclass(frozen=True)
class SlotContext:
    """What a part of the report placed in a named slot (:data:`headstats.analyses.ReportSlot`) gets besides the
    run's tables: the protocol, the manifest, the run's claims, the figure formats and renderer, whether the
    protocol's own analyses lead the report, and the progress log."""

    protocol: Any
    manifest: dict
    claims: pd.DataFrame | None
    formats: Sequence[str] | None
    figures: FigureRenderer
    lead: bool
    log: Callable[[str], None]


def slot_sections(slot: str, report: Report, root: Path, tables: RunTables, context: SlotContext) -> None:
    """The parts that the enabled analyses place in the slot ``slot`` (their spec's ``section`` mapping), in the
    order of the protocol's enabled analyses."""
    from headstats.analyses import get_analysis

    protocol = context.protocol
    names = protocol.enabled_analyses() if callable(getattr(protocol, "enabled_analyses", None)) else []
    for name in names:
        part = get_analysis(name).slot_function(slot)
        if part is not None:
            part(report, root, tables, context)


def analyses_lead(protocol, analyses: dict | None) -> bool:
    """Whether the protocol's own analyses lead the report (it names analyses), the roles coming after them;
    a protocol of roles alone leads with the roles."""
    return bool(analyses) and bool(getattr(protocol, "analyses", None))


def build_report(root: Path, protocol, tables: RunTables, manifest: dict, *,
                 formats: Sequence[str] | None = None, log: Callable[[str], None] = lambda message: None,
                 workers: int | None = None) -> Report:
    """Build the report of a study and write ``report.md``, ``report.html`` and ``figures/`` into ``root``.

    The figures are drawn in worker processes while the text is built (:mod:`headstats.report.figures`);
    their files are the same as drawn one after the other.

    Parameters
    ----------
    root : Path
        The folder to write into (a run's staging folder).
    protocol : Protocol
        The resolved protocol.
    tables : RunTables
        The run's tables: the tests, role table and role tables, the comparison's (pretrained vs fine-tuned) and
        each analysis' (:mod:`headstats.analyses`; each adds its own section).
    manifest : dict
        The run's manifest (models, datasets, inputs, protocol hash).
    formats : sequence of str, optional
        Figure formats beside the PNG (default PNG and SVG).
    log : callable
        Called with a line as each part of the report is drawn.
    workers : int, optional
        Processes that draw the figures (default: one per CPU, or ``$HEADSTATS_FIGURE_WORKERS``; 1: here).
    """
    from headstats.plots import style

    root = Path(root)
    preset = style.preset_of(getattr(protocol.report, "figures", None))
    formats = list(formats) if formats is not None else list(preset.formats)
    with style.using(preset), FigureRenderer(root, formats=formats, workers=workers, preset=preset) as figures, \
            active_renderer(figures):
        report = _build_report(root, protocol, tables, manifest, formats=formats, log=log, figures=figures)
        render_tables(report, html_too=protocol.report.html)  # while the figures are drawn
        figures.wait(log=log)  # how many figures, then a count as each tenth is drawn
        log("report: writing report.md" + (" and report.html" if protocol.report.html else ""))
        write_report(report, root, html_too=protocol.report.html)
    return report


def _build_report(root: Path, protocol, tables: RunTables, manifest: dict, *, formats: Sequence[str] | None,
                  log: Callable[[str], None], figures: FigureRenderer) -> Report:
    # every section but "Across measures" reads the primary attention measure (the first of scoring.measures)
    every_measure = Analysis.of_run(tables)
    analysis, analyses = every_measure.on_measure(), tables.analyses()
    # the study's tables an analysis' section may read (its spec's ``reads``): the role table and the models
    inputs = {ROLES.name: analysis.roles, MODELS.name: models_table(protocol.models, manifest.get("models") or {})}
    report = Report(title=f"headstats report: {protocol.name}")
    report.latex_caption = f"Protocol {protocol.name}. "
    if protocol.description:
        report.text(protocol.description)
    report.contents(levels=(2, 3))
    claims = analysis.tables.get("claims")
    skipped_section(report, analyses)
    claims_section(report, claims)
    analysis_sections(report, root, tables, claims, log=log, builtin=True, inputs=inputs, answers=True)
    # the protocol's own analyses lead when it names any: their sections come right after the claims, and the
    # roles of Pande et al. (always scored) follow; a protocol of roles alone leads with the roles
    lead = analyses_lead(protocol, analyses)
    if lead:
        analysis_sections(report, root, tables, claims, log=log)
        methods_section(report, protocol, manifest, analysis.tests)
        inputs_section(report, manifest, analysis)
    context = SlotContext(protocol, manifest, claims, formats, figures, lead, log)
    slot_sections("summary", report, root, tables, context)
    if not lead:
        methods_section(report, protocol, manifest, analysis.tests)
        inputs_section(report, manifest, analysis)
    slot_sections("results", report, root, tables, context)
    log("report: p-values, power and tau sensitivity")
    statistics_sections(report, root, analysis, protocol, formats=formats, figures=figures)
    slot_sections("closing", report, root, tables, context)
    analysis_sections(report, root, tables, claims, log=log, builtin=True, inputs=inputs)
    if not lead:
        analysis_sections(report, root, tables, claims, log=log)
    files_section(report, tables, formats=formats)
    return report


# ============================================================================================ rebuild

#: Files of the report itself (replaced by a rebuild; figures/ too).
REPORT_FILES = ("report.md", "report.html")


def _check_rebuildable(run: Path, manifest: dict) -> None:
    from headstats.folders import WRITTEN_BY, manifest_of

    if run.is_symlink():
        raise OutputError(f"{str(run)!r} is a symbolic link; give the run folder itself")
    if manifest_of(run) is None or (manifest.get("written_by") not in (None, WRITTEN_BY)):
        raise OutputError(f"{str(run)!r} was not written by headstats; rebuild works on `headstats run` folders")


def rebuild_report(run_dir: str | Path, *, top_k: int | None = None, html: bool | None = None,
                   formats: Sequence[str] | None = None, log: Callable[[str], None] = lambda message: None,
                   workers: int | None = None) -> Path:
    """Rebuild ``report.md``, ``report.html`` and ``figures/`` of a finished run from its tables.

    No model is loaded and torch is not imported: the tests, roles and analysis tables, ``manifest.json`` and
    ``protocol.resolved.yaml`` are all it reads. The new report is written into a staging folder beside the run
    folder and then moved in file by file (each file is replaced atomically); figures headstats wrote before
    and no longer writes are removed; files headstats did not write are never touched, and a rebuild that
    would overwrite one stops before changing anything. The manifest's ``output_files`` lists the new files
    (e.g. SVG figures beside older PNG-only runs) and ``report_rebuilds`` records the rebuild.

    Parameters
    ----------
    run_dir : path
        A folder written by ``headstats run``.
    top_k : int, optional
        Heads per role in the strongest-heads table (default: the protocol's ``report.top_k``). When given,
        ``strongest_heads.csv`` is rewritten from ``tests`` with that many heads per role.
    html : bool, optional
        Write ``report.html`` too (default: the protocol's ``report.html``).
    formats : sequence of str, optional
        Figure formats beside the PNG (default PNG and SVG).
    log : callable
        Called with a line of progress now and then.
    workers : int, optional
        Processes that draw the figures (see :func:`build_report`).

    Returns
    -------
    Path
        The rebuilt report (``report.html``, or ``report.md`` when HTML is off).

    Raises
    ------
    HeadstatsError
        The folder is not a finished headstats run, is locked by a running headstats, or the rebuild would
        overwrite a file headstats did not write.
    """
    from headstats.tables.study_tables import strongest_heads
    from headstats.folders import (STAGING_MARKER, _acquire_lock, _owner_record, _sweep_stale_staging, output_file_list,
                                   replace_outputs)
    from headstats.study.run_folder import load_run_tables
    from headstats.tables.schemas import SCHEMAS_KEY, TABLE_SUFFIXES, table_schema, unchecked_tables_fail_in_one_line

    run = Path(run_dir).expanduser()
    if run.is_symlink():
        raise OutputError(f"{str(run)!r} is a symbolic link; give the run folder itself")
    run = run.resolve()
    log(f"reading the tables of {run}")
    with unchecked_tables_fail_in_one_line(run):
        protocol, tables, manifest = load_run_tables(run)
    _check_rebuildable(run, manifest)
    if top_k is not None:
        if int(top_k) < 1:
            raise HeadstatsError(f"top_k must be at least 1, not {top_k}")
        protocol.report.top_k = int(top_k)
        tables = tables.replaced({"strongest_heads": strongest_heads(tables["tests"], k=int(top_k))})
    elif "strongest_heads" not in tables:
        tables = tables.replaced({"strongest_heads": strongest_heads(tables["tests"], k=protocol.report.top_k)})
    if html is not None:
        protocol.report.html = bool(html)
    lock = run.parent / f".{run.name}.headstats-lock"
    _acquire_lock(lock, run)
    stage = None
    try:
        _sweep_stale_staging(run)  # and the figure workers, of a report or run into it that was killed
        stage = Path(tempfile.mkdtemp(prefix=f".{run.name}.partial-", dir=run.parent))
        (stage / STAGING_MARKER).write_text(_owner_record(), encoding="utf-8")
        log("drawing the figures and writing the report")
        with unchecked_tables_fail_in_one_line(run):
            build_report(stage, protocol, tables, manifest, formats=formats, log=log, workers=workers)
        if top_k is not None:
            tables.without(*(name for name in tables if name != "strongest_heads")).write(stage)
        new_tables = {p.name: table_schema(p) for p in stage.iterdir() if p.suffix in TABLE_SUFFIXES}
        n_new = len(output_file_list(stage))
        stale, left = replace_outputs(run, stage, manifest,
                                      removable=lambda f: f.startswith("figures/") or f in REPORT_FILES)
        for rel in left:
            warnings.warn(f"{rel} of {run} left alone: the report no longer writes it, but it is not as headstats "
                          "wrote it (edited, or named by a manifest that is not the run's); it is no longer listed as "
                          "headstats'", stacklevel=2)
        manifest[SCHEMAS_KEY] = {**(manifest.get(SCHEMAS_KEY) or {}), **new_tables}
        manifest.setdefault("report_rebuilds", []).append({
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "headstats": package_versions()["headstats"],
            "top_k": protocol.report.top_k, "html": protocol.report.html, "files": n_new,
            "removed": stale,
        })
        (stage / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(stage / "manifest.json", run / "manifest.json")
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        lock.unlink(missing_ok=True)
    out = run / ("report.html" if protocol.report.html else "report.md")
    log(f"rebuilt {out}")
    return out
