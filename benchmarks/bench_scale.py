"""Benchmark: large runs. The state cache, resume after ``kill -9``, a 24 x 16-head model at two sizes, and Ray.

Run:  nice python benchmarks/bench_scale.py [--ewt-n N] [--resume-n N] [--large-n 1000 10000]
                                             [--real-large-n 200] [--skip stats resume large ray] [--smoke]

``--smoke``: every part on a few inputs (20 EWT sentences and one re-run; 8 sentences in chunks of 4; 16 and
32 short inputs at hidden 64; Ray when installed), each step in this process but the run that is killed
(seconds per part; ``tests/test_benchmarks.py``): it checks that the benchmark runs, not the figures.

Prints (ratios; every timed step is a fresh process):

1. **Statistics-only re-run** of the EWT-train protocol (default model, every default role, default statistics,
   UD English EWT train with gold parses): wall time of the first run (empty cache) and of three re-runs whose
   only changes are statistical (``tau``, the correction), and the ratio of their median to the first run
   (target <= 0.05).
2. **Resume after kill -9**: the same protocol on the first ``--resume-n`` sentences in chunks of 256; one
   uninterrupted run (empty cache), then a run killed with SIGKILL when half of its chunks are in the cache,
   then the resumed run: resumed / uninterrupted wall time (target <= 0.6).
3. **24 x 16 heads** (bert-large's layout), random-initialised from a config, on short inputs (EWT sentences of
   at most 12 words, repeated with new ids to reach the size): the engine (encoding, forward, every role score
   that needs no parse) against the bare forward pass with attentions on the same batches, and the peak
   resident memory of the engine's process, on ``--large-n`` inputs (target: flat). The hidden size is 64
   (16 heads of width 4) so that 10,000 inputs run in minutes on 2 cores: the attention maps, the collectors'
   work and their states are those of bert-large; the matrix products are not. ``--real-large-n`` inputs also
   run through the real bert-large width (hidden 1024, 4096 intermediate) for the overhead ratio.
4. **Ray**: the quickstart-sized protocol with ``executor: ray`` and 2 local workers against the local executor:
   whether every table is byte-identical (skipped when Ray is not installed).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRAIN = REPO.parent / "shared" / "data" / "ud" / "en_ewt" / "en_ewt-ud-train.conllu"
ROLES_WITHOUT_PARSES = ["local", "delimiter", "delimiter_cls", "delimiter_sep", "block"]


def ewt_protocol(path: Path, *, limit: int | None, tau: float = 3.0, correction: str = "holm",
                 chunk_size: int = 1024) -> Path:
    import yaml

    dataset = {"name": "ewt_train", "path": str(TRAIN)}
    if limit:
        dataset["limit"] = limit
    raw = {"name": "bench-scale", "models": ["default"], "datasets": [dataset],
           "statistics": {"tau": tau, "correction": correction}, "execution": {"chunk_size": chunk_size}}
    if IN_PROCESS:  # the smoke size: no figures, no sensitivity tables
        raw["statistics"]["sensitivity"] = False
        raw["report"] = {"html": False, "figures": {"formats": ["png"], "dpi": 72}}
    path.write_text(yaml.safe_dump(raw))
    return path


#: Run every step in this process (the smoke size: what it checks is that the steps run, not their figures).
IN_PROCESS = False


def run_cli(args: list[str], env: dict | None = None) -> float:
    """Wall time of ``headstats ARGS`` in a fresh process (in this one with :data:`IN_PROCESS`)."""
    start = time.perf_counter()
    if IN_PROCESS:
        from headstats.cli.main import app

        app(args, standalone_mode=False)
        return time.perf_counter() - start
    out = subprocess.run([sys.executable, "-m", "headstats.cli.main", *args], capture_output=True, text=True,
                         env=env or os.environ.copy())
    if out.returncode != 0:
        raise RuntimeError(f"headstats {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return time.perf_counter() - start


def execution_of(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())["execution"]


def tables(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".parquet")}


# --------------------------------------------------------------------------------------------- 1 and 2

def statistics_only(work: Path, n: int | None, reruns: int = 3) -> None:
    cache = work / "cache-stats"
    protocol = ewt_protocol(work / "ewt.yaml", limit=n)
    first = run_cli(["run", str(protocol), "--out", str(work / "first"), "--cache-dir", str(cache), "--quiet"])
    # three re-runs, each with other statistics (tau, correction); the median is the figure
    times = []
    for k, (tau, correction) in enumerate([(2.0, "fdr_bh"), (2.5, "bonferroni"), (3.5, "fdr_by")][:reruns]):
        ewt_protocol(protocol, limit=n, tau=tau, correction=correction)
        out = work / ("again" if k == 0 else f"again{k}")
        times.append(run_cli(["run", str(protocol), "--out", str(out), "--cache-dir", str(cache), "--quiet"]))
    again = sorted(times)[len(times) // 2]
    ex1, ex2 = execution_of(work / "first"), execution_of(work / "again")
    print(f"1. statistics-only re-run, EWT train ({n or 'all'} sentences): first run {first:.1f} s "
          f"({ex1['forward_passes']} forward passes), re-run {again:.1f} s (median of "
          f"{', '.join(f'{t:.1f}' for t in times)}; {ex2['forward_passes']} forward passes, "
          f"{ex2['model_loads']} model loads, {ex2['inputs_cached']:,} inputs from the cache): "
          f"ratio {again / first:.3f} (target <= 0.05)", flush=True)
    same = tables(work / "first")["scores.parquet"] == tables(work / "again")["scores.parquet"]
    print(f"   scores.parquet byte-identical across the two runs: {same}", flush=True)


KILLABLE = r"""
import sys
from headstats.engine.cache import StateCache
original, written, limit = StateCache.put, [0], int(sys.argv[1])
def put(self, key, value):
    original(self, key, value)
    if not (isinstance(value, dict) and "state" in value):
        return  # a memo entry (data set, model description), not a chunk's state
    written[0] += 1
    if written[0] == limit:
        print("HALF", flush=True)
        import time
        time.sleep(3600)
StateCache.put = put
from headstats.cli.main import app
sys.argv = ["headstats", *sys.argv[2:]]
app()
"""


def resume(work: Path, n: int, chunk: int = 256) -> None:
    protocol = ewt_protocol(work / "resume.yaml", limit=n, chunk_size=chunk)
    whole = run_cli(["run", str(protocol), "--out", str(work / "whole"), "--cache-dir", str(work / "cache-a"),
                     "--quiet"])
    chunks = execution_of(work / "whole")["chunks_run"]
    script = work / "killable.py"
    script.write_text(KILLABLE)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(script), str(chunks // 2), "run", str(protocol), "--out",
                             str(work / "killed"), "--cache-dir", str(work / "cache-b"), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while proc.stdout.readline().strip() != "HALF":
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read()[-3000:])
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_after = time.perf_counter() - start
    resumed = run_cli(["run", str(protocol), "--out", str(work / "killed"), "--cache-dir", str(work / "cache-b"),
                       "--quiet"])
    ex = execution_of(work / "killed")
    same = tables(work / "whole") == tables(work / "killed")
    print(f"2. resume after kill -9: EWT train, {n:,} sentences in {chunks} chunks of {chunk}; uninterrupted "
          f"{whole:.1f} s; killed after {chunks // 2} chunks ({killed_after:.1f} s); resumed {resumed:.1f} s "
          f"({ex['chunks_cached']} chunks from the cache, {ex['chunks_run']} run): ratio {resumed / whole:.3f} "
          f"(target <= 0.6); tables byte-identical: {same}", flush=True)


# --------------------------------------------------------------------------------------------------- 3

def short_records(n: int):
    from headstats.inputs.readers import read_records
    from headstats.inputs.records import Record

    texts = [r.text_a for r in read_records(str(TRAIN), limit=4000) if len(r.text_a.split()) <= 12]
    return [Record(f"x{i}", texts[i % len(texts)]) for i in range(n)]


def large_child(mode: str, n: int, hidden: int) -> None:
    """In a fresh process: the engine or the bare forward on n short inputs; prints time and peak RSS."""
    import torch
    from transformers import BertConfig, BertModel

    from headstats.analyses.pande_roles.collect import RoleScores
    from headstats.engine.forward import length_sorted_batches, pad_batch
    from headstats.engine.runner import DEFAULT_MEMORY_BUDGET, Job, Runner, attention_cells
    from headstats.model.encoding import encode_records
    from headstats.model.loading import LoadedModel, load_model

    tokenizer = load_model("default").tokenizer
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden, num_hidden_layers=24,
                        num_attention_heads=16, intermediate_size=4 * hidden, attn_implementation="eager")
    torch.manual_seed(0)
    model = BertModel(config).eval()
    loaded = LoadedModel("bert-large-random", model, tokenizer,
                         {"model": "bert-large-random", "n_layers": 24, "n_heads": 16, "weights_sha256": {}})
    records = short_records(n)
    start = time.perf_counter()
    if mode == "engine":
        job = Job(RoleScores, ("bert-large-random",), "short", {"roles": ROLES_WITHOUT_PARSES}, name="pande_roles")
        counts = Runner(batch_size=32, max_length=128, chunk_size=1024).run(lambda name: loaded, {"short": records},
                                                                            [job])
        scored = counts[("bert-large-random", "short")]["n_scored"]  # an input of many pieces may be too long
        assert job.collector.result().values.shape == (scored, 24, 16, len(ROLES_WITHOUT_PARSES))
    else:
        with torch.inference_mode():
            for begin in range(0, n, 1024):  # the runner's chunks and length-sorted batches, within its budget
                encoded = encode_records(records[begin:begin + 1024], tokenizer, max_length=128).inputs
                for items in length_sorted_batches(encoded, 32, max_cells=attention_cells(24, 16, DEFAULT_MEMORY_BUDGET)):
                    batch = pad_batch(items, tokenizer.pad_token_id)
                    model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                          token_type_ids=batch.token_type_ids, output_attentions=True)
    took = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": round(took, 2), "peak_rss_mib": round(peak, 1)}))


def large(n: int, hidden: int, mode: str) -> dict:
    if IN_PROCESS:
        import contextlib
        import io

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            large_child(mode, n, hidden)
        return json.loads(printed.getvalue().strip().splitlines()[-1])
    out = subprocess.run([sys.executable, __file__, "--large-child", mode, str(n), str(hidden)], capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def large_models(sizes: list[int], real_n: int) -> None:
    peaks = {}
    for n in sizes:
        engine, bare = large(n, 64, "engine"), large(n, 64, "bare")
        peaks[n] = engine["peak_rss_mib"]
        print(f"3. 24 x 16 heads (hidden 64), {n:,} short inputs: engine {engine['seconds']:.1f} s, bare forward "
              f"{bare['seconds']:.1f} s, overhead ratio {engine['seconds'] / bare['seconds']:.2f}; peak RSS engine "
              f"{engine['peak_rss_mib']:.0f} MiB (bare {bare['peak_rss_mib']:.0f} MiB)", flush=True)
    if len(sizes) == 2:
        a, b = sizes
        print(f"   peak memory {b:,} / {a:,} inputs: {peaks[b] / peaks[a]:.2f} (flat = 1; the scores array itself "
              f"grows by {(b - a) * 24 * 16 * len(ROLES_WITHOUT_PARSES) * 4 / 2**20:.0f} MiB)", flush=True)
    if real_n:
        engine, bare = large(real_n, 1024, "engine"), large(real_n, 1024, "bare")
        print(f"   bert-large width (hidden 1024), {real_n:,} short inputs: engine {engine['seconds']:.1f} s, bare "
              f"{bare['seconds']:.1f} s, overhead ratio {engine['seconds'] / bare['seconds']:.2f}; peak RSS "
              f"{engine['peak_rss_mib']:.0f} MiB", flush=True)


# --------------------------------------------------------------------------------------------------- 4

def ray_identical(work: Path) -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        print("4. Ray: not installed (pip install 'headstats[ray]'): skipped", flush=True)
        return
    import yaml

    demo = REPO / "data" / "demo"
    base = {"name": "bench-ray", "models": ["default"],
            "datasets": [{"name": "single", "path": str(demo / "sentences.txt"), "limit": 120},
                         {"name": "gold", "path": str(demo / "mini.conllu")}],
            "statistics": {"sensitivity": False}, "execution": {"chunk_size": 32}}
    (work / "local.yaml").write_text(yaml.safe_dump(base))
    (work / "ray.yaml").write_text(yaml.safe_dump(base | {"execution": {"chunk_size": 32, "executor": "ray",
                                                                        "workers": 2}}))
    local = run_cli(["run", str(work / "local.yaml"), "--out", str(work / "local"), "--no-cache", "--quiet"])
    remote = run_cli(["run", str(work / "ray.yaml"), "--out", str(work / "ray"), "--no-cache", "--quiet"])
    same = tables(work / "local") == tables(work / "ray")
    print(f"4. Ray, 2 local workers (cluster started by the run): tables byte-identical to the local executor: "
          f"{same} ({len(tables(work / 'local'))} tables; local {local:.1f} s, Ray {remote:.1f} s including "
          "the cluster's start)", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ewt-n", type=int, default=None, help="sentences of EWT train for item 1 (default all)")
    parser.add_argument("--resume-n", type=int, default=4096)
    parser.add_argument("--large-n", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--real-large-n", type=int, default=200)
    parser.add_argument("--skip", nargs="*", default=[], choices=["stats", "resume", "large", "ray"])
    parser.add_argument("--smoke", action="store_true", help="every part on a few inputs (seconds per part)")
    parser.add_argument("--large-child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    reruns, chunk = 3, 256
    if args.smoke:
        global IN_PROCESS
        IN_PROCESS = True
        args.ewt_n, args.resume_n, args.large_n, args.real_large_n = 20, 8, [16, 32], 0
        reruns, chunk = 1, 4
    if args.large_child:
        mode, n, hidden = args.large_child
        large_child(mode, int(n), int(hidden))
        return
    if not TRAIN.exists():
        sys.exit(f"needs {TRAIN}")
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        work = Path(tmp)
        os.environ.setdefault("MPLCONFIGDIR", str(work / "mpl"))
        if "stats" not in args.skip:
            (work / "s").mkdir()
            statistics_only(work / "s", args.ewt_n, reruns)
        if "resume" not in args.skip:
            (work / "r").mkdir()
            resume(work / "r", args.resume_n, chunk)
        if "large" not in args.skip:
            large_models(args.large_n, args.real_large_n)
        if "ray" not in args.skip:
            (work / "y").mkdir()
            ray_identical(work / "y")


if __name__ == "__main__":
    main()
