"""A study's passes: the engine's runner with the protocol's options, one pass over every model and data set
feeding every collector, and what it collected (:class:`StudyPasses`), also from merged shards."""

from __future__ import annotations

import time

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from headstats.config.protocol import Protocol
from headstats.engine.runner import ProgressFactory, no_progress
from headstats.inputs.filters import nothing_to_score
from headstats.measures import MeasureArray
from headstats.study.models import model_functions
from headstats.study.plan import StudyPlan, study_jobs
from headstats.study.results import LoadedData, Log


@dataclass
class StudyPasses:
    """What the engine's one pass over every model and data set collected.

    Attributes
    ----------
    arrays : list of MeasureArray
        The study's per-input scores (``scores.parquet``): the results of the jobs of the analysis that the
        protocol's ``scoring`` section turns on (:func:`~headstats.study.scoring.scores_analysis`), in its plan's
        order (per measure of ``scoring.measures``, the primary first, then models in protocol order, then data
        sets).
    counts : dict
        ``"<model>/<dataset>"`` -> inputs read, scored, skipped (with reasons), and what each collector of that
        model and data set adds (a collector's ``input_counts()``, e.g. the roles not applicable and participation).
    provenance : dict
        Model name -> provenance (with the fine-tuning recipe where headstats fine-tuned it).
    tables : dict
        Analysis name -> table name -> frame concatenated over its jobs (every job named by a registered analysis),
        with its declared hypotheses' tests and its finish step's tables.
    execution : dict
        How the passes ran (recorded in the manifest; never part of a table).
    planned : dict
        Enabled analysis -> the jobs its plan gave (a job two analyses planned is the same object in both), their
        collectors holding the merged states: what an analysis' finish reads beside its tables (the role
        assignment's offset gate reads its controls' per-input values).
    """

    arrays: list[MeasureArray]
    counts: dict
    provenance: dict
    tables: dict[str, dict[str, pd.DataFrame]]
    #: How the passes ran: executor, cache folder, chunks run and found in the cache, forward passes, loads.
    execution: dict = field(default_factory=dict)
    planned: dict[str, list] = field(default_factory=dict)


def make_runner(protocol: Protocol, *, cache: Path | None, log: Log, progress: ProgressFactory,
                shard: tuple[int, int] | None = None, keep_chunks: bool = False):
    """The engine's :class:`~headstats.engine.runner.Runner` with the protocol's scoring and execution options."""
    from headstats.engine.cache import StateCache
    from headstats.engine.runner import Runner

    sc, ex = protocol.scoring, protocol.execution
    return Runner(batch_size=sc.batch_size, max_length=sc.max_length, too_long=sc.too_long, progress=progress,
                  log=log, chunk_size=ex.chunk_size, cache=StateCache(cache) if cache is not None else None,
                  shard=shard, keep_chunks=keep_chunks, memory_budget=ex.memory_budget_mb << 20)


def run_passes(
    protocol: Protocol,
    sources: dict[str, str],
    finetuned: dict[str, dict],
    data: dict[str, LoadedData],
    *,
    log: Log = lambda message: None,
    progress: ProgressFactory = no_progress,
    cache: Path | None = None,
) -> StudyPasses:
    """Load every model once and pass every input through every model once, feeding every collector.

    See :mod:`headstats.engine.runner` for the pass order (models joined by a comparison are resident
    together; the others one at a time). With a ``cache`` folder, chunks whose states are there run no
    forward pass, and a model none of whose chunks is missing is never loaded.
    """
    load, describe, provenance = model_functions(protocol, sources, finetuned, log, cache=cache)
    plan = study_jobs(protocol, data)
    runner = make_runner(protocol, cache=cache, log=log, progress=progress)
    passed = runner.run(load, {name: d.records for name, d in data.items()}, plan.jobs, digests=record_digests(data),
                        models=[m.name for m in protocol.models], describe=describe)
    execution = {"executor": "local", "device": protocol.device, "dtype": protocol.dtype,
                 "cache_dir": str(cache) if cache is not None else None, "chunk_size": protocol.execution.chunk_size,
                 **runner_summary(runner)}
    return assemble_passes(protocol, plan, passed, data, provenance, execution, log=log)


def record_digests(data: dict[str, LoadedData]) -> dict[str, list[bytes]]:
    """Data set -> its records' digests, for the data sets that have them (see :attr:`LoadedData.digests`)."""
    return {name: d.digests for name, d in data.items() if d.digests is not None}


def _log_slow(log: Log, what: str, clock: float, *, over: float = 1.0) -> None:
    """Say that ``what`` took its time, when it took more than ``over`` seconds."""
    took = time.perf_counter() - clock
    if took > over:
        log(f"{what}: {took:.1f} s")


def runner_summary(runner) -> dict:
    """Chunks run and found in the cache, inputs found there, forward passes, model loads of a runner, and the
    attention path that made each model's states (``attention``: model -> ``fused-sdpa/<n>`` or ``eager``,
    :func:`headstats.engine.runner.attention_path`)."""
    counts = list(getattr(runner, "pass_counts", {}).values())
    return {"chunks_run": sum(c.chunks_run for c in counts), "chunks_cached": sum(c.chunks_cached for c in counts),
            "inputs_cached": sum(c.n_cached for c in counts), "forward_passes": runner.forward_passes,
            "model_loads": runner.loads, "attention": dict(sorted(getattr(runner, "attention", {}).items()))}


def attention_of(summaries) -> dict:
    """Model -> attention path, over the summaries of several runners (shards): :func:`runner_summary`'s
    ``attention`` merged (one path per model, as every shard runs the same protocol)."""
    merged: dict[str, str] = {}
    for summary in summaries:
        merged.update(summary.get("attention", {}))
    return dict(sorted(merged.items()))


def assemble_passes(protocol: Protocol, plan: StudyPlan, passed: dict, data: dict[str, LoadedData],
                    provenance: dict, execution: dict, *, log: Log = lambda message: None) -> StudyPasses:
    """:class:`StudyPasses` from a plan whose jobs' collectors hold their (merged) states; ``log`` says how long
    each analysis' tables and finish step took (probe training and permutations take minutes on large runs)."""
    from headstats.analyses import ANALYSES
    from headstats.study.analysis_tests import finish_analyses
    from headstats.study.scoring import scores_analysis

    jobs, planned = plan.jobs, plan.planned
    counts = {}
    for model in (m.name for m in protocol.models):
        for name in data:
            if (model, name) not in passed:
                continue
            count = data[name].counted(passed[(model, name)])
            if count["n_scored"] == 0:
                raise nothing_to_score(name, dict(count["skipped"]))
            count |= {"model": model, "dataset": name}
            for job in jobs:  # what each collector of this model and data set adds, the first job's first
                if job.models == (model,) and job.dataset == name and callable(getattr(job.collector, "input_counts",
                                                                                       None)):
                    count |= {k: v for k, v in job.collector.input_counts().items() if k not in count}
            counts[f"{model}/{name}"] = count
    scoring = scores_analysis()
    arrays = [job.collector.result() for job in planned.get(scoring, []) if job.name == scoring]
    # a job's tables are an analysis' when the job is named by one (a control only the role assignment reads is not)
    jobs = [job for job in jobs if job.name in ANALYSES]
    tables: dict[str, dict[str, list[pd.DataFrame]]] = {}
    for job in jobs:
        clock = time.perf_counter()
        for table, frame in job.collector.tables().items():
            tables.setdefault(job.name, {}).setdefault(table, []).append(frame)
        _log_slow(log, f"{job.name} tables of {', '.join(job.models)} on {job.dataset}", clock)
    joined = {name: {t: pd.concat(frames, ignore_index=True) for t, frames in per.items()}
              for name, per in tables.items()}
    joined = finish_analyses(jobs, joined, protocol, log=log)
    order = {m.name: provenance[m.name] for m in protocol.models if m.name in provenance}
    return StudyPasses(arrays, counts, order, joined, execution, planned)
