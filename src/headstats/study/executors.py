"""Executors: where a study's passes run. ``local`` (the default) is :func:`headstats.study.passes.run_passes` in
this process; ``ray`` (:func:`run_on_ray`, the optional extra ``headstats[ray]``) runs ``execution.workers``
shards (:mod:`headstats.study.merge`) as Ray tasks, each worker loading each model once, and merges their
chunk states in chunk order, so the tables are byte-identical to a local run.

Without an ``address`` the local cluster's workers run at the caller's priority (:func:`ray_init_kwargs`).

Protocol::

    execution:
      executor: ray
      address: auto            # join this machine's cluster; "ray://head:10001" for a remote one; none: start one
      workers: 8               # shards, one Ray task each
      cpus_per_worker: 4       # Ray resources of each task (torch uses as many threads)
      gpus_per_worker: 1

Every worker needs headstats (and the models' files, or the Hugging Face cache) installed where it runs; the
records are read and parsed once, here, and sent to the workers. The state cache (``cache_dir``) is used by
every worker: on a cluster, point it to a shared file system so that a re-run finds every chunk, whichever
worker computed it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from headstats.config.protocol import Protocol
from headstats.study.passes import StudyPasses, attention_of
from headstats.study.results import LoadedData, Log


def _shard_task(protocol: Protocol, sources: dict, finetuned: dict, data: dict, shard: tuple[int, int],
                cache: str | None, threads: int):
    """One worker's shard (run by Ray in a worker process)."""
    import torch

    from headstats.study.merge import run_shard

    torch.set_num_threads(max(1, threads))
    started = time.time()
    result = run_shard(protocol, sources, finetuned, data, shard, cache=Path(cache) if cache else None)
    result.summary["wall_time_s"] = round(time.time() - started, 2)
    return result


#: Ray's own setting of its workers' niceness, read from the environment (Ray's default is 15).
NICENESS_VARIABLE = "RAY_worker_niceness"


def ray_init_kwargs(execution) -> dict:
    """The keyword arguments of ``ray.init`` for ``execution`` (an :class:`~headstats.config.protocol.ExecutionOptions`).

    With ``address``, the cluster is joined as it is (its workers' priority was set by ``ray start``). Without,
    a local cluster of ``workers x cpus_per_worker`` CPUs is started whose workers run at the caller's priority
    (``os.nice(0)``): Ray would start them at nice 15, so that on a shared machine two shard workers got under
    1 % of a CPU each. ``RAY_worker_niceness`` in the environment, when set, is Ray's and wins.
    """
    common = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if execution.address:
        return {"address": execution.address} | common
    kwargs = {"num_cpus": int(max(1, execution.workers * execution.cpus_per_worker))} | common
    if NICENESS_VARIABLE not in os.environ:
        kwargs["_system_config"] = {"worker_niceness": os.nice(0)}
    return kwargs


def run_on_ray(protocol: Protocol, sources: dict[str, str], finetuned: dict[str, dict], data: dict[str, LoadedData],
               *, cache: Path | None, log: Log = lambda message: None) -> StudyPasses:
    """Run the study's passes as ``execution.workers`` shards on a Ray cluster and merge them.

    Connects to ``execution.address`` (or to the cluster this process already joined); with neither, starts a
    local one with ``workers x cpus_per_worker`` CPUs and stops it at the end.
    """
    import ray

    from headstats.study.merge import passes_from_shards

    ex = protocol.execution
    started_here = False
    if not ray.is_initialized():
        ray.init(**ray_init_kwargs(ex))
        started_here = True
    try:
        task = ray.remote(num_cpus=ex.cpus_per_worker, num_gpus=ex.gpus_per_worker, max_retries=2)(_shard_task)
        data_ref = ray.put(data)
        n = ex.workers
        log(f"running {n} shards on Ray ({ex.cpus_per_worker:g} CPU, {ex.gpus_per_worker:g} GPU per worker)")
        pending = {task.remote(protocol, sources, finetuned, data_ref, (i, n), str(cache) if cache else None,
                               int(ex.cpus_per_worker)): i for i in range(1, n + 1)}
        results = {}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                i = pending.pop(ref)
                results[i] = ray.get(ref)
                s = results[i].summary
                log(f"shard {i}/{n} done in {s.get('wall_time_s', 0):.1f} s: {s.get('chunks_run', 0)} chunks run, "
                    f"{s.get('chunks_cached', 0)} found in the cache ({s.get('inputs_cached', 0):,} inputs)")
    finally:
        if started_here:
            ray.shutdown()
    parts = [results[i] for i in sorted(results)]
    execution = {"executor": "ray", "address": ex.address, "workers": n, "device": protocol.device,
                 "dtype": protocol.dtype, "cache_dir": str(cache) if cache is not None else None,
                 "chunk_size": ex.chunk_size,
                 "chunks_run": sum(p.summary.get("chunks_run", 0) for p in parts),
                 "chunks_cached": sum(p.summary.get("chunks_cached", 0) for p in parts),
                 "inputs_cached": sum(p.summary.get("inputs_cached", 0) for p in parts),
                 "forward_passes": sum(p.summary.get("forward_passes", 0) for p in parts),
                 "model_loads": sum(p.summary.get("model_loads", 0) for p in parts),
                 "attention": attention_of(p.summary for p in parts)}
    return passes_from_shards(protocol, parts, data, execution)
