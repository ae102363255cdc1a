"""The end of a study: the statistics, comparisons and claims of its passes, and its output folder (tables, the
report a :data:`~headstats.study.results.ReportWriter` writes, manifest) written and published."""

from __future__ import annotations

import time

import pandas as pd

from headstats.config.protocol import Protocol, dump_protocol
from headstats.folders import OutputClaim
from headstats.study.passes import StudyPasses
from headstats.study.results import Log, ReportWriter, StudyResult
from headstats.study.storage import write_manifest
from headstats.tables import RunTables
from headstats.tables.study_tables import CONTROLS, Analysis


def finish_study(protocol: Protocol, claim: OutputClaim, passes: StudyPasses, datasets: dict, *,
                 started: float, log: Log, report: ReportWriter | None = None) -> StudyResult:
    """Statistics, comparisons, tables and manifest of a study's passes, written to ``claim``, with the report
    that ``report`` writes (:data:`~headstats.study.results.ReportWriter`) before the manifest lists the files."""
    from headstats.analyses import get_analysis
    from headstats.study.scoring import scores_analysis
    from headstats.study.memo import write_scores_memoised

    # the scores' analysis (the one the scoring section turns on) tests its planned jobs' per-input results
    warnings: list[str] = []
    scoring = scores_analysis()
    tested = get_analysis(scoring).finished(
        {}, protocol.statistics, protocol.options_of(scoring), protocol.seed, log=log,
        jobs=passes.planned.get(scoring, []), report=protocol.report,
        warn=lambda warning: (warnings.append(warning), log(f"warning: {warning}")))
    analysis = Analysis(tests=tested.pop("tests"), roles=tested.pop("roles"), tables=tested)
    enabled = protocol.enabled_analyses()
    analyses = {name: tables for name, tables in passes.tables.items() if name in enabled}
    # an analysis that reads the study's tables finishes now that they exist (the primary measure's, as the pass'
    # collectors read)
    analyses = finish_reading_study(protocol, analyses, passes, analysis.on_measure(), log=log)
    analysis.tables["claims"] = run_claims(protocol, analysis, study_tables(analysis, analyses))
    tables = study_tables(analysis, analyses)
    manifest = {
        "headstats_run": protocol.name,
        "protocol_sha256": protocol.fingerprint(),
        "seed": protocol.seed,
        "models": passes.provenance,
        "provenance": run_provenance(passes.provenance, datasets),
        "datasets": datasets,
        "inputs": passes.counts,
        "tau": protocol.statistics.tau,
        "warnings": warnings,
        #: which tables each analysis wrote (read back for an analysis not registered where the folder is read)
        "analysis_tables": tables.recorded_owners(),
        "execution": passes.execution,
        "wall_time_s": None,
    }
    stage = claim.staging
    log(f"writing {claim.out}")
    write_scores_memoised(passes.arrays, stage / "scores.parquet", cache=passes.execution.get("cache_dir"))
    tables.write(stage)
    (stage / "protocol.resolved.yaml").write_text(dump_protocol(protocol))
    if report is not None:
        log("drawing the figures and writing the report")
        report(stage, protocol, tables, manifest, log=log)
    manifest["wall_time_s"] = round(time.time() - started, 2)
    write_manifest(stage, manifest)
    claim.publish()
    return StudyResult(claim.out, passes.arrays, analysis.tests, analysis.roles, tables.without("tests", "roles"),
                       manifest)


def finish_reading_study(protocol: Protocol, analyses: dict[str, dict[str, pd.DataFrame]], passes: StudyPasses,
                         primary, *, log: Log = lambda message: None) -> dict[str, dict[str, pd.DataFrame]]:
    """``analyses`` with the finish step of each analysis whose spec ``reads`` the study's tables run on its tables
    and those (:func:`study_inputs`), in the order of ``analyses``; what it read is not kept as its own."""
    from headstats.analyses import get_analysis

    out = dict(analyses)
    known: dict[str, pd.DataFrame] = {}
    for name, own in analyses.items():
        spec = get_analysis(name)
        if not spec.reads:
            continue
        log(f"finishing {name}: its tests and tables")
        clock = time.perf_counter()
        inputs = study_inputs(spec.reads, protocol, passes, primary, known)
        finished = spec.finished({**own, **inputs}, protocol.statistics, protocol.options_of(name), protocol.seed,
                                 log=log)
        out[name] = {key: frame for key, frame in finished.items() if key not in inputs}
        log(f"finished {name} in {time.perf_counter() - clock:.1f} s")
    return out


def study_inputs(reads, protocol: Protocol, passes: StudyPasses, primary,
                 known: dict[str, pd.DataFrame] | None = None) -> dict[str, pd.DataFrame]:
    """The study's tables ``reads`` (declared specs of :mod:`headstats.tables.study_tables`), by name, each made
    once (``known`` keeps them between analyses): the long scores of the primary measure, the models table, the
    primary measure's tests, roles and role tables."""
    from headstats.measures import on_measure
    from headstats.study.scoring import long_frame
    from headstats.tables.study_tables import MODELS, ROLES, SCORES, TESTS, models_table

    known = {} if known is None else known
    for spec in reads:
        if spec.name in known:
            continue
        if spec.name == SCORES.name:
            known[spec.name] = long_frame(on_measure(passes.arrays, protocol.scoring.measure))
        elif spec.name == MODELS.name:
            known[spec.name] = models_table(protocol.models, passes.provenance)
        else:
            known[spec.name] = {ROLES.name: primary.roles, TESTS.name: primary.tests, **primary.tables}[spec.name]
    return {spec.name: known[spec.name] for spec in reads}


def study_tables(analysis, analyses: dict[str, dict[str, pd.DataFrame]]) -> RunTables:
    """The run's tables: the tests, roles and role tables of every measure, each analysis'."""
    tables = RunTables({"tests": analysis.tests, "roles": analysis.roles, **analysis.tables})
    for name, frames in analyses.items():
        tables.add(name, frames)
    return tables


def run_provenance(models: dict[str, dict], datasets: dict[str, dict]) -> dict[str, dict]:
    """The manifest's ``provenance``: per model, its :class:`~headstats.provenance.Provenance` (weights, tokenizer,
    the sha256 of each data set's files, package versions)."""
    import hashlib

    from headstats.provenance import Provenance
    from headstats.provenance import package_versions

    data = {}
    for name, info in datasets.items():
        files = info.get("files_sha256") or {}
        data[name] = (next(iter(files.values())) if len(files) == 1 else hashlib.sha256(
            "".join(f"{k}\t{v}\n" for k, v in sorted(files.items())).encode()).hexdigest() if files else None)
    versions = package_versions()
    return {name: Provenance.of_model({**prov, "model": name}, data=data, versions=versions).as_dict()
            for name, prov in models.items()}


def run_claims(protocol: Protocol, analysis, tables: RunTables) -> pd.DataFrame:
    """Every registered claim tested on the run's tables, corrected over the run's claims (``claims.csv``;
    :func:`headstats.stats.claim_catalog.evaluate_all_claims`)."""
    from headstats.stats.claim_catalog import evaluate_all_claims
    from headstats.stats.claims import ClaimSettings
    from headstats.stats.existence import claims_correction

    # every claim reads the primary measure's tables, but those across measures (measure_agreement)
    primary = analysis.on_measure()
    controls = pd.DataFrame([{"model": model, "control": control} for model, controls
                             in protocol.controls_of().items() for control in controls], columns=["model", "control"])
    tables = tables.replaced({"roles": primary.roles, "tests": primary.tests, **primary.tables,
                              CONTROLS.name: controls})
    st = protocol.statistics
    return evaluate_all_claims(tables, ClaimSettings(alpha=st.alpha, correction=claims_correction(st.correction),
                                                     confidence=st.confidence),
                               analyses=protocol.enabled_analyses())
