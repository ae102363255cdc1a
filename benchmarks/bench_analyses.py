"""Benchmark: each registered analysis' cost per input against the forward pass on the same batches.

Run:  python benchmarks/bench_analyses.py [--n 200] [--analyses surface clustering ...] [--batch-size 32] [--smoke]

The default is every single-model analysis but ``importance``, whose cost is its own passes (the 72 ablations
and the gradient pass; its ``state()`` reruns them): ``benchmarks/bench_importance.py`` measures it, or
``--analyses importance`` alone. ``--smoke`` runs the default analyses on the demo corpus' first 4 pairs and 4
gold sentences (``data/demo``; seconds: ``tests/test_benchmarks.py`` runs it).

The inputs are the first ``--n`` WikiText-2 paragraph pairs (``[CLS] A [SEP] B [SEP]`` truncated to 128
pieces, as the paper) and the first ``--n`` UD English EWT dev sentences, read as ``protocols/clark2019.yaml``
reads them and run through the default model in the runner's batches (length-sorted, within the default memory
budget). Per batch, the forward pass is run once and timed; then

- every analysis' collector gets its own fresh view of the batch (so that it pays for the derived views it
  asks for, which a real run shares) and its ``update`` is timed alone: its **cost relative to the forward
  pass** is (sum of its update times) / (sum of the forward times), per data set (target <= 0.25);
- all collectors then update from one shared view, as a run does, and that total over the forward pass is
  **all together** (target <= 1: a run with every analysis <= 2x the forward pass).

Each collector's ``tables()`` is timed once at the end (not per input: MDS, probes' inputs) and its state's
pickled size is printed after half the batches and after all of them (states that keep no attention grow
by a few bytes per input at most: memory flat in the number of inputs).
``clustering`` runs on every input of both data sets here (``max_inputs`` and ``datasets`` lifted), so its cost
is per input it actually sees; alone, it also pays for the surface measures of its inputs (the MDS colours),
which a run shares with ``surface``.

Timings on a shared machine vary with the load: the forward pass and the collectors are timed on the same
batches, interleaved, so that load that comes and goes affects both; ``uptime``'s load is printed with them.
Each ratio is given in wall time (``x forward``) and in the process's CPU time (``x fwd cpu``: every thread's,
numpy's worker threads included), which a loaded machine disturbs less; the targets are read on the latter.
The process's peak resident memory after half the batches and after all of them is printed on each data set's
``forward pass`` row (flat in the number of inputs: the batches come longest first, so a collector whose state
grew with the inputs would raise it in the second half).
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The shared data folder beside the checkout (``--data`` or $HEADSTATS_SHARED_DATA elsewhere).
DATA = Path(os.environ.get("HEADSTATS_SHARED_DATA", REPO.parent / "shared" / "data"))
WIKI = Path("wiki") / "wikitext-2-raw" / "wiki.test.raw"
EWT = Path("ud") / "en_ewt" / "en_ewt-ud-dev.conllu"
#: The smoke size's inputs (in the repository: the smoke run needs no shared data).
SMOKE = {WIKI: REPO / "data" / "demo" / "pairs.txt", EWT: REPO / "data" / "demo" / "mini.conllu"}
#: Analyses measured by their own benchmark, not in the default list.
OWN_BENCHMARK = ("importance",)


def protocol_for(n: int, analyses: list[str], data: Path | None = DATA):
    """``protocols/clark2019.yaml`` on the first ``n`` WikiText pairs and EWT dev sentences, with ``analyses``
    (``data=None``: the demo corpus' pairs and gold sentences, the smoke size)."""
    from headstats.config.protocol import load_protocol

    protocol = load_protocol(REPO / "protocols" / "clark2019.yaml")
    raw = protocol.model_dump(mode="json")
    wiki, ewt = (SMOKE[WIKI], SMOKE[EWT]) if data is None else (data / WIKI, data / EWT)
    raw["datasets"] = [{"name": "wiki_pairs", "path": str(wiki), "limit": n, "parse": "none"},
                       {"name": "ewt_dev", "path": str(ewt), "limit": n}]
    raw["analyses"] = analyses
    raw["analysis_options"] = {k: v for k, v in (raw.get("analysis_options") or {}).items() if k in analyses}
    if "clustering" in analyses:  # every input of both data sets (clark2019 clusters 1,000 WikiText pairs only)
        raw["analysis_options"].setdefault("clustering", {}).update(max_inputs=None, datasets=None)
    from headstats.config.protocol import validate_protocol

    return validate_protocol(raw)


def run(n: int, analyses: list[str], batch_size: int, data: Path | None = DATA) -> list[dict]:
    import numpy as np
    import torch

    from headstats.engine.batch import BatchView, forward_view
    from headstats.engine.forward import length_sorted_batches
    from headstats.engine.runner import DEFAULT_MEMORY_BUDGET, attention_cells, build_collector
    from headstats.model.encoding import encode_records
    from headstats.model.loading import load_model
    from headstats.study.data import load_data
    from headstats.study.plan import study_jobs

    torch.set_num_threads(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    protocol = protocol_for(n, analyses, data)
    loaded = load_model("default")
    max_cells = attention_cells(loaded.n_layers, loaded.n_heads, DEFAULT_MEMORY_BUDGET)
    rows = []
    for spec in protocol.datasets:
        data = load_data(spec, protocol)
        jobs = study_jobs(protocol, {spec.name: data}).jobs
        jobs = [j for j in jobs if j.name in analyses]
        for job in jobs:
            job.collector = build_collector(job, {loaded.name: loaded})
        shared = [build_collector(job, {loaded.name: loaded}) for job in jobs]
        encoded = encode_records(list(data.records), loaded.tokenizer, max_length=protocol.scoring.max_length,
                                 too_long=protocol.scoring.too_long).inputs
        forward = cpu_forward = 0.0
        alone = {job.name: 0.0 for job in jobs}
        cpu_alone = {job.name: 0.0 for job in jobs}
        together = cpu_together = 0.0
        half: dict[str, int] = {}
        peak_half = 0.0
        batches = list(length_sorted_batches(encoded, batch_size, max_cells=max_cells))
        with torch.inference_mode():
            forward_view(loaded, batches[0], dataset=spec.name)  # warm-up
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for number, items in enumerate(batches):
                if number == len(batches) // 2:
                    half = {job.name: len(pickle.dumps(job.collector.state())) for job in jobs}
                    peak_half = peak_rss_mib()
                with torch.inference_mode():
                    start, cpu = time.perf_counter(), time.process_time()
                    view = forward_view(loaded, items, dataset=spec.name)
                    forward += time.perf_counter() - start
                    cpu_forward += time.process_time() - cpu
                    for job in jobs:
                        fresh = BatchView(view.model, view.dataset, view.inputs, view.attention, view.input_ids)
                        start, cpu = time.perf_counter(), time.process_time()
                        job.collector.update(fresh)
                        alone[job.name] += time.perf_counter() - start
                        cpu_alone[job.name] += time.process_time() - cpu
                        del fresh
                    start, cpu = time.perf_counter(), time.process_time()
                    for collector in shared:
                        collector.update(view)
                    together += time.perf_counter() - start
                    cpu_together += time.process_time() - cpu
                    del view
            for job in jobs:
                start = time.perf_counter()
                job.collector.tables()
                tables_s = time.perf_counter() - start
                state = len(pickle.dumps(job.collector.state()))
                rows.append({"dataset": spec.name, "analysis": job.name, "n": len(encoded),
                             "ratio": alone[job.name] / forward, "cpu_ratio": cpu_alone[job.name] / cpu_forward,
                             "ms_per_input": 1000 * alone[job.name] / len(encoded),
                             "tables_s": tables_s, "state_kib": (half.get(job.name, 0) / 1024, state / 1024)})
        rows.append({"dataset": spec.name, "analysis": "ALL (one shared view)", "n": len(encoded),
                     "ratio": together / forward, "cpu_ratio": cpu_together / cpu_forward,
                     "ms_per_input": 1000 * together / len(encoded),
                     "tables_s": np.nan, "state_kib": None})
        rows.append({"dataset": spec.name, "analysis": "forward pass", "n": len(encoded), "ratio": 1.0,
                     "cpu_ratio": 1.0, "ms_per_input": 1000 * forward / len(encoded), "tables_s": np.nan,
                     "state_kib": None, "peak_mib": (peak_half, peak_rss_mib())})
    return rows


def peak_rss_mib() -> float:
    """The process's peak resident memory so far (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def default_analyses() -> list[str]:
    """Every single-model analysis but those with a benchmark of their own (:data:`OWN_BENCHMARK`) and those that
    need a task model (gradients: the runner loads it and runs its grad-enabled batches)."""
    from headstats.analyses import get_analysis, list_analyses

    def alone(name: str) -> bool:  # one model, in the pass (a task model's passes are the runner's, measured apart)
        collector = get_analysis(name).collector_class()
        return not getattr(collector, "pair", False) and not getattr(collector, "needs_task_model", False)

    return [a for a in list_analyses() if a not in OWN_BENCHMARK and alone(a)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="inputs per data set (default 200)")
    parser.add_argument("--analyses", nargs="*", default=None,
                        help=f"default: every single-model analysis but {', '.join(OWN_BENCHMARK)}")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--data", type=Path, default=DATA, help=f"the shared data folder (default {DATA})")
    parser.add_argument("--smoke", action="store_true", help="4 demo pairs and 4 demo sentences (seconds)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.n, args.data = 4, None
    analyses = args.analyses or default_analyses()
    load = os.getloadavg()
    rows = run(args.n, analyses, args.batch_size, args.data)
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; after: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"{'data set':<11} {'analysis':<22} {'n':>5} {'x forward':>9} {'x fwd cpu':>9} {'ms/input':>9} "
          f"{'tables s':>9} {'state KiB half -> all':>22}")
    for r in rows:
        target = ""
        if r["analysis"] == "ALL (one shared view)":
            target = "  (target <= 1)"
        elif r["analysis"] != "forward pass":
            target = "" if r["cpu_ratio"] <= 0.25 else "  over 0.25"
        tables = "" if r["tables_s"] != r["tables_s"] else f"{r['tables_s']:9.2f}"
        state = "" if r["state_kib"] is None else f"{r['state_kib'][0]:10.0f} -> {r['state_kib'][1]:8.0f}"
        if "peak_mib" in r:
            state = f"peak RSS MiB {r['peak_mib'][0]:6.0f} -> {r['peak_mib'][1]:6.0f}"
        print(f"{r['dataset']:<11} {r['analysis']:<22} {r['n']:>5} {r['ratio']:9.3f} {r['cpu_ratio']:9.3f} "
              f"{r['ms_per_input']:9.2f} {tables:>9} {state:>22}{target}")


if __name__ == "__main__":
    main()
