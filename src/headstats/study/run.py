"""Run a whole protocol: read and parse the data, build and load the models, score, test, assign roles,
compare, and write the output folder (tables, figures, report, manifest).

This is the layer just below the CLI; it takes plain callbacks for logging and progress so that it can be
driven from Python too::

    from headstats.config.protocol import load_protocol
    from headstats.study.run import run_study

    run_study(load_protocol("protocols/quickstart.yaml"), "runs/quickstart", overwrite=True)
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ContextManager

import pandas as pd

from headstats.errors import DataError, HeadstatsError
from headstats.inputs.records import Record
from headstats.measures import MeasureArray
from headstats.config.protocol import DatasetSpec, Protocol, dump_protocol
from headstats.folders import OutputClaim, claim_output
from headstats.study.storage import file_hashes, write_manifest, write_table

Log = Callable[[str], None]
ProgressFactory = Callable[[str, int], ContextManager[Callable[[int], None]]]


@contextmanager
def _no_progress(description: str, total: int):
    yield lambda n: None


@dataclass
class LoadedData:
    """A data set's records and where they came from."""

    spec: DatasetSpec
    records: list[Record]
    files: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    #: ``(sentence_id, reason)`` of records left out before parsing (empty, or too long to ever fit).
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def counted(self, counts: dict) -> dict:
        """``counts`` of a scoring of :attr:`records` with the records left out before parsing added in."""
        from collections import Counter

        from headstats.inputs.filters import skipped_counts

        merged = Counter(counts.get("skipped", {})) + Counter(skipped_counts(self.skipped))
        return counts | {"n_records": counts.get("n_records", 0) + len(self.skipped), "skipped": dict(merged)}


@dataclass
class StudyResult:
    """Everything a study computed (also written to the output folder).

    ``scores`` holds one :class:`~headstats.measures.MeasureArray` per (model, data set);
    :meth:`scores_frame` makes the long table of ``scores.parquet``.
    """

    out: Path
    scores: list[MeasureArray]
    tests: pd.DataFrame
    roles: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    manifest: dict

    def scores_frame(self) -> pd.DataFrame:
        """The long scores table ``model, dataset, sentence_id, layer, head, role, score``."""
        from headstats.study.scoring import long_frame

        return long_frame(self.scores)


def needs_parses(protocol: Protocol) -> bool:
    from headstats.analyses.roles import get_role

    return any(get_role(r).kind == "arc" for r in protocol.scoring.roles)


def load_data(spec: DatasetSpec, protocol: Protocol, *, exclude_ids: set[str] | None = None) -> LoadedData:
    """Read one data set (file or GLUE task), leave out what can never be scored, and parse the rest if the
    protocol's roles need parses.

    Records with no visible text, or with more words than ``scoring.max_length`` pieces can hold (every word
    is at least one piece), are left out before parsing and counted (:attr:`LoadedData.skipped`); with
    ``too_long: truncate`` a long record is parsed on the prefix that can be scored.
    """
    from headstats.inputs.filters import split_unusable
    from headstats.inputs.parsing import parse_records
    from headstats.inputs.readers import read_records

    info: dict = {"name": spec.name}
    if spec.path is not None:
        records = read_records(spec.path, format=spec.format, limit=spec.limit)
        files = [spec.path]
        info.update(source="file", path=spec.path, format=spec.format or Path(spec.path).suffix.lstrip("."))
    else:
        from headstats.inputs.glue import glue_file, load_glue

        glue = spec.glue
        root = glue.root or protocol.data_root
        excluded = set(exclude_ids or ())
        records = load_glue(glue.task, split=glue.split, root=root, n=glue.n or spec.limit, sample=glue.sample,
                            seed=protocol.seed, exclude_ids=excluded)
        files = []
        if root is not None:
            try:
                files = [str(glue_file(glue.task, glue.split, root))]
            except HeadstatsError:
                files = []
        info.update(source="glue", task=glue.task, split=glue.split, n=glue.n, sample=glue.sample,
                    excluded_finetune_rows=len(excluded))
    info["n_read"] = len(records)
    info["pairs"] = sum(r.is_pair for r in records)
    records, skipped = split_unusable(records, max_length=protocol.scoring.max_length,
                                      too_long=protocol.scoring.too_long)
    if not records:
        from headstats.inputs.filters import skipped_counts

        raise DataError(
            f"no input of data set {spec.name!r} could be scored ({skipped_counts(skipped)}); "
            "raise scoring.max_length or set scoring.too_long: truncate"
        )
    parse = spec.parse
    if parse == "spacy" or (parse == "auto" and needs_parses(protocol)):
        if parse == "spacy":
            records = [Record(r.sentence_id, r.text_a, r.text_b, r.label, meta=r.meta) for r in records]
        gold = sum(r.is_parsed for r in records)
        records = parse_records(records, parser=protocol.scoring.parser)
        info["parses"] = "gold" if gold == len(records) else ("spacy" if gold == 0 else "gold+spacy")
        info["parser"] = None if gold == len(records) else protocol.scoring.parser
    elif parse == "gold":
        info["parses"] = "gold"
    else:
        info["parses"] = "none"
    return LoadedData(spec=spec, records=records, files=files, info=info, skipped=skipped)


def build_models(protocol: Protocol, log: Log) -> tuple[dict[str, str], dict[str, dict]]:
    """Resolve every model spec to something ``load_model`` takes, fine-tuning (cached) where asked."""
    sources, finetuned = {}, {}
    for spec in protocol.models:
        if spec.finetune is None:
            sources[spec.name] = spec.source
            continue
        from headstats.model.finetune import cached_finetune

        cache = Path(protocol.cache_dir or ".headstats_cache")
        log(f"fine-tuning (or reusing) {spec.name}: {spec.finetune.base} on {spec.finetune.task}")
        path = cached_finetune(spec.finetune, cache_dir=cache, data_root=protocol.data_root)
        sources[spec.name] = str(path)
        metrics_file = Path(path) / "metrics.json"
        metrics = json.loads(metrics_file.read_text()) if metrics_file.exists() else None
        finetuned[spec.name] = {"path": str(path), "recipe": spec.finetune.model_dump(), "metrics": metrics}
    return sources, finetuned


def training_exclusions(spec: DatasetSpec, finetuned: dict[str, dict]) -> set[str]:
    """Ids of a GLUE data set's rows that any fine-tuned model of the study was trained on."""
    if spec.glue is None or not spec.glue.exclude_finetune_rows or not finetuned:
        return set()
    from headstats.model.finetune import analysis_exclusions

    out: set[str] = set()
    for info in finetuned.values():
        out |= analysis_exclusions(info["path"], spec.glue.task, spec.glue.split)
    return out


def run_study(
    protocol: Protocol,
    out: str | Path | None = None,
    *,
    overwrite: bool = False,
    log: Log = lambda message: None,
    progress: ProgressFactory = _no_progress,
) -> StudyResult:
    """Run a protocol end to end and write its output folder.

    Parameters
    ----------
    protocol : Protocol
        A validated protocol (:func:`headstats.config.protocol.load_protocol`).
    out : path, optional
        The output folder (default: the protocol's ``output``, else ``runs/<name>``).
    overwrite : bool
        Replace an existing output folder (otherwise refused before any work starts).
    log, progress
        Callbacks for messages and for progress bars (``progress(description, total)`` is a context
        manager yielding ``advance(n)``).
    """
    from headstats.study.preflight import preflight

    started = time.time()
    out = preflight(protocol, out=out or protocol.output or f"runs/{protocol.name}", overwrite=overwrite)
    # preflight checked that the output holds none of the run's inputs; the claim locks it and stages
    with claim_output(out, overwrite=overwrite) as claim:
        result = _run_claimed(protocol, claim, started=started, log=log, progress=progress)
    log(f"done in {result.manifest['wall_time_s']:.1f} s: {out}")
    return result


def _run_claimed(protocol: Protocol, claim: OutputClaim, *, started: float, log: Log,
                 progress: ProgressFactory) -> StudyResult:
    """The work of :func:`run_study` once its output folder is checked, locked and staged."""
    from headstats.assignment.tables import analyse
    from headstats.study.comparison import check_comparable, run_comparisons
    from headstats.study.scoring import write_scores
    from headstats.report.builder import build_report

    sources, finetuned = build_models(protocol, log)
    check_comparable(protocol, sources)
    data = {}
    for spec in protocol.datasets:
        log(f"reading data set {spec.name}")
        data[spec.name] = load_data(spec, protocol, exclude_ids=training_exclusions(spec, finetuned))
    passes = run_passes(protocol, sources, finetuned, data, log=log, progress=progress)
    log("testing every head and role")
    analysis = analyse(passes.arrays, protocol)
    comparison = run_comparisons(protocol, passes.arrays, analysis.roles, passes.comparison_attention(),
                                 provenance=passes.provenance)
    extra = {name: tables for name, tables in passes.tables.items() if name in protocol.analyses}
    manifest = {
        "headstats_run": protocol.name,
        "protocol_sha256": protocol.fingerprint(),
        "seed": protocol.seed,
        "models": passes.provenance,
        "datasets": {n: d.info | {"files_sha256": file_hashes(d.files)} for n, d in data.items()},
        "inputs": passes.counts,
        "wall_time_s": None,
    }
    stage = claim.staging
    log(f"writing {claim.out}")
    write_scores(passes.arrays, stage / "scores.parquet")
    write_table(analysis.tests, stage, "tests")
    write_table(analysis.roles, stage, "roles", parquet=False)
    for name, table in analysis.tables.items():
        write_table(table, stage, name, parquet=False)
    for name, table in comparison.items():
        write_table(table, stage, f"compare_{name}", parquet=name == "paired_tests")
    for tables in extra.values():
        for name, table in tables.items():
            write_table(table, stage, name, parquet=False)
    (stage / "protocol.resolved.yaml").write_text(dump_protocol(protocol))
    build_report(stage, protocol, analysis, manifest, comparison=comparison, analyses=extra)
    manifest["wall_time_s"] = round(time.time() - started, 2)
    write_manifest(stage, manifest)
    claim.publish()
    tables = {**analysis.tables, **{f"compare_{k}": v for k, v in comparison.items()}}
    for analysis_tables in extra.values():
        tables.update(analysis_tables)
    return StudyResult(claim.out, passes.arrays, analysis.tests, analysis.roles, tables, manifest)


@dataclass
class StudyPasses:
    """What the engine's one pass over every model and data set collected.

    Attributes
    ----------
    arrays : list of MeasureArray
        Role scores per (model, data set), models in protocol order, then data sets.
    counts : dict
        ``"<model>/<dataset>"`` -> inputs read, scored, skipped (with reasons), roles not applicable,
        participation.
    provenance : dict
        Model name -> provenance (with the fine-tuning recipe where headstats fine-tuned it).
    tables : dict
        Analysis name -> table name -> frame concatenated over its jobs (``special_mass``, ``similarity``,
        and each analysis of ``protocol.analyses``).
    """

    arrays: list[MeasureArray]
    counts: dict
    provenance: dict
    tables: dict[str, dict[str, pd.DataFrame]]

    def comparison_attention(self) -> dict[str, pd.DataFrame]:
        """The ``similarity`` and ``special_mass`` tables the comparison step takes."""
        return {**self.tables.get("similarity", {}), **self.tables.get("special_mass", {})}


def study_jobs(protocol: Protocol, data: dict[str, LoadedData]) -> tuple[list, dict[str, dict[str, str]]]:
    """Every engine job of a study: role scores per (model, data set), the comparisons' collectors, and each
    analysis of ``protocol.analyses`` (per model and data set; per compared pair for a pair collector).

    Returns the jobs and, per data set, the roles left out of it with the reason.
    """
    from headstats.analyses import get_analysis
    from headstats.analyses.role_scores import RoleScores
    from headstats.study.comparison import comparison_jobs
    from headstats.engine.runner import Job
    from headstats.study.scoring import applicable_roles
    from headstats.analyses.sieves import ScoreSettings

    settings = ScoreSettings.from_options(protocol.scoring)
    jobs, dropped = [], {}
    kept = {}
    for name, dataset in data.items():
        kept[name], dropped[name] = applicable_roles(protocol.scoring.roles, dataset.records)
    jobs += [Job(RoleScores, (m.name,), name, {"roles": kept[name], "settings": settings}, name="role_scores")
             for m in protocol.models for name in data]
    jobs += comparison_jobs(protocol, list(data))
    pairs = [(c.base, f) for c in protocol.compare for f in c.finetuned]
    for analysis in protocol.analyses:
        spec = get_analysis(analysis)
        if getattr(spec.collector, "pair", False):
            jobs += [Job(spec.collector, pair, d, {"protocol": protocol}, name=analysis) for pair in pairs for d in data]
        else:
            jobs += [Job(spec.collector, (m.name,), d, {"protocol": protocol}, name=analysis)
                     for m in protocol.models for d in data]
    return jobs, dropped


def run_passes(
    protocol: Protocol,
    sources: dict[str, str],
    finetuned: dict[str, dict],
    data: dict[str, LoadedData],
    *,
    log: Log = lambda message: None,
    progress: ProgressFactory = _no_progress,
) -> StudyPasses:
    """Load every model once and pass every input through every model once, feeding every collector.

    See :mod:`headstats.engine.runner` for the pass order (models joined by a comparison are resident
    together; the others one at a time).
    """
    from headstats.engine.runner import Runner
    from headstats.model.loading import load_model

    specs = {m.name: m for m in protocol.models}
    provenance: dict[str, dict] = {}

    def load(name: str):
        log(f"loading model {name} ({sources[name]})")
        loaded = load_model(sources[name], revision=specs[name].revision, device=protocol.device)
        loaded.name = name
        loaded.provenance["model"] = name
        provenance[name] = loaded.provenance | ({"finetune": finetuned[name]} if name in finetuned else {})
        return loaded

    jobs, dropped = study_jobs(protocol, data)
    sc = protocol.scoring
    runner = Runner(batch_size=sc.batch_size, max_length=sc.max_length, too_long=sc.too_long, progress=progress,
                    log=log)
    passed = runner.run(load, {name: d.records for name, d in data.items()}, jobs, models=list(specs))
    arrays, counts = [], {}
    for job in jobs:
        if job.name != "role_scores":
            continue
        model, name = job.models[0], job.dataset
        count = data[name].counted(passed[(model, name)])
        if count["n_scored"] == 0:
            raise DataError(
                f"no input of data set {name!r} could be scored ({count['skipped']}); "
                "raise scoring.max_length or set scoring.too_long: truncate"
            )
        counts[f"{model}/{name}"] = count | {"model": model, "dataset": name,
                                             "roles_not_applicable": dropped[name],
                                             "participation": job.collector.participation()}
        arrays.append(job.collector.result())
    tables: dict[str, dict[str, list[pd.DataFrame]]] = {}
    for job in jobs:
        if job.name != "role_scores":
            for table, frame in job.collector.tables().items():
                tables.setdefault(job.name, {}).setdefault(table, []).append(frame)
    joined = {name: {t: pd.concat(frames, ignore_index=True) for t, frames in per.items()}
              for name, per in tables.items()}
    order = {name: provenance[name] for name in specs if name in provenance}
    return StudyPasses(arrays, counts, order, joined)
