"""The resampling check of docs/statistics.md (section 8): type I error of every one-sample test on REAL scores.

Run:  python benchmarks/skew_check.py [--scores tests/golden/quickstart/scores.parquet] [--reps 400]
      [--resampling-reps 200] [--n-resamples 499] [--min-n 20] [--seed 0] [--out skew_check.csv]

For every hypothesis (dataset, role, layer, head) of a scores table with at least ``--min-n`` participating
inputs, and for every registered test, the head's real scores are shifted so that the location the test is
about equals tau exactly -- the mean for ``t``, ``skew_t``, ``bootstrap`` and ``permutation``, the median for
``sign``, the Hodges-Lehmann pseudo-median for ``wilcoxon`` -- which makes the head's empirical distribution a
population on the boundary of H0. Inputs are then resampled with replacement (same N) ``--reps`` times (the
resampling tests ``--resampling-reps`` times, each with ``--n-resamples`` resamples of its own), each
resample is tested at nominal alpha = 0.05 (uncorrected), and the share of rejections is that head's type I
error. The script prints, per test, the distribution of the type I error over heads, its correlation with
the head's skewness (``scipy.stats.skew(bias=False)``) and its median within bands of skewness, and writes
the per-head rates to ``--out`` (``--summarise FILE`` prints the tables of such a file again).

The default scores are the quickstart's (tests/golden/quickstart/scores.parquet: the embedded
all-MiniLM-L6-v2 on data/demo). Takes a few minutes on one core. ``--smoke``: 20 and 4 repetitions of 99
resamples on the first 20 hypotheses (seconds; run by ``tests/test_benchmarks.py``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

ROOT = Path(__file__).resolve().parents[1]
TESTS = ("t", "skew_t", "wilcoxon", "sign", "bootstrap", "permutation")


def centre(x: np.ndarray, parameter: str) -> float:
    """The head's estimate of the location the test is about."""
    if parameter == "mean":
        return float(x.mean())
    if parameter == "median":
        return float(np.median(x))
    from headstats.stats.ranks import hodges_lehmann

    return hodges_lehmann(x)[0]


def hypotheses(scores: pd.DataFrame, min_n: int):
    """(keys, finite scores) of every hypothesis with at least ``min_n`` participating inputs."""
    keys = ["dataset", "role", "layer", "head"]
    for key, part in scores.sort_values([*keys, "sentence_id"]).groupby(keys, sort=True):
        x = part["score"].to_numpy(float)
        x = x[np.isfinite(x)]
        if x.size >= min_n and x.std() > 0:
            yield key, x


BANDS = ((-np.inf, -0.5), (-0.5, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, 4.0), (4.0, np.inf))


def band_table(rates: pd.DataFrame, tests) -> str:
    """Median type I error per test within bands of skewness (Markdown)."""
    lines = ["| skewness | heads | " + " | ".join(f"`{t}`" for t in tests) + " |",
             "|---|---|" + "---|" * len(tests)]
    for lo, hi in BANDS:
        part = rates[(rates["skewness"] >= lo) & (rates["skewness"] < hi)]
        if len(part):
            label = f"{lo:g} to {hi:g}".replace("-inf to ", "below ").replace(" to inf", " and above")
            lines.append(f"| {label} | {len(part)} | " + " | ".join(f"{part[t].median():.3f}" for t in tests) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores", default=str(ROOT / "tests" / "golden" / "quickstart" / "scores.parquet"))
    parser.add_argument("--tau", type=float, default=3.0)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--resampling-reps", type=int, default=200)
    parser.add_argument("--n-resamples", type=int, default=499)
    parser.add_argument("--min-n", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tests", default=",".join(TESTS))
    parser.add_argument("--out", default="skew_check.csv")
    parser.add_argument("--summarise", default=None, help="print the tables of a per-head rates CSV and stop")
    parser.add_argument("--max-heads", type=int, default=None, help="the first this many hypotheses only")
    parser.add_argument("--smoke", action="store_true", help="a few repetitions on 20 hypotheses (seconds)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.reps, args.resampling_reps, args.n_resamples, args.max_heads = 20, 4, 99, 20
    tests = [t.strip() for t in args.tests.split(",") if t.strip()]
    if args.summarise:
        summarise(pd.read_csv(args.summarise), tests, args)
        return

    from headstats.stats.onesample import get_test

    scores = pd.read_parquet(args.scores)
    heads = list(hypotheses(scores, args.min_n))[: args.max_heads]
    print(f"{len(heads)} hypotheses with n >= {args.min_n} from {args.scores}")
    rows = []
    start = time.perf_counter()
    for h, (key, x) in enumerate(heads):
        rng = np.random.default_rng([args.seed, h])
        row = dict(zip(["dataset", "role", "layer", "head"], key), n=x.size,
                   skewness=float(sps.skew(x, bias=False)))
        for name in tests:
            spec = get_test(name)
            reps = args.resampling_reps if spec.resampling else args.reps
            x0 = x - centre(x, spec.parameter) + args.tau
            block = x0[rng.integers(0, x.size, size=(reps, x.size))]
            p = spec.pvalues(block, tau=args.tau, confidence=0.95, seed=args.seed + h,
                             n_resamples=args.n_resamples)
            row[name] = float(np.mean(p[np.isfinite(p)] <= args.alpha)) if np.isfinite(p).any() else np.nan
        rows.append(row)
    out = pd.DataFrame(rows)
    out.to_csv(args.out, index=False)
    print(f"{time.perf_counter() - start:.0f} s; per-head rates in {args.out}\n")
    summarise(out, tests, args)


def summarise(out: pd.DataFrame, tests, args) -> None:
    """Print the summary tables of per-head type I error rates."""
    from headstats.stats.onesample import get_test

    print("| test | reps per head | median | 5 % | 95 % | min | max | heads > 0.075 | heads < 0.025 | r with skewness |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in tests:
        rate = out[name].to_numpy(float)
        ok = np.isfinite(rate)
        reps = args.resampling_reps if get_test(name).resampling else args.reps
        r = np.corrcoef(out["skewness"][ok], rate[ok])[0, 1] if ok.sum() > 2 else np.nan
        q = np.percentile(rate[ok], [50, 5, 95])
        print(f"| `{name}` | {reps} | {q[0]:.3f} | {q[1]:.3f} | {q[2]:.3f} | {rate[ok].min():.3f} | "
              f"{rate[ok].max():.3f} | {np.mean(rate[ok] > 0.075):.0%} | {np.mean(rate[ok] < 0.025):.0%} | {r:+.2f} |")
    print()
    print(band_table(out, tests))
    sk = out["skewness"]
    print(f"\nskewness over heads: median {sk.median():.2f}, share above 2: {np.mean(sk > 2):.0%}, "
          f"range {sk.min():.2f} to {sk.max():.2f}")
    se = np.sqrt(args.alpha * (1 - args.alpha) / args.reps)
    print(f"Monte Carlo se of one head's rate at 0.05: {se:.4f} ({args.reps} reps), "
          f"{np.sqrt(args.alpha * (1 - args.alpha) / args.resampling_reps):.4f} ({args.resampling_reps} reps)")



if __name__ == "__main__":
    main()
