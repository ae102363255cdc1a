"""Benchmark: headstats' engine (encoding, forward, all role scores) against the bare forward pass, and memory.

Run:  python benchmarks/bench_extraction.py [--n 1000] [--batch-size 32] [--smoke]

``--smoke``: 16 inputs in chunks of 8, once each, and memory at 8 and 16 inputs in this process (seconds; run
by ``tests/test_benchmarks.py``: it checks that the benchmark runs, not its figures).

Prints, measured in this one run on the same inputs:
- the time of the bare forward pass with ``output_attentions=True`` (the same length-sorted batches,
  tokenised with the fast tokenizer's batch call) against headstats' engine on the same eager maps (a pass that
  an analysis reading whole maps shares; ``Runner(map_free=False)``): encoding (offsets, word alignment), one
  forward pass per batch and the role-score collector (all nine roles of single sentences): the ratio should be
  at most 1.10 (``bench_map_free.py`` measures the role scores' own, map-free pass against bare SDPA);
- the same engine on norm-weighted attention (``measure: norm``, METHODS 6.1: the value-vector norms read by
  hooks in the same pass) against weights: the ratio should be at most 1.20;
- peak resident memory of a scoring run over 200 and over 1,000 inputs, each in a fresh process: it
  should be flat (scores only are kept, never attention maps).

Inputs: UD English EWT dev sentences (gold parses) from ../shared/data when present, else the demo corpus
repeated. Parsing is not timed (it is spaCy's cost, paid once per data set, and cached in gold data).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
EWT = REPO.parent / "shared" / "data" / "ud" / "en_ewt" / "en_ewt-ud-dev.conllu"
ROLES = ["local", "delimiter", "delimiter_cls", "delimiter_sep", "syntactic",
         "syntactic:nsubj", "syntactic:dobj", "syntactic:amod", "syntactic:advmod"]


def load_inputs(n: int, path: Path = EWT):
    """The first ``n`` records of ``path`` (UD EWT dev), else the demo sentences parsed and repeated."""
    from headstats.inputs.readers import read_records

    if path.exists():
        records = read_records(path, limit=n)
        source = str(path)
    else:
        from headstats.inputs.parsing import parse_records

        records = parse_records(read_records(REPO / "data" / "demo" / "sentences.txt"))
        source = "data/demo/sentences.txt (repeated)"
    while len(records) < n:
        records = records + records
    return list(records[:n]), source


def interleaved_best(contenders, n_chunks: int, repeats: int) -> dict[str, np.ndarray]:
    """Run every ``(name, fn)`` of ``contenders`` on each chunk ``fn(k)``, ``repeats`` rounds, each contender going
    first in turn; returns per name the best ``[wall, cpu]`` seconds of each chunk, shape (2, n_chunks)."""
    best = {name: np.full((2, n_chunks), np.inf) for name, _ in contenders}
    for round_ in range(repeats):
        for k in range(n_chunks):
            shift = (round_ + k) % len(contenders)  # each goes first in turn
            for name, fn in contenders[shift:] + contenders[:shift]:
                wall, cpu = time.perf_counter(), time.process_time()
                fn(k)
                best[name][:, k] = np.minimum(best[name][:, k], [time.perf_counter() - wall, time.process_time() - cpu])
    return best


def compare_speed(n: int, batch_size: int, *, chunk: int = 128, repeats: int = 3) -> dict:
    """Time the bare forward pass and headstats' engine on the same chunks of inputs, paired chunk by chunk.

    The machine may be shared: each chunk (``chunk`` inputs, a few seconds) is run by both, alternately and
    ``repeats`` times, and the best wall and CPU time of each is kept, so that load that comes and goes
    affects both alike. The totals are sums over chunks of these bests.
    """
    import torch

    from headstats.analyses.pande_roles.collect import RoleScores
    from headstats.model.encoding import encode_records
    from headstats.engine.runner import DEFAULT_MEMORY_BUDGET, Job, Runner, attention_cells
    from headstats.engine.forward import length_sorted_batches
    from headstats.model.loading import load_model

    torch.set_num_threads(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    loaded = load_model("default")
    records, source = load_inputs(n)
    tokenizer, model = loaded.tokenizer, loaded.model
    chunks = [records[start:start + chunk] for start in range(0, len(records), chunk)]
    encoded = [encode_records(part, tokenizer, max_length=128).inputs for part in chunks]

    # the runner's batches: length-sorted, each within the default memory budget (long inputs in smaller ones)
    max_cells = attention_cells(loaded.n_layers, loaded.n_heads, DEFAULT_MEMORY_BUDGET)

    def bare(k: int) -> None:
        # the same length-sorted batches, tokenised with the batch call, forward with attentions, nothing else
        for items in length_sorted_batches(encoded[k], batch_size, max_cells=max_cells):
            texts = [chunks[k][item.index].text_a for item in items]
            enc = tokenizer(texts, padding=True, return_tensors="pt")
            with torch.inference_mode():
                model(**enc, output_attentions=True)

    def engine(k: int, measure: str = "weights") -> None:
        options = {"roles": ROLES} if measure == "weights" else {"roles": ROLES, "measure": measure}
        job = Job(RoleScores, (loaded.name,), "bench", options)
        # with the maps, as the bare pass it is measured against (benchmarks/bench_map_free.py: the map-free path)
        Runner(batch_size=batch_size, max_length=128, map_free=False).run(lambda name: loaded, {"bench": chunks[k]},
                                                                          [job])
        assert job.collector.result().n_inputs == len(encoded[k])

    def norm(k: int) -> None:
        engine(k, "norm")

    bare(0)  # warm-up
    engine(0)
    norm(0)
    contenders = (("bare", bare), ("engine", engine), ("norm", norm))
    best = interleaved_best(contenders, len(chunks), repeats)
    t_bare, t_engine, t_norm = best["bare"].sum(1), best["engine"].sum(1), best["norm"].sum(1)
    return {"n_inputs": len(records), "source": source, "batch_size": batch_size, "chunk": chunk,
            "bare_forward_s": round(t_bare[0], 3), "headstats_s": round(t_engine[0], 3),
            "ratio": round(t_engine[0] / t_bare[0], 3), "bare_cpu_s": round(t_bare[1], 3),
            "headstats_cpu_s": round(t_engine[1], 3), "cpu_ratio": round(t_engine[1] / t_bare[1], 3),
            "norm_s": round(t_norm[0], 3), "norm_cpu_s": round(t_norm[1], 3),
            "norm_ratio": round(t_norm[0] / t_engine[0], 3), "norm_cpu_ratio": round(t_norm[1] / t_engine[1], 3)}


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_memory_child(n: int, batch_size: int) -> None:
    """Peak RSS of the scoring alone: the high-water mark is reset (Linux clear_refs) after loading."""
    from headstats.model.loading import load_model
    from headstats.study.scoring import score_records

    loaded = load_model("default")
    records, _ = load_inputs(n)
    resettable = Path("/proc/self/clear_refs").exists()
    if resettable:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    before = _status_kib("VmRSS") if resettable else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run = score_records(loaded, records, dataset="bench", roles=ROLES, batch_size=batch_size)
    after = _status_kib("VmHWM") if resettable else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"n": n, "rows": run.array.values.size, "peak_rss_mib": round(after / 1024, 1),
                      "growth_during_scoring_mib": round((after - before) / 1024, 1)}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--memory-sizes", type=int, nargs=2, default=(200, 1000))
    parser.add_argument("--smoke", action="store_true", help="16 inputs, memory at 8 and 16 (seconds)")
    parser.add_argument("--memory-child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        peak_memory_child(args.memory_child, args.batch_size)
        return
    chunk, repeats = (8, 1) if args.smoke else (128, 3)
    if args.smoke:
        args.n, args.memory_sizes = 16, (8, 16)
    speed = compare_speed(args.n, args.batch_size, chunk=chunk, repeats=repeats)
    print(f"inputs: {speed['n_inputs']} from {speed['source']}, batch size {speed['batch_size']}, "
          f"timed in chunks of {speed['chunk']} inputs (best of {repeats} per chunk, run alternately)")
    print(f"bare forward (output_attentions=True): {speed['bare_forward_s']:.3f} s wall, {speed['bare_cpu_s']:.3f} s CPU")
    print(f"headstats encode + forward + {len(ROLES)} role scores: {speed['headstats_s']:.3f} s wall, "
          f"{speed['headstats_cpu_s']:.3f} s CPU")
    print(f"ratio headstats / bare forward: {speed['ratio']:.3f} wall, {speed['cpu_ratio']:.3f} CPU  (target <= 1.10)")
    print(f"the same on norm-weighted attention (measure: norm): {speed['norm_s']:.3f} s wall, "
          f"{speed['norm_cpu_s']:.3f} s CPU; ratio norm / weights: {speed['norm_ratio']:.3f} wall, "
          f"{speed['norm_cpu_ratio']:.3f} CPU  (target <= 1.20)")
    peaks = {}
    small, large = args.memory_sizes
    for n in (small, large):
        if args.smoke:
            import contextlib
            import io

            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                peak_memory_child(n, args.batch_size)
            peaks[n] = json.loads(printed.getvalue().strip().splitlines()[-1])
        else:
            out = subprocess.run([sys.executable, __file__, "--memory-child", str(n), "--batch-size",
                                  str(args.batch_size)], capture_output=True, text=True, check=True)
            peaks[n] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"peak RSS scoring {n} inputs: {peaks[n]['peak_rss_mib']} MiB "
              f"(growth during scoring {peaks[n]['growth_during_scoring_mib']} MiB, {peaks[n]['rows']} score rows)")
    print(f"peak RSS ratio {large} / {small} inputs: {peaks[large]['peak_rss_mib'] / peaks[small]['peak_rss_mib']:.3f}"
          "  (target: flat, ~1.0)")


if __name__ == "__main__":
    main()
