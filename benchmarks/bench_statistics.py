"""Benchmark: the full statistics of a study on planted scores, and the Walsh bound at real size.

Run:  python benchmarks/bench_statistics.py [--n 10000] [--repeats 2] [--smoke] [--replicates 20] [--only grid]
      [--grid-b 143999 23999]

``--smoke`` runs every step on 200 inputs once (seconds; ``tests/test_benchmarks.py`` runs it), the
quickstart-like comparison on a sixth of the quickstart's heads without the sensitivity tables, and the
decision-error simulation on 2 small families.

Prints, measured in this one run:
- the wall time of every table a study computes from the scores (``headstats.analyses.pande_roles.finish.tables.analyse`` with the
  default statistics: t-test, Holm within (model, dataset), power, sample sizes and Bayes factors, the tau x
  alpha sensitivity grid and the robustness table over t/wilcoxon/sign x four corrections) on planted
  scores of N inputs x 144 heads (12 layers x 12) x 10 roles, handed over as a
  :class:`~headstats.measures.MeasureArray` as the engine does; target: under 5 s at N = 10,000;
- a breakdown of that time (packing, tests, sensitivity, robustness);
- the time of the one-sided Walsh-average bound (the Wilcoxon ``ci_low``) for one head at n = 12,544 (UD
  EWT train) against the former brute force (all n(n+1)/2 Walsh averages) at n = 3,000, extrapolated to
  12,544 by the number of Walsh averages.

- the quickstart-like statistics (``analyse`` on the quickstart's scores, ``tests/golden/quickstart``; with
  ``--no-sensitivity`` the tests alone) with ``test: bootstrap`` and ``n_resamples: auto`` (sequential)
  against ``test: t``, as CPU-time ratio (target: within 5x; runs interleaved, best of ``--repeats``), the
  cells settled by the bootstrap's draw-free bound, and the share of (head, role) cells whose assignment is the
  same as with every cell drawing the full B (target: at least 99 %);
- the bootstrap's tau grid on the quickstart's scores (``--only grid``; 13 taus x 3 alphas, B = 719,999, the
  auto B of alpha 0.01): every head drawing B (the reference); the default grid, sequential with the cells
  still open after the plain looks decided by importance sampling (:mod:`headstats.stats.onesample.tilted`);
  the sequential grid without importance sampling (its counts are the reference's) and at the smaller B of
  ``--grid-b``; each with its CPU time, the part spent generating resample blocks, the heads drawn to B, and
  its (head, role, tau, alpha) decisions against the reference's; for the default grid, each differing
  decision checked against a precise estimate of its cell's p-value (200,000 tilted draws); and the floor of
  any grid equal to the reference: the resample indices alone of every stream to B (``--smoke``: 4 heads of
  the first layer);
- a simulation of the sequential bootstrap's decision error: planted families of m hypotheses whose means
  straddle tau, each tested sequentially and with the full B; cells with another decision, among them
  stopped cells (the rule's resampling risk bounds them), and the share of draws spent.

The planted scores: gamma-distributed bias scores with mean 1.5 for most heads and 3.6 for three heads per
role (above tau = 3); ``syntactic`` roles take part on a seeded share of inputs only (NaN elsewhere), the same
inputs for every head, as in real data. The load average is printed: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
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
    from headstats.analyses.pande_roles.finish.tables import analyse
    from headstats.stats.options import statistics_kwargs
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


QUICKSTART_SCORES = Path(__file__).resolve().parents[1] / "tests" / "golden" / "quickstart" / "scores.parquet"


def cpu(fn) -> tuple[float, float, object]:
    """CPU seconds (this process, every thread), wall seconds and the result of ``fn()``."""
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - w0, out


def quickstart_bootstrap(*, smoke: bool, sensitivity: bool, repeats: int = 1) -> None:
    import pandas as pd

    from headstats.analyses.pande_roles.finish.tables import analyse
    from headstats.config.protocol import StatisticsOptions
    from headstats.stats.onesample import test_roles

    scores = pd.read_parquet(QUICKSTART_SCORES)
    if smoke:  # the first layer's heads only
        scores = scores[scores["layer"] == 0]
    test_roles(scores.head(2000))  # imports

    def run(test: str):
        return analyse(scores, StatisticsOptions(test=test, sensitivity=sensitivity), 0)

    best = {"t": (float("inf"), 0.0), "bootstrap": (float("inf"), 0.0)}
    boot = None
    for _ in range(repeats):  # interleaved: t, bootstrap, t, bootstrap, ...
        for test in best:
            c, w, out = cpu(lambda: run(test))
            best[test] = min(best[test], (c, w))
            boot = out if test == "bootstrap" else boot
    (c_t, w_t), (c_b, w_b) = best["t"], best["bootstrap"]
    tests = boot.tests
    b = int(tests["n_resamples"].max())
    c_f, w_f, full = cpu(lambda: test_roles(scores, test="bootstrap", sequential=False))
    tested = tests["p_unc"].notna().to_numpy()
    same = (tests["reject"].to_numpy() == full["reject"].to_numpy())[tested]
    drawn = tests["n_resamples"].to_numpy(dtype=float)[tested]
    by_bound = tests["note"].str.contains("without drawing|none of the").to_numpy()[tested]
    assigned = tests["reject"].to_numpy()[tested].astype(bool)
    what = "statistics (tests, tables, tau sensitivity, robustness)" if sensitivity else "tests and tables"
    print(f"quickstart-like {what}, {len(tests):,} hypotheses ({tested.sum():,} with a p-value), CPU time, best "
          f"of {repeats} interleaved:")
    print(f"  t-test: {c_t:.2f} s; bootstrap, n_resamples auto (B = {b:,}), sequential: {c_b:.2f} s "
          f"= {c_b / c_t:.1f} x the t-test (target <= 5 x: {'met' if c_b <= 5 * c_t else 'NOT met'}); "
          f"wall {w_t:.2f} s and {w_b:.2f} s")
    print(f"  cells stopped before B: {np.mean(drawn < b):.1%}; drawn to B: {int((drawn >= b).sum())}; settled by "
          f"the draw-free bound: {int(by_bound.sum())} of the {int(assigned.sum())} assigned; draws spent: "
          f"{drawn.sum() / (b * drawn.size):.2%} of every cell drawing B; the bootstrap's test table with every "
          f"cell drawing B: {c_f:.1f} s CPU")
    print(f"  same assignment as the full-B run: {same.sum():,} of {same.size:,} cells = {same.mean():.2%} "
          f"(target >= 99 %)")


def grid_options(*, smoke: bool, grid_b: list[int]) -> None:
    """The bootstrap's tau grid (13 taus x 3 alphas) on the quickstart's scores: the full-B grid (the reference),
    the default grid (sequential, the cells still open after the plain looks decided by importance sampling),
    the sequential grid without importance sampling (the full-B counts) and at each of ``grid_b``, per-cell
    decisions against the reference's; for each differing decision, which side a precise estimate of that
    cell's p-value (200,000 tilted draws) takes; and the floor of the full-B draws (the resample indices
    alone)."""
    from unittest import mock

    import pandas as pd

    import headstats.stats.onesample.draws as draws
    import headstats.stats.sensitivity as sens
    from headstats.stats.corrections import correct_rows_within_families, family_labels, reject
    from headstats.stats.matrix import score_matrix

    scores = pd.read_parquet(QUICKSTART_SCORES).drop(columns="measure")
    if smoke:  # 4 heads of the first layer
        scores = scores[(scores["layer"] == 0) & (scores["head"] < 4)]
    labels = family_labels(score_matrix(scores).keys, ("model", "dataset")).to_numpy()
    alphas = (0.01, 0.05, 0.1)
    runs: list = []
    generating = [0.0]
    make_blocks = draws.BootstrapStream._generate

    def timed_generate(self, j, size):  # the resample blocks' CPU time (this thread)
        c0 = time.thread_time()
        out = make_blocks(self, j, size)
        generating[0] += time.thread_time() - c0
        return out

    def grid(b: int | None = None, importance: bool = True, **kw):
        runs.clear()
        generating[0] = 0.0
        keep = sens.sequential_pvalues
        mat = score_matrix(scores)  # a fresh matrix: no bound kept from another run

        def spy(*a, **k):
            runs.append(keep(*a, **{**k, "importance": importance and k.get("importance", False)}))
            return runs[-1]

        with mock.patch.object(sens, "sequential_pvalues", spy), \
                mock.patch.object(draws.BootstrapStream, "_generate", timed_generate), \
                mock.patch.object(sens, "resolve_n_resamples", (lambda *a, **k: b) if b else sens.resolve_n_resamples):
            c, _, table = cpu(lambda: sens.tau_sensitivity(mat, test="bootstrap", seed=0, **kw))
        run = runs[-1]
        p_corr = correct_rows_within_families(run.p, labels, correction="holm")
        return c, table, run, np.stack([reject(p_corr, a) for a in alphas])

    c_full, t_full, r_full, d_full = grid(sequential=False)
    b_auto = r_full.total
    print(f"bootstrap tau grid of the quickstart{' (4 heads of layer 0)' if smoke else ''}: {len(labels):,} heads x 13 taus x 3 "
          f"alphas = {d_full.size:,} decisions, CPU time, one BLAS thread:")
    print(f"  every head drawing B = {b_auto:,} (the reference): {c_full:.2f} s, of which the resample blocks "
          f"{generating[0]:.2f} s")
    for b, importance in [(None, True), (None, False), *[(b, False) for b in grid_b]]:
        c, table, run, dec = grid(b, importance)
        differ = dec != d_full
        extra, missing = (dec & ~d_full).sum(axis=(1, 2)), (~dec & d_full).sum(axis=(1, 2))
        rows = int((table["n_heads_assigned"].to_numpy() == t_full["n_heads_assigned"].to_numpy()).sum())
        how = "importance sampling near the level" if importance else "plain draws to B near the level"
        print(f"  sequential, B = {run.total:,}{' (auto)' if b is None else ''}, {how}: {c:.2f} s, of which the "
              f"resample blocks {generating[0]:.2f} s; heads drawn to B: {int((run.drawn >= run.total).sum())}; "
              f"decisions differing from the reference: {int(differ.sum())} of {differ.size:,} (at alpha 0.01 / "
              f"0.05 / 0.1: extra {'/'.join(map(str, extra))}, missing {'/'.join(map(str, missing))}); count rows "
              f"equal: {rows} of {len(table)}")
        if importance:
            tilted = run.tilted > 0
            print(f"    cells estimated by importance sampling: {int(tilted.sum())}, {int(run.tilted.sum()):,} tilted "
                  f"draws in all (most {int(run.tilted.max()) if tilted.any() else 0:,})")
            print("    " + precise_check(run, dec, d_full, labels, alphas))
    ns = [n for n in np.unique(score_matrix(scores).n) if n >= 2]
    blocks = -(-b_auto // draws.RESAMPLE_BLOCK)

    def indices() -> None:  # what every stream drawn to B needs at the least: its resample indices
        for n in ns:
            rng = np.random.default_rng(0)
            for j in range(blocks):
                rng.integers(0, n, size=(min(draws.RESAMPLE_BLOCK, b_auto - j * draws.RESAMPLE_BLOCK), n))

    c_idx, _, _ = cpu(indices)
    print(f"  floor of a grid equal to the reference: the resample indices alone of {len(ns)} streams (N = "
          f"{', '.join(map(str, ns))}) to B = {b_auto:,}: {c_idx:.2f} s")


def precise_check(run, dec, ref, labels, alphas, draws: int = 200_000) -> str:
    """For each decision of ``run`` that differs from the reference's: a precise estimate of the cell's p-value
    (``draws`` tilted draws, seeded apart) in place of the run's, and whether the corrected decision is then
    the run's or the reference's."""
    from headstats.stats.corrections import correct_rows_within_families, reject

    cells = sorted({(int(j), int(g)) for _, j, g in zip(*np.nonzero(dec != ref))})
    if not cells:
        return "no differing decision to check"
    precise = run.p.copy()
    for j, g in cells:
        rows, _, stream = next(b for b in run.streams if g in b[0])
        (cell,) = stream.tilted_cells([int(np.flatnonzero(rows == g)[0])], [j], [(2026, j, g)])
        cell.draw(draws)
        precise[j, g] = cell.estimate
    now = np.stack([reject(correct_rows_within_families(precise, labels, correction="holm"), a) for a in alphas])
    differing = dec != ref
    grid_side = int((differing & (now == dec)).sum())
    return (f"the {int(differing.sum())} differing decisions, each cell's p-value estimated again from {draws:,} "
            f"tilted draws: the grid's decision {grid_side}, the reference's {int(differing.sum()) - grid_side}")


def planted_family(m: int, n: int, rng) -> "pd.DataFrame":
    """One family of m heads whose mean scores straddle tau = 3 (2 to 4.5, gamma with sd 1, n inputs)."""
    import pandas as pd

    means = rng.uniform(2.0, 4.5, m)
    values = rng.gamma(means[:, None] ** 2, 1.0 / means[:, None], size=(m, n))
    return pd.DataFrame({"model": "m", "dataset": "d", "sentence_id": np.tile(np.arange(n), m),
                         "layer": np.repeat(np.arange(m) // 12, n), "head": np.repeat(np.arange(m) % 12, n),
                         "role": "local", "score": values.ravel()})


def decision_error(replicates: int = 20, m: int = 300, n: int = 40, seed: int = 0) -> dict:
    """The sequential bootstrap against the full-B one on ``replicates`` planted families (Holm, alpha 0.05).

    Returns the counts: ``cells``, ``same`` (same decision), ``stopped`` (stopped before B), ``stopped_differ``
    (stopped with another decision than the full-B run's), ``draws`` (share of the full-B draws spent).
    """
    from headstats.stats.onesample import test_roles

    rng = np.random.default_rng(seed)
    out = {"cells": 0, "same": 0, "stopped": 0, "stopped_differ": 0, "draws": 0.0, "assigned": 0}
    spent = total = 0.0
    for r in range(replicates):
        scores = planted_family(m, n, rng)
        seq = test_roles(scores, test="bootstrap", seed=r)
        full = test_roles(scores, test="bootstrap", seed=r, sequential=False)
        b = int(full["n_resamples"].max())
        drawn = seq["n_resamples"].to_numpy(dtype=float)
        same = seq["reject"].to_numpy() == full["reject"].to_numpy()
        stopped = drawn < b
        out["cells"] += m
        out["same"] += int(same.sum())
        out["stopped"] += int(stopped.sum())
        out["stopped_differ"] += int((stopped & ~same).sum())
        out["assigned"] += int(full["reject"].sum())
        spent += drawn.sum()
        total += b * m
    out["draws"] = spent / total
    return out


def print_decision_error(replicates: int, m: int, n: int) -> None:
    c, w, out = cpu(lambda: decision_error(replicates, m, n))
    print(f"decision error of the sequential bootstrap, {replicates} planted families of {m} heads x {n} inputs "
          f"(Holm, alpha 0.05, means 2 to 4.5 around tau = 3), {c:.0f} s CPU:")
    print(f"  {out['cells']:,} cells, {out['assigned']:,} assigned by the full-B run; same decision: {out['same']:,} "
          f"({out['same'] / out['cells']:.2%}); stopped early: {out['stopped']:,} "
          f"({out['stopped'] / out['cells']:.1%}), of which with another decision: {out['stopped_differ']}; "
          f"draws spent: {out['draws']:.1%} of the full-B run's")


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
    parser.add_argument("--replicates", type=int, default=20, help="families of the decision-error simulation")
    parser.add_argument("--no-sensitivity", action="store_true",
                        help="quickstart-like comparison without the tau grid and robustness tables")
    parser.add_argument("--grid-b", type=int, nargs="*", default=[],
                        help="smaller B at which the bootstrap's tau grid is also run (--only grid)")
    parser.add_argument("--only", choices=["full", "quickstart", "grid", "error", "walsh"], default=None,
                        help="run one part only")
    args = parser.parse_args(argv)
    if args.smoke:
        args.n, args.repeats, args.replicates = 200, 1, 2
    print(f"load average before: {', '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} CPUs)")
    parts = {
        "full": lambda: full_statistics(args.n, args.repeats),
        "quickstart": lambda: quickstart_bootstrap(smoke=args.smoke, repeats=args.repeats,
                                                   sensitivity=not (args.no_sensitivity or args.smoke)),
        "grid": lambda: grid_options(smoke=args.smoke, grid_b=args.grid_b),
        "error": lambda: print_decision_error(args.replicates, *((60, 25) if args.smoke else (300, 40))),
        "walsh": lambda: walsh_bound(args.repeats, **({"n": 1_000, "n_old": 300} if args.smoke else {})),
    }
    for name, part in parts.items():
        if args.only in (None, name):
            part()
    print(f"load average after: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
