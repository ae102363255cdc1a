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


def study_roles(protocol: Protocol, data: dict[str, LoadedData]) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Per data set: the roles scored on it, and those left out with the reason."""
    from headstats.study.scoring import applicable_roles

    return {name: applicable_roles(protocol.scoring.roles, has_pairs=d.has_pairs, has_parses=d.has_parses)
            for name, d in data.items()}


def study_jobs(protocol: Protocol, data: dict[str, LoadedData] | None = None, *,
               roles: dict[str, tuple[list[str], dict[str, str]]] | None = None) -> tuple[list, dict[str, dict[str, str]]]:
    """Every engine job of a study: role scores per (model, data set), the comparisons' collectors, and each
    analysis of ``protocol.analyses`` (per model and data set; per compared pair for a pair collector).

    ``roles`` (from :func:`study_roles`) stands for ``data`` when the records are not at hand (merging shards).
    Returns the jobs and, per data set, the roles left out of it with the reason.
    """
    from headstats.analyses import get_analysis
    from headstats.analyses.role_scores import RoleScores
    from headstats.study.comparison import comparison_jobs
    from headstats.engine.runner import Job

    settings = protocol.scoring
    roles = roles if roles is not None else study_roles(protocol, data or {})
    jobs: list = []
    kept = {name: list(k) for name, (k, _) in roles.items()}
    dropped = {name: dict(d) for name, (_, d) in roles.items()}
    names = list(roles)
    from headstats.study.scoring import measure_options

    measure = measure_options(settings)
    # the role scores once per measure (one pass gives every measure's view); every other job reads the primary
    jobs += [Job(RoleScores, (m.name,), name, {"roles": kept[name], "settings": settings,
                                                **measure_options(settings, which)}, name="role_scores")
             for which in settings.measures for m in protocol.models for name in names]
    from headstats.assignment.offset_gate import gate_jobs

    # the offset gate's controls of the syntactic roles (METHODS 6.2), in the same pass, once per measure
    jobs += gate_jobs(settings, protocol.statistics, [m.name for m in protocol.models], kept,
                      {which: measure_options(settings, which) for which in settings.measures}, seed=protocol.seed,
                      analyses=protocol.analyses, options_of=protocol.options_of)
    jobs += comparison_jobs(protocol, names, measure)
    pairs = [(c.base, f) for c in protocol.compare for f in c.finetuned]
    specs = {d.name: d for d in protocol.datasets}
    for analysis in protocol.analyses:
        collector = get_analysis(analysis).collector_class()
        # A job carries what its collector reads, and so its cache key names only that: the analysis' own
        # options, the seed, the data set's file for a collector that reads it again; never the protocol.
        mine = protocol.options_of(analysis)
        options = {} if mine is None else {"options": mine}

        def job(models: tuple[str, ...], dataset: str) -> Job:
            extra = {"source": data_source(specs[dataset])} if getattr(collector, "reads_source", False) else {}
            if getattr(collector, "reads_task", False):  # the data set's GLUE task (importance: a classifier's task)
                extra["glue_task"] = specs[dataset].glue.task if specs[dataset].glue is not None else None
            return Job(collector, models, dataset, {**options, **extra, **measure}, name=analysis, seed=protocol.seed)

        # an analysis' own ``datasets`` option (e.g. clustering's) runs it on those data sets only
        on = [d for d in names if getattr(mine, "datasets", None) is None or d in mine.datasets]
        planned = [job(pair, d) for pair in pairs for d in on] if getattr(collector, "pair", False) else \
            [job((m.name,), d) for m in protocol.models for d in on]
        jobs += [j for j in planned if j not in jobs]  # a job planned already (the gate's control) runs once
    return jobs, dropped


def data_source(spec: DatasetSpec) -> dict:
    """A data set's file as a collector that reads it again sees it (``options["source"]``): path, format,
    limit and the file's sha256 (so that an edited file gives new cache keys); empty paths for GLUE tasks."""
    from headstats.study.storage import file_hashes

    path = None if spec.path is None else str(spec.path)
    return {"path": path, "format": spec.format, "limit": spec.limit,
            "sha256": file_hashes([path]).get(path) if path else None}


def job_label(job) -> str:
    """A job's name in shard folders and logs: ``<analysis>[@<measure>]:<model>[+<model>]:<dataset>`` (unique in a
    study; the measure named when it is not the weights, as the role scores run once per measure)."""
    measure = job.options.get("measure")
    return f"{job.name}{'@' + str(measure) if measure else ''}:{'+'.join(job.models)}:{job.dataset}"

