"""Benchmark: headstats' engine (encoding, forward, all role scores) against the bare forward pass, and memory.

Run:  python benchmarks/bench_extraction.py [--n 1000] [--batch-size 32]

Prints, measured in this one run on the same inputs:
- the time of the bare forward pass with ``output_attentions=True`` (the same length-sorted batches,
  tokenised with the fast tokenizer's batch call) against headstats' engine: encoding (offsets, word
  alignment), one forward pass per batch and the role-score collector (all nine roles of single sentences):
  the ratio should be at most 1.10;
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

REPO = Path(__file__).resolve().parents[1]
EWT = REPO.parent / "shared" / "data" / "ud" / "en_ewt" / "en_ewt-ud-dev.conllu"
ROLES = ["local", "delimiter", "delimiter_cls", "delimiter_sep", "syntactic",
         "syntactic:nsubj", "syntactic:dobj", "syntactic:amod", "syntactic:advmod"]


def load_inputs(n: int):
    from headstats.inputs.readers import read_records

    if EWT.exists():
        records = read_records(EWT)
        source = str(EWT)
    else:
        from headstats.inputs.parsing import parse_records

        records = parse_records(read_records(REPO / "data" / "demo" / "sentences.txt"))
        source = "data/demo/sentences.txt (repeated)"
    while len(records) < n:
        records = records + records
    return records[:n], source


def timed_interleaved(first, second, repeats: int = 3) -> tuple[float, float]:
    """Best of ``repeats`` wall times of each function, run alternately so that load affects both alike."""
    best = [float("inf"), float("inf")]
    for _ in range(repeats):
        for k, fn in enumerate((first, second)):
            start = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - start)
    return best[0], best[1]


def compare_speed(n: int, batch_size: int) -> dict:
    import torch

    from headstats.analyses.role_scores import RoleScores
    from headstats.encoding import encode_records
    from headstats.engine.runner import Job, Runner
    from headstats.extraction import length_sorted_batches
    from headstats.models import load_model

    torch.set_num_threads(os.cpu_count() or 1)
    loaded = load_model("default")
    records, source = load_inputs(n)
    tokenizer, model = loaded.tokenizer, loaded.model
    pre = encode_records(records, tokenizer, max_length=128)

    def bare():
        # the same length-sorted batches, tokenised with the batch call, forward with attentions, nothing else
        for items in length_sorted_batches(pre.inputs, batch_size):
            texts = [records[item.index].text_a for item in items]
            enc = tokenizer(texts, padding=True, return_tensors="pt")
            with torch.inference_mode():
                model(**enc, output_attentions=True)

    def headstats_run():
        job = Job(RoleScores, (loaded.name,), "bench", {"roles": ROLES})
        Runner(batch_size=batch_size, max_length=128).run(lambda name: loaded, {"bench": records}, [job])
        assert job.collector.result().n_inputs == len(pre.inputs)

    bare()  # warm-up
    t_bare, t_hs = timed_interleaved(bare, headstats_run)
    return {"n_inputs": len(records), "source": source, "batch_size": batch_size, "bare_forward_s": round(t_bare, 3),
            "headstats_s": round(t_hs, 3), "ratio": round(t_hs / t_bare, 3)}


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_memory_child(n: int, batch_size: int) -> None:
    """Peak RSS of the scoring alone: the high-water mark is reset (Linux clear_refs) after loading."""
    from headstats.models import load_model
    from headstats.pipeline import score_records

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--memory-child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        peak_memory_child(args.memory_child, args.batch_size)
        return
    speed = compare_speed(args.n, args.batch_size)
    print(f"inputs: {speed['n_inputs']} from {speed['source']}, batch size {speed['batch_size']}")
    print(f"bare forward (output_attentions=True): {speed['bare_forward_s']:.3f} s")
    print(f"headstats encode + forward + {len(ROLES)} role scores: {speed['headstats_s']:.3f} s")
    print(f"ratio headstats / bare forward: {speed['ratio']:.3f}  (target <= 1.10)")
    peaks = {}
    for n in (200, 1000):
        out = subprocess.run([sys.executable, __file__, "--memory-child", str(n), "--batch-size", str(args.batch_size)],
                             capture_output=True, text=True, check=True)
        peaks[n] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"peak RSS scoring {n} inputs: {peaks[n]['peak_rss_mib']} MiB "
              f"(growth during scoring {peaks[n]['growth_during_scoring_mib']} MiB, {peaks[n]['rows']} score rows)")
    print(f"peak RSS ratio 1000 / 200 inputs: {peaks[1000]['peak_rss_mib'] / peaks[200]['peak_rss_mib']:.3f}  (target: flat, ~1.0)")


if __name__ == "__main__":
    main()
