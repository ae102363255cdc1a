"""Benchmark: the full statistics of a study on planted scores, and the Walsh bound at real size.

Run:  python benchmarks/bench_statistics.py [--n 10000] [--repeats 2] [--smoke]

``--smoke`` runs every step on 200 inputs once (seconds; ``tests/test_benchmarks.py`` runs it).

Prints, measured in this one run:
- the wall time of every table a study computes from the scores (``headstats.assignment.tables.analyse`` with the
  default statistics: t-test, Holm within (model, dataset), power, sample sizes and Bayes factors, the tau x
  alpha sensitivity grid and the robustness table over t/wilcoxon/sign x four corrections) on planted
  scores of N inputs x 144 heads (12 layers x 12) x 10 roles, handed over as a
  :class:`~headstats.measures.MeasureArray` as the engine does; target: under 5 s at N = 10,000;
- a breakdown of that time (packing, tests, sensitivity, robustness);
- the time of the one-sided Walsh-average bound (the Wilcoxon ``ci_low``) for one head at n = 12,544 (UD
  EWT train) against the former brute force (all n(n+1)/2 Walsh averages) at n = 3,000, extrapolated to
  12,544 by the number of Walsh averages.

The planted scores: gamma-distributed bias scores with mean 1.5 for most heads and 3.6 for three heads per
role (above tau = 3); ``syntactic`` roles take part on a seeded share of inputs only (NaN elsewhere), the same
inputs for every head, as in real data. The load average is printed: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import time
from types import SimpleNamespace

import numpy as np

ROLES = ("local", "delimiter", "delimiter_cls", "delimiter_sep", "block", "syntactic", "syntactic:nsubj",
         "syntactic:dobj", "syntactic:amod", "syntactic:advmod")
#: Share of inputs taking part per role (the syntactic relations need an arc of their kind).
TAKING_PART = {"syntactic": 0.95, "syntactic:nsubj": 0.85, "syntactic:dobj": 0.5, "syntactic:amod": 0.45,
               "syntactic:advmod": 0.4}
TARGET_S = 5.0


def planted_arrays(n: int, *, layers: int = 12, heads: int = 12, seed: int = 0):
    """One MeasureArray of planted scores: (n, layers, heads, 10 roles), float32, NaN = not taking part."""
    from headstats.measures import MeasureArray

    rng = np.random.default_rng(seed)
    mean = np.full((layers, heads, len(ROLES)), 1.5)
    for r in range(len(ROLES)):
        picked = rng.choice(layers * heads, size=3, replace=False)
        mean.reshape(-1, len(ROLES))[picked, r] = 3.6
    sd = 1.0
    shape = (mean / sd) ** 2  # gamma with the given mean and sd 1: positive, right-skewed
    values = np.empty((n, layers, heads, len(ROLES)), dtype=np.float32)
    for r, role in enumerate(ROLES):
        values[..., r] = rng.gamma(shape[..., r], sd**2 / mean[..., r], size=(n, layers, heads))
        if role in TAKING_PART:
            values[rng.random(n) >= TAKING_PART[role], :, :, r] = np.nan
    ids = np.array([f"s{i:05d}" for i in rng.permutation(n)])
    return [MeasureArray("planted", "planted", ids, ROLES, values)]


def best_of(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def full_statistics(n: int, repeats: int) -> None:
    from headstats.assignment.tables import analyse, statistics_kwargs
    from headstats.config.protocol import ReportOptions, StatisticsOptions
    from headstats.stats.matrix import score_matrix
    from headstats.stats.onesample import test_roles
    from headstats.stats.sensitivity import robustness, tau_sensitivity

    arrays = planted_arrays(n)
    protocol = SimpleNamespace(statistics=StatisticsOptions(), seed=0, report=ReportOptions())  # the pieces
    test_roles(planted_arrays(50))  # warm up: pingouin and scipy imports are not the statistics' cost
    total, result = best_of(lambda: analyse(arrays, protocol.statistics, protocol.seed,
                                            top_k=protocol.report.top_k), repeats)
    kwargs = statistics_kwargs(protocol.statistics, protocol.seed)  # {"options": TestOptions, "seed": int}
    steps = {
        "pack the array once": lambda mat: score_matrix(arrays),
        "test_roles (t, holm, moments, power, BF)": lambda mat: test_roles(mat, **kwargs),
        "tau_sensitivity (13 taus x 3 alphas)": lambda mat: tau_sensitivity(mat, **kwargs),
        "robustness (3 tests x 4 corrections)": lambda mat: robustness(mat, **kwargs),
    }
    best = dict.fromkeys(steps, float("inf"))
    for _ in range(repeats):  # in the order analyse runs them, on a fresh matrix each time
        mat = None
        for name, step in steps.items():
            start = time.perf_counter()
            out = step(mat)
            best[name] = min(best[name], time.perf_counter() - start)
            mat = out if mat is None else mat
    heads = int(np.prod(arrays[0].values.shape[1:3]))
    print(f"full statistics of {n:,} inputs x {heads} heads x {len(ROLES)} roles "
          f"({len(result.tests):,} hypotheses, {arrays[0].values.size:,} scores), best of {repeats}:")
    print(f"  analyse (tests, corrections, power, role tables, tau sensitivity, robustness): {total:.2f} s "
          f"(target < {TARGET_S:.0f} s: {'met' if total < TARGET_S else 'NOT met'})")
    print("    of which " + "; ".join(f"{name}: {t:.2f} s" for name, t in best.items()))
    print(f"  heads assigned: {int(result.tests['reject'].sum())} (planted above tau: {3 * len(ROLES)})")


def walsh_bound(repeats: int, *, n: int = 12_544, n_old: int = 3_000) -> None:
    from headstats.stats.ranks import signrank_critical_count, walsh_lower_bound

    rng = np.random.default_rng(1)
    x = rng.gamma(2.0, 1.0, (1, n))
    t_new, bound = best_of(lambda: walsh_lower_bound(x, 0.95), max(repeats, 3))
    y = x[:, :n_old]

    def brute() -> np.ndarray:  # the former code: every Walsh average, then a partition
        iu = np.triu_indices(n_old)
        walsh = (y[:, iu[0]] + y[:, iu[1]]) / 2.0
        r = signrank_critical_count(n_old, 0.05)
        return np.partition(walsh, r - 1, axis=1)[:, r - 1]

    t_old, ref = best_of(brute, repeats)
    assert ref[0] == walsh_lower_bound(y, 0.95)[0]
    scale = (n * (n + 1)) / (n_old * (n_old + 1))
    print("Walsh-average bound of one head (Wilcoxon ci_low):")
    print(f"  O(n log n) selection at n = {n:,}: {t_new * 1e3:.1f} ms")
    print(f"  former brute force at n = {n_old:,}: {t_old * 1e3:.0f} ms -> extrapolated to n = {n:,} "
          f"(x{scale:.1f} Walsh averages): {t_old * scale:.1f} s, {t_old * scale / t_new:,.0f} x slower")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="inputs of the planted scores")
    parser.add_argument("--repeats", type=int, default=2, help="best of this many runs")
    parser.add_argument("--smoke", action="store_true", help="200 inputs, one run (seconds)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.n, args.repeats = 200, 1
    print(f"load average before: {', '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} CPUs)")
    full_statistics(args.n, args.repeats)
    walsh_bound(args.repeats, **({"n": 1_000, "n_old": 300} if args.smoke else {}))
    print(f"load average after: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
