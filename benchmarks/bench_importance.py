"""Benchmark: the ``importance`` analysis' ablations against H forward passes, and its gradient pass against one.

Run:  python benchmarks/bench_importance.py [--n 64] [--batch-size 32] [--repeats 2] [--smoke]

``--smoke``: 4 sentences, one repeat (seconds; run by ``tests/test_benchmarks.py``).

The inputs are the first ``--n`` sentences of ``data/demo/sentences.txt`` (labelled at random: labels change no
timing), run through the default model (all-MiniLM-L6-v2, 6 x 12 = 72 heads) saved with a freshly initialised
two-class classifier head, in the runner's batches. Per batch of B inputs and T pieces:

- **forward**: one plain forward pass of the classifier over the batch (``torch.no_grad``), best of
  ``--repeats``;
- **gradient**: the collector's ``update`` (one forward and one backward pass with a gate per input and head,
  Michel et al.'s |dL/dxi|, and the sums of every head's output for mean ablation), against one forward pass
  (target <= 3x);
- **ablation**: every one of the H = 72 single-head mean ablations of every input (the batch repeated with a
  batch of head masks per forward pass, ``max_tokens`` pieces per pass), against H forward passes of the same
  batch (target <= 1.2x); pruning is left out (``prune_shares: [0]`` adds one pass).

Timings on a shared machine vary with the load; the two sides are timed on the same batches, interleaved, and
``uptime``'s load is printed with them. Ratios are what matter.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="4 sentences, one repeat (seconds)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.n, args.repeats = 4, 1
    warnings.simplefilter("ignore")
    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    from headstats.analyses.importance.collect import ImportanceCollector, single_head_gates
    from headstats.engine.ablation import run_ablation
    from headstats.engine.batch import forward_view
    from headstats.engine.collector import Context
    from headstats.engine.runner import TaskModels
    from headstats.engine.forward import length_sorted_batches
    from headstats.inputs.readers import read_text
    from headstats.inputs.records import Record
    from headstats.model.encoding import encode_records
    from headstats.model.loading import load_model
    from headstats.model.sources import default_model_path

    hf_logging.set_verbosity_error()
    torch.manual_seed(0)
    scratch = tempfile.TemporaryDirectory(prefix="bench_importance_")
    folder = Path(scratch.name)
    base = default_model_path()
    AutoModelForSequenceClassification.from_pretrained(base, num_labels=2).save_pretrained(folder)
    for f in base.iterdir():
        if "token" in f.name or f.name in ("vocab.txt", "special_tokens_map.json"):
            (folder / f.name).write_bytes(f.read_bytes())
    loaded = load_model(str(folder))
    rng = np.random.default_rng(0)
    records = [Record(r.sentence_id, r.text_a, label=str(int(rng.integers(2))))
               for r in read_text(REPO / "data" / "demo" / "sentences.txt", limit=args.n)]
    inputs = encode_records(records, loaded.tokenizer, max_length=128).inputs
    batches = length_sorted_batches(inputs, args.batch_size)
    L, H = loaded.n_layers, loaded.n_heads
    tasks = TaskModels()  # what the runner hands a collector that needs its task model
    context = Context(("bench",), "demo", L, H, {"options": {"ablation": "mean", "prune_shares": [0.0]}},
                      {"bench": dict(loaded.provenance)},
                      task_models=lambda dtype: tasks.get(loaded.provenance, "bench", dtype))
    collector = ImportanceCollector(context)
    collector._load()  # the task model is loaded once, before the clock (it was counted in the gradient pass)
    task = None
    single = single_head_gates(L, H)
    forward = gradient = ablation = 0.0
    for items in batches:
        with torch.inference_mode():
            view = forward_view(loaded, items, dataset="demo")
        start = time.perf_counter()
        with torch.inference_mode(False), torch.enable_grad():  # as the runner calls it (needs_gradients)
            collector.update(view)
        gradient += time.perf_counter() - start
        task = collector._task
        prep = collector._pending[-1]["prep"]
        best = float("inf")
        for _ in range(args.repeats):
            start = time.perf_counter()
            with torch.no_grad():
                kwargs = {"input_ids": prep["ids"], "attention_mask": prep["mask"]}
                if prep["types"] is not None:
                    kwargs["token_type_ids"] = prep["types"]
                task.model(**kwargs)
            best = min(best, time.perf_counter() - start)
        forward += best
        # interleaved with the forward passes of the same batch (the replacement: the mean so far; same cost)
        entry = collector._pending[-1]
        with torch.no_grad():
            start = time.perf_counter()
            run_ablation(collector._ablation(entry, np.repeat(single[:, None], len(items), axis=1),
                                             collector._replacement()), H)
            ablation += time.perf_counter() - start
    load = os.getloadavg()
    print(f"{len(inputs)} inputs, {len(batches)} batches, {L} x {H} = {L * H} heads; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    print(f"forward pass (best of {args.repeats}): {forward:.3f} s; H = {L * H} forward passes: {L * H * forward:.2f} s")
    print(f"ablation of all {L * H} heads: {ablation:.2f} s = {ablation / (L * H * forward):.2f} x H forward passes "
          "(target <= 1.2)")
    print(f"gradient importance (forward + backward + sums): {gradient:.3f} s = {gradient / forward:.2f} x one "
          "forward pass (target <= 3)")
    scratch.cleanup()


if __name__ == "__main__":
    main()
