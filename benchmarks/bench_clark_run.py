"""Benchmark: a run with every Clark et al. analysis against the same run with the roles only (CPU time).

Run:  python benchmarks/bench_clark_run.py [--pairs 40] [--sentences 100] [--rounds 2] [--keep DIR] [--smoke]

Two protocols are written from ``protocols/clark2019.yaml``, on the first ``--pairs`` WikiText-2 paragraph pairs
(``../shared/data/wiki/wikitext-2-raw/wiki.test.raw``) and the first ``--sentences`` UD English EWT dev sentences
(``../shared/data/ud/en_ewt/en_ewt-ud-dev.conllu``), the same models, scoring and statistics:

- **clark**: every analysis of the protocol (surface, clustering on the WikiText pairs, pictures, dependency,
  coreference, probing) with the protocol's options;
- **roles**: no analysis, only the role scores, their tests and their report.

Each is run as ``headstats run PROTOCOL --out DIR --no-cache --quiet`` in a fresh process, alternated
(roles, clark, roles, clark, ...: load that comes and goes touches both), and measured as the CPU time (user +
system) of that process **and of every process it started and waited for** (the report's figure workers
included: ``os.wait4``'s resource usage counts the descendants that were waited for). Printed: each run's CPU and
wall time, the median of each protocol, and the **ratio clark / roles (target <= 2)**, with the machine's load
average before and after (``os.getloadavg``; on a busy machine CPU time is the steadier figure), and each round's
own ratio with their range: on a shared machine one protocol's CPU time moves by 20 % or more from run to run
(roles 16.3-21.6 s in five rounds of one run), so one round's ratio says little.

``--keep DIR`` keeps the last run folder of each protocol in ``DIR/roles`` and ``DIR/clark``; ``--compare DIR``
then compares their tables (every ``.csv``, ``.tex`` and ``.parquet`` file) with those kept by an earlier run in
``DIR`` (e.g. of the code before a change that must change no number) and prints the files that differ. ``--smoke``: one round on the demo corpus' first 4 pairs and 4 gold
sentences (``data/demo``; no shared data), run by ``tests/test_benchmarks.py``: it checks that the benchmark
runs, not its figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The shared data folder beside the checkout (or $HEADSTATS_SHARED_DATA).
DATA = Path(os.environ.get("HEADSTATS_SHARED_DATA", REPO.parent / "shared" / "data"))
WIKI = DATA / "wiki" / "wikitext-2-raw" / "wiki.test.raw"
EWT = DATA / "ud" / "en_ewt" / "en_ewt-ud-dev.conllu"
#: The smoke size's inputs (in the repository).
SMOKE = (REPO / "data" / "demo" / "pairs.txt", REPO / "data" / "demo" / "mini.conllu")
#: The two protocols, in the order each round runs them.
KINDS = ("roles", "clark")


def protocols(folder: Path, *, pairs: int, sentences: int, smoke: bool = False) -> dict[str, Path]:
    """Write the two protocols (``clark`` and ``roles``) into ``folder``; return their paths by kind."""
    import yaml

    raw = yaml.safe_load((REPO / "protocols" / "clark2019.yaml").read_text(encoding="utf-8"))
    wiki, ewt = SMOKE if smoke else (WIKI, EWT)
    raw["datasets"] = [{"name": "wiki_pairs", "path": str(wiki), "limit": pairs, "parse": "none"},
                       {"name": "ewt_dev", "path": str(ewt), "limit": sentences}]
    paths = {}
    for kind in KINDS:
        spec = dict(raw, name=f"bench-{kind}")
        if kind == "roles":
            spec["analyses"] = []
            spec.pop("analysis_options", None)
        paths[kind] = folder / f"{kind}.yaml"
        paths[kind].write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return paths


def run_once(protocol: Path, out: Path, src: Path = REPO / "src") -> dict:
    """``headstats run protocol --out out --no-cache --quiet`` in a fresh process, with the package in ``src``
    (another checkout's, to compare two versions): CPU (self + waited-for descendants) and wall seconds."""
    if out.exists():
        shutil.rmtree(out)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "headstats.cli.main", "run", str(protocol), "--out", str(out), "--no-cache",
               "--quiet"]
    log = out.parent / f"{out.name}.log"
    start = time.perf_counter()
    with log.open("wb") as sink:  # a file, not a pipe: wait4 must not wait on a full pipe
        child = subprocess.Popen(command, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    child.returncode = code
    if code != 0:
        raise RuntimeError(f"headstats run {protocol.name} failed ({code}):\n{log.read_text(errors='replace')}")
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": wall}


#: The files of a run folder that hold its numbers.
TABLES = ("*.csv", "*.tex", "*.parquet")


def compare_tables(new: Path, old: Path) -> tuple[int, list[str]]:
    """How many tables of run folder ``new`` are identical to ``old``'s, and the names of those that are not
    (or are in one folder only). Parquet files are compared as data frames (their bytes hold the writer's
    version), the others byte for byte."""
    import pandas as pd

    names = sorted({p.name for pattern in TABLES for folder in (new, old) for p in folder.glob(pattern)})
    same, differ = 0, []
    for name in names:
        a, b = new / name, old / name
        if not (a.exists() and b.exists()):
            differ.append(f"{name} (in one folder only)")
        elif a.read_bytes() == b.read_bytes() or (
                name.endswith(".parquet") and pd.read_parquet(a).equals(pd.read_parquet(b))):
            same += 1
        else:
            differ.append(name)
    return same, differ


def main(argv: list[str] | None = None) -> dict[str, list[dict]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=40, help="WikiText-2 paragraph pairs (default 40)")
    parser.add_argument("--sentences", type=int, default=100, help="UD EWT dev sentences (default 100)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of (roles, clark) (default 2)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the last run folders in DIR/roles, DIR/clark")
    parser.add_argument("--compare", type=Path, default=None,
                        help="compare the tables of this run with those kept in DIR by an earlier --keep")
    parser.add_argument("--smoke", action="store_true", help="one round on the demo corpus (seconds)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.pairs, args.sentences, args.rounds = 4, 4, 1
    elif not (WIKI.exists() and EWT.exists()):
        raise SystemExit(f"error: needs {WIKI} and {EWT} (or --smoke)")
    results: dict[str, list[dict]] = {kind: [] for kind in KINDS}
    with tempfile.TemporaryDirectory(prefix="bench_clark_") as tmp:
        folder = Path(tmp)
        paths = protocols(folder, pairs=args.pairs, sentences=args.sentences, smoke=args.smoke)
        corpus = "the demo corpus" if args.smoke else "WikiText-2 test and UD EWT dev"
        print(f"inputs: {args.pairs} pairs + {args.sentences} sentences of {corpus}; {args.rounds} "
              f"round{'s' if args.rounds != 1 else ''}; "
              f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
        for number in range(args.rounds):
            for kind in KINDS:
                measured = run_once(paths[kind], folder / kind)
                results[kind].append(measured)
                print(f"round {number + 1} {kind:5s}: {measured['cpu']:7.2f} s CPU  {measured['wall']:7.2f} s wall  "
                      f"(load {os.getloadavg()[0]:.2f})", flush=True)
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            for kind in KINDS:
                shutil.rmtree(args.keep / kind, ignore_errors=True)
                shutil.copytree(folder / kind, args.keep / kind)
        if args.compare is not None:
            for kind in KINDS:
                same, differ = compare_tables(folder / kind, args.compare / kind)
                print(f"{kind}: {same} tables identical to {args.compare / kind}; differ: {', '.join(differ) or 'none'}")
    median = {kind: statistics.median(r["cpu"] for r in results[kind]) for kind in KINDS}
    print(f"median CPU: roles {median['roles']:.2f} s, clark {median['clark']:.2f} s")
    print(f"ratio clark / roles: {median['clark'] / median['roles']:.2f} x CPU (target <= 2); "
          f"load average after: {os.getloadavg()[0]:.2f}")
    paired = [c["cpu"] / r["cpu"] for r, c in zip(results["roles"], results["clark"])]
    if len(paired) > 1:  # each round's two runs side by side: how far the machine moves the ratio
        print(f"each round's ratio: {' '.join(f'{x:.2f}' for x in paired)} (median {statistics.median(paired):.2f}, "
              f"range {min(paired):.2f}-{max(paired):.2f})")
    return results


if __name__ == "__main__":
    main()
