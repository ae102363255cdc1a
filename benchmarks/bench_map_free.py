"""Benchmark: role scores without attention maps against the bare SDPA forward pass, and peak memory.

Run:  python benchmarks/bench_map_free.py [--n 2000] [--chunk 250] [--repeats 2] [--batch-size 32] [--smoke]

``--smoke``: 16 inputs in chunks of 8, once each, and the memory at 64 pieces on a 2-layer model in this process
(seconds; run by ``tests/test_benchmarks.py``: it checks that the benchmark runs, not its figures).

Prints, measured in this one run on the same inputs, as CPU time of this process (all its threads) and wall time:

- the bare forward pass: the default model with ``attn_implementation="sdpa"`` (the fused kernel, no attention
  weights) on the runner's length-sorted batches, tokenised with the fast tokenizer's batch call;
- ``map-free``: headstats' engine with every default role (``Runner`` as ``headstats score`` runs it: encoding
  with offsets and word alignment, one map-free forward pass per batch, :mod:`headstats.engine.mapfree`, and the
  role scores): the ratio to the bare forward should be at most 1.15;
- ``eager``: the same engine on transformers' eager attention with the maps (``Runner(map_free=False)``);
- ``shared``: the role scores beside an analysis that reads whole maps (the attention entropy), one fused pass
  that makes the maps for it and gathers the role scores without them (the path every pass takes), against
  ``shared-eager``: the same two jobs on transformers' eager attention (how such a pass ran before the role
  scores' path became the job's own), and whether ``shared`` gave the role scores of ``map-free`` to the bit;
- the largest difference between the two paths' scores over the whole run (parity: at most 1e-5);
- peak resident memory while scoring inputs of 512 pieces (``--memory-inputs``, one batch each within the default
  memory budget) through a BERT-base-sized model (12 layers x 12 heads, hidden 768, random weights), map-free
  against eager, each in a fresh process, the high-water mark reset after loading and a warm-up input.

The machine may be shared: inputs are cut into chunks, and each chunk is run by every contender in turn (A B C,
the first rotating), ``repeats`` times; the best CPU and wall time per chunk and contender are summed. The load
average before and after is printed.

Inputs: UD English EWT train sentences (gold parses) from ../shared/data when present, else the demo corpus
repeated. Reading the treebank is not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
EWT = REPO.parent / "shared" / "data" / "ud" / "en_ewt" / "en_ewt-ud-train.conllu"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_extraction import _status_kib, interleaved_best, load_inputs as load_records  # noqa: E402


def compare_speed(n: int, batch_size: int, *, chunk: int, repeats: int) -> dict:
    """CPU and wall time of the bare SDPA forward, the map-free engine and the eager engine, chunk by chunk."""
    import torch

    from headstats.analyses.entropy.collect import AttentionEntropy
    from headstats.analyses.pande_roles.collect import RoleScores
    from headstats.analyses.sieves import DEFAULT_ROLES
    from headstats.engine.forward import length_sorted_batches
    from headstats.engine.runner import DEFAULT_MEMORY_BUDGET, Job, Runner, attention_cells
    from headstats.model.encoding import encode_records
    from headstats.model.loading import load_model

    loaded = load_model("default")
    records, source = load_records(n, EWT)
    tokenizer, model = loaded.tokenizer, loaded.model
    chunks = [records[start:start + chunk] for start in range(0, len(records), chunk)]
    encoded = [encode_records(part, tokenizer, max_length=128).inputs for part in chunks]
    max_cells = attention_cells(loaded.n_layers, loaded.n_heads, DEFAULT_MEMORY_BUDGET)
    scores: dict[str, list] = {"map-free": [None] * len(chunks), "eager": [None] * len(chunks)}

    def bare(k: int) -> None:
        before = model.config._attn_implementation
        model.config._attn_implementation = "sdpa"  # the fused kernel, no weights returned
        try:
            for items in length_sorted_batches(encoded[k], batch_size, max_cells=max_cells):
                texts = [chunks[k][item.index].text_a for item in items]
                enc = tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
                with torch.inference_mode():
                    model(**enc)
        finally:
            model.config._attn_implementation = before

    def engine(k: int, name: str) -> None:
        job = Job(RoleScores, (loaded.name,), "bench", {"roles": list(DEFAULT_ROLES)})
        Runner(batch_size=batch_size, max_length=128, map_free=name == "map-free").run(
            lambda _: loaded, {"bench": chunks[k]}, [job])
        scores[name][k] = job.collector.result().values
        assert scores[name][k].shape[0] == len(encoded[k])

    shared_scores: list = [None] * len(chunks)

    def shared(k: int, map_free: bool) -> None:
        jobs = [Job(RoleScores, (loaded.name,), "bench", {"roles": list(DEFAULT_ROLES)}),
                Job(AttentionEntropy, (loaded.name,), "bench")]
        Runner(batch_size=batch_size, max_length=128, map_free=map_free).run(
            lambda _: loaded, {"bench": chunks[k]}, jobs)
        if map_free:
            shared_scores[k] = jobs[0].collector.result().values

    contenders = (("bare", bare), ("map-free", lambda k: engine(k, "map-free")), ("eager", lambda k: engine(k, "eager")),
                  ("shared", lambda k: shared(k, True)), ("shared-eager", lambda k: shared(k, False)))
    for _, fn in contenders:
        fn(0)  # warm-up
    load_before = os.getloadavg()
    best = interleaved_best(contenders, len(chunks), repeats)
    total = {name: best[name].sum(1) for name in best}
    free, eager = np.concatenate(scores["map-free"]), np.concatenate(scores["eager"])
    both = np.isfinite(eager)
    return {"n_inputs": len(records), "source": source, "chunk": chunk, "repeats": repeats,
            "threads": torch.get_num_threads(), "load": (load_before, os.getloadavg()),
            "total": total, "same_nan": bool((np.isfinite(free) == both).all()),
            "shared_same_bytes": np.concatenate(shared_scores).tobytes() == free.tobytes(),
            "max_abs": float(np.abs(free[both] - eager[both]).max()),
            "max_rel": float((np.abs(free[both] - eager[both]) / np.maximum(np.abs(eager[both]), 1e-12)).max())}


def memory_child(path: str, pieces: int, n: int, map_free: bool) -> None:
    """Peak resident memory of scoring ``n`` inputs of ``pieces`` pieces (the high-water mark reset after loading)."""
    from headstats.analyses.pande_roles.collect import RoleScores
    from headstats.analyses.sieves import DEFAULT_ROLES
    from headstats.engine.runner import Job, Runner
    from headstats.inputs.records import Record
    from headstats.model.loading import load_model

    loaded = load_model(path)
    words = "the cat sat on the mat while a dog watched it from the old garden wall".split()
    text = " ".join(words[i % len(words)] for i in range(pieces))  # one piece per word: truncated to ``pieces``
    records = [Record(str(i), text) for i in range(n)]
    runner = Runner(batch_size=n, max_length=pieces, too_long="truncate", map_free=map_free)
    warm = Job(RoleScores, (loaded.name,), "bench", {"roles": list(DEFAULT_ROLES)})
    runner.run(lambda _: loaded, {"bench": [Record("w", "the cat sat")]}, [warm])  # weights paged in, pools made
    job = Job(RoleScores, (loaded.name,), "bench", {"roles": list(DEFAULT_ROLES)})
    clear = Path("/proc/self/clear_refs")
    if clear.exists():
        clear.write_text("5")  # reset VmHWM to the current RSS
    before = _status_kib("VmRSS")
    runner.run(lambda _: loaded, {"bench": records}, [job])
    peak = _status_kib("VmHWM")
    assert job.collector.state().values.shape[0] == n
    print(json.dumps({"pieces": pieces, "n": n,
                      "peak_mib": round(peak / 1024, 1), "growth_mib": round((peak - before) / 1024, 1)}))


def base_sized_model(folder: Path, *, layers: int, heads: int, hidden: int, positions: int) -> Path:
    """A BERT with random weights (the default model's tokenizer), saved to ``folder``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from headstats.model.sources import default_model_path

    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    tokenizer.save_pretrained(folder)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=4 * hidden, max_position_embeddings=positions)
    torch.manual_seed(0)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no shard-writing bar in the benchmark's printout
    BertModel(config).save_pretrained(folder)
    return folder


def compare_memory(folder: Path, pieces: int, n: int, *, in_process: bool, threads: int = 1) -> dict:
    peaks = {}
    for name in ("map-free", "eager"):
        if in_process:
            import contextlib
            import io

            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                memory_child(str(folder), pieces, n, name == "map-free")
            peaks[name] = json.loads(printed.getvalue().strip().splitlines()[-1])
        else:
            out = subprocess.run([sys.executable, __file__, "--memory-child", str(folder), str(pieces), str(n),
                                  name, "--threads", str(threads)], capture_output=True, text=True, check=True)
            peaks[name] = json.loads(out.stdout.strip().splitlines()[-1])
    return peaks


def report_speed(speed: dict, batch_size: int) -> None:
    (load0, load1) = speed["load"]
    print(f"inputs: {speed['n_inputs']} from {speed['source']}, batch size {batch_size}, {speed['threads']} "
          f"threads; chunks of {speed['chunk']} run in turn, best of {speed['repeats']} per chunk; load average "
          f"{load0[0]:.1f} before, {load1[0]:.1f} after")
    t = speed["total"]
    for name, what in (("bare", "bare SDPA forward (no attention weights)"),
                       ("map-free", "headstats role scores, map-free"), ("eager", "headstats role scores, eager maps")):
        print(f"{what}: {t[name][1]:.3f} s CPU, {t[name][0]:.3f} s wall")
    print(f"ratio map-free / bare SDPA: {t['map-free'][1] / t['bare'][1]:.3f} CPU, "
          f"{t['map-free'][0] / t['bare'][0]:.3f} wall  (target <= 1.15)")
    print(f"ratio eager / bare SDPA: {t['eager'][1] / t['bare'][1]:.3f} CPU, {t['eager'][0] / t['bare'][0]:.3f} wall")
    for name, what in (("shared", "role scores + entropy, one fused pass with maps"),
                       ("shared-eager", "role scores + entropy, transformers' eager maps")):
        print(f"{what}: {t[name][1]:.3f} s CPU, {t[name][0]:.3f} s wall")
    print(f"ratio shared / shared-eager: {t['shared'][1] / t['shared-eager'][1]:.3f} CPU, "
          f"{t['shared'][0] / t['shared-eager'][0]:.3f} wall; role scores beside the entropy equal the map-free "
          f"run's to the bit: {speed['shared_same_bytes']}")
    print(f"parity map-free vs eager over every score: max abs difference {speed['max_abs']:.2e}, max relative "
          f"{speed['max_rel']:.2e}, same NaN cells: {speed['same_nan']}  (target <= 1e-5)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=250)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: on a shared machine, idle threads spin and CPU time then "
                             "measures the contention)")
    parser.add_argument("--pieces", type=int, default=512)
    parser.add_argument("--memory-inputs", type=int, default=2)
    parser.add_argument("--no-memory", action="store_true", help="time only")
    parser.add_argument("--no-speed", action="store_true", help="memory only")
    parser.add_argument("--smoke", action="store_true", help="16 inputs; memory at 64 pieces on 2 layers (seconds)")
    parser.add_argument("--memory-child", nargs=4, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        import torch

        torch.set_num_threads(args.threads)
        path, pieces, n, name = args.memory_child
        memory_child(path, int(pieces), int(n), name == "map-free")
        return
    if args.smoke:
        args.n, args.chunk, args.repeats, args.pieces = 16, 8, 1, 64
    import torch

    torch.set_num_threads(args.threads)
    if not args.no_speed:
        report_speed(compare_speed(args.n, args.batch_size, chunk=args.chunk, repeats=args.repeats), args.batch_size)
    if args.no_memory:
        return
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        shape = dict(layers=2, heads=4, hidden=64) if args.smoke else dict(layers=12, heads=12, hidden=768)
        folder = base_sized_model(Path(tmp), positions=max(args.pieces, 64), **shape)
        peaks = compare_memory(folder, args.pieces, args.memory_inputs, in_process=args.smoke, threads=args.threads)
    free, eager = peaks["map-free"], peaks["eager"]
    print(f"peak memory, {args.memory_inputs} inputs x {args.pieces} pieces, {shape['layers']} layers x "
          f"{shape['heads']} heads, hidden {shape['hidden']}, random weights: map-free {free['peak_mib']} MiB "
          f"(+{free['growth_mib']} MiB while scoring), eager {eager['peak_mib']} MiB (+{eager['growth_mib']} MiB); "
          f"growth ratio eager / map-free: {eager['growth_mib'] / max(free['growth_mib'], 0.1):.1f}")


if __name__ == "__main__":
    main()
