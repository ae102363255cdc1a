"""Run a whole protocol: read and parse the data, build and load the models, run the passes, and finish the
study (statistics, comparisons, tables, manifest, and the report it is given) in its output folder.

This is the layer just below the CLI; it takes plain callbacks for logging and progress so that it can be
driven from Python too::

    from headstats.config.protocol import load_protocol
    from headstats.report.builder import build_report
    from headstats.study.run import run_study

    run_study(load_protocol("protocols/quickstart.yaml"), "runs/quickstart", overwrite=True, report=build_report)

The report is the layer above: :func:`run_study` writes the tables and the manifest, and the ``report`` it is
given (``headstats run`` and ``hs.run`` give :func:`headstats.report.builder.build_report`) writes the report
into the same folder before it is published.

Its steps live in their own modules: :mod:`~headstats.study.data`, :mod:`~headstats.study.models`,
:mod:`~headstats.study.plan`, :mod:`~headstats.study.passes`, :mod:`~headstats.study.finish`, and the results
they hand each other in :mod:`~headstats.study.results`.
"""

from __future__ import annotations

import time
from pathlib import Path

from headstats.config.protocol import Protocol
from headstats.engine.runner import ProgressFactory, no_progress
from headstats.folders import OutputClaim, claim_output
from headstats.study.data import dataset_manifest, read_data
from headstats.study.finish import finish_study
from headstats.study.models import build_models
from headstats.study.passes import run_passes
from headstats.study.plan import Execution, cache_root
from headstats.study.results import Log, ReportWriter, StudyResult


def run_study(
    protocol: Protocol,
    out: str | Path | None = None,
    *,
    overwrite: bool = False,
    log: Log = lambda message: None,
    progress: ProgressFactory = no_progress,
    execution: Execution = Execution(),
    report: ReportWriter | None = None,
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
    execution : Execution
        Cache and shard (see :class:`Execution`). With a shard, the output is a shard folder
        (:mod:`headstats.study.merge`) and the result holds no statistics.
    report : ReportWriter, optional
        Writes the report into the output folder before it is published: the report layer's
        :func:`headstats.report.builder.build_report`, which ``headstats run`` and ``hs.run`` pass. Without it the
        folder holds the tables and the manifest (``headstats report OUT`` builds the report from them).
    """
    from headstats.study.preflight import preflight

    started = time.time()
    out = preflight(protocol, out=out or protocol.output or f"runs/{protocol.name}", overwrite=overwrite,
                    cache_dir=cache_root(protocol, execution))
    # preflight checked that the output holds none of the run's inputs; the claim locks it and stages
    with claim_output(out, overwrite=overwrite) as claim:
        result = _run_claimed(protocol, claim, started=started, log=log, progress=progress, execution=execution,
                              report=report)
    log(f"done in {result.manifest['wall_time_s']:.1f} s: {out}")
    return result


def _run_claimed(protocol: Protocol, claim: OutputClaim, *, started: float, log: Log,
                 progress: ProgressFactory, execution: Execution = Execution(),
                 report: ReportWriter | None = None) -> StudyResult:
    """The work of :func:`run_study` once its output folder is checked, locked and staged."""
    from headstats.study.comparison import check_comparable

    sources, finetuned = build_models(protocol, log, progress, cache_dir=execution.cache_dir)
    cache = cache_root(protocol, execution)
    check_comparable(protocol, sources, cache=cache)
    data = read_data(protocol, finetuned, log, cache=cache)
    datasets = dataset_manifest(data)
    if execution.shard is not None:
        from headstats.study.merge import run_shard, write_shard

        shard = run_shard(protocol, sources, finetuned, data, execution.shard, cache=cache,
                          log=log, progress=progress)
        return write_shard(claim, protocol, shard, datasets, started=started, log=log, data=data)
    if protocol.execution.executor == "ray":
        from headstats.study.executors import run_on_ray

        passes = run_on_ray(protocol, sources, finetuned, data, cache=cache, log=log)
    else:
        passes = run_passes(protocol, sources, finetuned, data, log=log, progress=progress,
                            cache=cache)
    return finish_study(protocol, claim, passes, datasets, started=started, log=log, report=report)


def run_scores(
    protocol: Protocol,
    out: str | Path,
    *,
    model: str,
    overwrite: bool = False,
    log: Log = lambda message: None,
    progress: ProgressFactory = no_progress,
    execution: Execution = Execution(),
) -> StudyResult:
    """Score a protocol of one model and one data set and write ``scores.parquet`` and ``manifest.json``
    (``headstats score``): the checks and passes of :func:`run_study` (the same reading, parsing, engine and state
    cache), the study's writer for the scores, and no statistics.

    Parameters
    ----------
    protocol : Protocol
        One model and one data set; its other options are what the passes read.
    out : path
        The output folder (checked and written as :func:`run_study` writes one).
    model : str
        The model as the user named it (``default``, a folder, a hub id): the ``model`` of the table and manifest.

    Returns
    -------
    StudyResult
        The scores (one :class:`~headstats.measures.MeasureArray`) and the manifest; no tests or roles.
    """
    from dataclasses import replace

    import pandas as pd

    from headstats.study.preflight import preflight
    from headstats.study.scoring import write_scores
    from headstats.study.storage import write_manifest

    started = time.time()
    cache = cache_root(protocol, execution)
    out = preflight(protocol, out=out, overwrite=overwrite, cache_dir=cache)
    name, data_name = protocol.models[0].name, protocol.datasets[0].name
    with claim_output(out, overwrite=overwrite) as claim:
        sources, finetuned = build_models(protocol, log)
        loaded = read_data(protocol, finetuned, log, cache=cache)
        passes = run_passes(protocol, sources, finetuned, loaded, log=log, progress=progress, cache=cache)
        arrays = [replace(a, model=model) for a in passes.arrays]  # the model as given; a row per measure
        counts = passes.counts[f"{name}/{data_name}"] | {"model": model}  # no input scored: refused there
        write_scores(arrays, claim.staging / "scores.parquet")
        manifest = {"models": {model: passes.provenance[name]}, "scoring": protocol.scoring.model_dump(),
                    "seed": protocol.seed, "device": protocol.device, "datasets": dataset_manifest(loaded),
                    "inputs": {f"{model}/{data_name}": counts}, "execution": passes.execution,
                    "wall_time_s": round(time.time() - started, 2)}
        write_manifest(claim.staging, manifest)
        claim.publish()
    return StudyResult(claim.out, arrays, pd.DataFrame(), pd.DataFrame(), {}, manifest)
