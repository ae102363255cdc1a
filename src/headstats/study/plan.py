"""A study's plan: how its passes execute (:class:`Execution`: cache, shard) and every engine job it runs, each
carrying what its collector reads and nothing else."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from headstats.config.protocol import DatasetSpec, Protocol
from headstats.study.results import LoadedData


@dataclass(frozen=True)
class Execution:
    """How a run's passes are executed (what the CLI options set; none of it changes a number).

    Attributes
    ----------
    cache : bool
        Look chunk states up in, and store them to, the state cache (``--no-cache`` / ``execution.cache``).
    cache_dir : str, optional
        ``--cache-dir``; else the protocol's ``cache_dir``, ``$HEADSTATS_CACHE_DIR``, ``~/.cache/headstats``.
    shard : (i, n), optional
        ``--shard i/n``: run shard ``i`` of ``n`` and write a shard folder (joined by ``headstats merge``).
    """

    cache: bool = True
    cache_dir: str | None = None
    shard: tuple[int, int] | None = None


def cache_root(protocol: Protocol, execution: Execution) -> Path | None:
    """The state cache folder of a run, or None when caching is off."""
    from headstats.engine.cache import resolve_cache_root

    if not execution.cache or not protocol.execution.cache:
        return None
    return resolve_cache_root(execution.cache_dir, protocol.cache_dir)


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` -> (i, n) with 1 <= i <= n."""
    from headstats.errors import ProtocolError

    try:
        i, n = (int(part) for part in str(text).split("/"))
    except ValueError:
        raise ProtocolError(f"--shard {text!r} is not of the form i/n (e.g. 1/4)") from None
    if not 1 <= i <= n:
        raise ProtocolError(f"--shard {text!r}: i must be between 1 and n (e.g. 1/{max(n, 1)})")
    return i, n


def study_facts(data: dict[str, LoadedData]) -> dict[str, dict[str, bool]]:
    """Per data set what an analysis' planner may read of it (``PlanContext.extra["datasets"]``):
    ``has_pairs`` (some record is a sentence pair) and ``has_parses`` (some record is parsed)."""
    return {name: {"has_pairs": bool(d.has_pairs), "has_parses": bool(d.has_parses)} for name, d in data.items()}


@dataclass
class StudyPlan:
    """Every engine job of a study, and the jobs each analysis planned.

    Attributes
    ----------
    jobs : list of Job
        Every job once, in plan order (what the runner runs).
    planned : dict
        Enabled analysis -> the jobs it planned: a job two analyses plan (the offset gate's control and ``analyses: [offset_control]``) is the same object in both.
    """

    jobs: list
    planned: dict[str, list]


def study_jobs(protocol: Protocol, data: dict[str, LoadedData] | None = None, *,
               facts: dict[str, dict[str, bool]] | None = None) -> StudyPlan:
    """Every engine job of a study: those of each analysis the protocol enables
    (:meth:`~headstats.config.protocol.Protocol.enabled_analyses`: first those a protocol section turns on, then
    each of ``analyses``), a job planned twice run once.

    An analysis with a planner of its own (:attr:`~headstats.analyses.AnalysisSpec.plan`) plans its jobs from its
    options and a :class:`~headstats.analyses.PlanContext` whose ``extra`` holds ``datasets`` (:func:`study_facts`),
    ``statistics`` (the study's statistics options), ``analyses`` (the options of each analysis of
    ``analyses:``) and ``replicate_of`` (model -> its replicate group, or None); any other runs once per model and
    data set (per compared pair for a pair collector).
    ``facts`` (from :func:`study_facts`) stands for ``data`` when the records are not at hand (merging shards).
    """
    from headstats.analyses import PlanContext, get_analysis
    from headstats.measures import measure_options

    facts = facts if facts is not None else study_facts(data or {})
    names = list(facts)
    measure = measure_options(protocol.scoring)
    context = PlanContext(tuple(m.name for m in protocol.models), tuple(names), measure, protocol.seed,
                          extra={"datasets": facts, "statistics": protocol.statistics,
                                 "analyses": {a: protocol.options_of(a) for a in protocol.analyses},
                                 "replicate_of": {m.name: m.replicate_of for m in protocol.models}})
    enabled = protocol.enabled_analyses()
    own = [a for a in enabled if get_analysis(a).protocol_field is not None]
    plan = StudyPlan([], {})

    def add(planned: list) -> list:
        out = []
        for job in planned:  # a job planned already (the gate's control) runs once
            if job in plan.jobs:
                job = plan.jobs[plan.jobs.index(job)]
            else:
                plan.jobs.append(job)
            out.append(job)
        return out

    for analysis in own:
        plan.planned[analysis] = add(analysis_jobs(protocol, analysis, context))
    for analysis in enabled:
        if analysis not in own:
            plan.planned[analysis] = add(analysis_jobs(protocol, analysis, context))
    return plan


def analysis_jobs(protocol: Protocol, analysis: str, context) -> list:
    """The jobs of one analysis: its own planner's (``plan(options, context)``), else one per model and data set
    of ``context`` (per compared pair for a pair collector; only the data sets of its ``datasets`` option when it
    has one)."""
    from headstats.analyses import get_analysis
    from headstats.engine.runner import Job

    spec = get_analysis(analysis)
    mine = protocol.options_of(analysis)
    plan = spec.plan_function()
    if plan is not None:
        return list(plan(mine, context))
    collector = spec.collector_class()
    # A job carries what its collector reads, and so its cache key names only that: the analysis' own
    # options, the seed, the data set's file for a collector that reads it again; never the protocol.
    options = {} if mine is None else {"options": mine}
    specs = {d.name: d for d in protocol.datasets}

    def job(models: tuple[str, ...], dataset: str) -> Job:
        extra = {"source": data_source(specs[dataset])} if getattr(collector, "reads_source", False) else {}
        if getattr(collector, "reads_task", False):  # the data set's GLUE task (importance: a classifier's task)
            extra["glue_task"] = specs[dataset].glue.task if specs[dataset].glue is not None else None
        return Job(collector, models, dataset, {**options, **extra, **context.measure}, name=analysis,
                   seed=protocol.seed)

    # an analysis' own ``datasets`` option (e.g. clustering's) runs it on those data sets only
    on = [d for d in context.datasets if getattr(mine, "datasets", None) is None or d in mine.datasets]
    if getattr(collector, "pair", False):
        pairs = [(c.base, f) for c in protocol.compare for f in c.finetuned]
        return [job(pair, d) for pair in pairs for d in on]
    return [job((m,), d) for m in context.models for d in on]


def data_source(spec: DatasetSpec) -> dict:
    """A data set's file as a collector that reads it again sees it (``options["source"]``): path, format,
    limit and the file's sha256 (so that an edited file gives new cache keys); empty paths for GLUE tasks."""
    from headstats.study.storage import file_hashes

    path = None if spec.path is None else str(spec.path)
    return {"path": path, "format": spec.format, "limit": spec.limit,
            "sha256": file_hashes([path]).get(path) if path else None}


def job_label(job) -> str:
    """A job's name in shard folders and logs: ``<analysis>[@<measure>]:<model>[+<model>]:<dataset>`` (unique in a
    study; the measure named when it is not the weights, as an analysis may run once per measure)."""
    measure = job.options.get("measure")
    return f"{job.name}{'@' + str(measure) if measure else ''}:{'+'.join(job.models)}:{job.dataset}"

