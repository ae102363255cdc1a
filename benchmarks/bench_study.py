"""Benchmark: a whole study (`headstats run`) against scoring alone (`headstats score`), and peak memory.

Run:  python benchmarks/bench_study.py [--n N] [--sensitivity off] [--scaling 1000 10000]
                                      [--scaling-sensitivity off] [--skip-main] [--skip-scaling]

Prints, each measured in a fresh process on UD English EWT train (12,544 sentences, gold parses):
- the wall time of ``headstats run`` of a protocol with the default model, all roles and the default
  statistics (with sensitivity and robustness), and of ``headstats score`` on the same file, and their
  ratio (target <= 1.2), with the run's phases (read + parse, the engine's pass, statistics, writing);
- the peak resident memory of the run (target < 1.5 GB);
- the peak resident memory of the same study on the first 1,000 and 10,000 sentences, and their ratio
  (target <= 1.15). ``--scaling-sensitivity off`` leaves the sensitivity tables out of these two runs, to
  measure the engine and the arrays without the statistics' own memory.

``--smoke``: the main run on 20 sentences, no scaling, in this process (seconds; run by
``tests/test_benchmarks.py``: it checks that the benchmark runs, not its figures).

The 12,544-sentence run takes minutes on two cores: run it once (``--skip-main`` measures the scaling only).
``--sensitivity off`` runs the main study without the sensitivity tables (whose Wilcoxon bound is O(n^2)
until the statistics bound it in O(n log n)).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRAIN = REPO.parent / "shared" / "data" / "ud" / "en_ewt" / "en_ewt-ud-train.conllu"


def protocol_file(folder: Path, *, limit: int | None, sensitivity: bool) -> Path:
    """A protocol with the default model, every default role and the default statistics on EWT train."""
    import yaml

    dataset = {"name": "ewt_train", "path": str(TRAIN)}
    if limit:
        dataset["limit"] = limit
    path = folder / f"bench_{limit or 'all'}_{'sens' if sensitivity else 'nosens'}.yaml"
    path.write_text(yaml.safe_dump({"name": "bench-study", "models": ["default"], "datasets": [dataset],
                                    "statistics": {"sensitivity": sensitivity}}))
    return path


def child(command: list[str]) -> None:
    """Run one CLI command in this process; print phase times (for ``run``) and this process' peak RSS."""
    import headstats.study.run as study
    from headstats.cli.main import app

    start = time.perf_counter()
    phases: list[tuple[str, float]] = []
    original = study.run_study

    def timed(*args, **kwargs):
        kwargs["log"] = lambda message: phases.append((message, round(time.perf_counter() - start, 2)))
        return original(*args, **kwargs)

    study.run_study = timed  # put back below: in-process (the smoke size), a test's later runs must log again
    try:
        app(command, standalone_mode=False)
    finally:
        study.run_study = original
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"phases": phases, "peak_rss_mib": round(peak_kib / 1024, 1),
                          "in_process_s": round(time.perf_counter() - start, 2)}))


#: Run the commands in this process (the smoke size).
IN_PROCESS = False


def measure(command: list[str]) -> dict:
    """Wall time and report of a child process running ``command``, with an empty state cache of its own.

    Every run here is a first run: writing the cache is part of its cost, and no run reads the chunks another
    one wrote (the 10,000-input run would otherwise find most of its chunks from the full run)."""
    env = os.environ | {"HEADSTATS_CACHE_DIR": tempfile.mkdtemp(prefix="bench_study_cache_")}
    start = time.perf_counter()
    if IN_PROCESS:
        import contextlib
        import io

        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                child(command + ["--no-cache"])
        finally:
            shutil.rmtree(env["HEADSTATS_CACHE_DIR"], ignore_errors=True)
        return json.loads(printed.getvalue().strip().splitlines()[-1]) | {"wall_s": time.perf_counter() - start}
    try:
        out = subprocess.run([sys.executable, __file__, "--child", json.dumps(command)], capture_output=True,
                             text=True, env=env)
        wall = time.perf_counter() - start
    finally:
        shutil.rmtree(env["HEADSTATS_CACHE_DIR"], ignore_errors=True)
    if out.returncode != 0:
        raise RuntimeError(f"{command[0]} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
    report = json.loads(out.stdout.strip().splitlines()[-1])
    return report | {"wall_s": round(wall, 2)}


def phase_summary(phases: list[tuple[str, float]]) -> str:
    first_model = next((t for m, t in phases if m.startswith("loading model")), None)
    testing = next((t for m, t in phases if m.startswith("testing")), None)
    writing = next((t for m, t in phases if m.startswith("writing")), None)
    done = next((t for m, t in phases if m.startswith("done")), None)
    if None in (first_model, testing, writing, done):
        return json.dumps(phases)
    return (f"read + parse {first_model:.1f} s, engine pass {testing - first_model:.1f} s, statistics and "
            f"comparisons {writing - testing:.1f} s, writing (tables, figures, report) {done - writing:.1f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None, help="sentences of EWT train for the main run (default all)")
    parser.add_argument("--scaling", type=int, nargs=2, default=(1000, 10000))
    parser.add_argument("--sensitivity", choices=("on", "off"), default="on", help="statistics.sensitivity of the main run")
    parser.add_argument("--scaling-sensitivity", choices=("on", "off"), default="on")
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--skip-main", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="20 sentences, no scaling (seconds)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        global IN_PROCESS
        IN_PROCESS = True
        args.n, args.skip_scaling = 20, True
    if args.child:
        child(json.loads(args.child))
        return
    if not TRAIN.exists():
        sys.exit(f"needs {TRAIN}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="bench_study_") as tmp:
        folder = Path(tmp)
        if not args.skip_main:
            proto = protocol_file(folder, limit=args.n, sensitivity=args.sensitivity == "on")
            run = measure(["run", str(proto), "--out", str(folder / "run"), "--quiet"])
            data = str(TRAIN)
            if args.n:
                lines = TRAIN.read_text().split("\n\n")[: args.n]
                data = str(folder / "train_part.conllu")
                Path(data).write_text("\n\n".join(lines) + "\n\n")
            score = measure(["score", "--model", "default", "--data", data, "--out", str(folder / "score"), "--quiet"])
            n = args.n or 12544
            print(f"inputs: {n} sentences of {TRAIN.name}, default model, default roles and statistics "
                  f"(sensitivity {args.sensitivity})")
            print(f"headstats run:   {run['wall_s']:.1f} s  ({phase_summary(run['phases'])})")
            print(f"headstats score: {score['wall_s']:.1f} s")
            print(f"ratio run / score: {run['wall_s'] / score['wall_s']:.2f}  (target <= 1.2)")
            print(f"peak RSS of the run: {run['peak_rss_mib']:.0f} MiB  (target < 1536 MiB); "
                  f"of score: {score['peak_rss_mib']:.0f} MiB")
        if args.skip_scaling:
            return
        sensitivity = args.scaling_sensitivity == "on"
        peaks = {}
        for n in args.scaling:
            proto = protocol_file(folder, limit=n, sensitivity=sensitivity)
            report = measure(["run", str(proto), "--out", str(folder / f"run_{n}"), "--quiet"])
            peaks[n] = report
            print(f"peak RSS of the run on {n} inputs (sensitivity {args.scaling_sensitivity}): "
                  f"{report['peak_rss_mib']:.0f} MiB in {report['wall_s']:.1f} s  ({phase_summary(report['phases'])})")
        small, large = args.scaling
        print(f"peak RSS ratio {large} / {small} inputs: {peaks[large]['peak_rss_mib'] / peaks[small]['peak_rss_mib']:.3f}"
              "  (target <= 1.15)")


if __name__ == "__main__":
    main()
