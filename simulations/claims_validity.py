"""Verdicts reachable and valid in every design (issue 32; docs/statistics.md, sections 11 and 12).

    PYTHONPATH=src python -m simulations.claims_validity      # about 5 CPU-minutes

Prints five tables:

1. existence claims (``previous_token_heads``): 24 previous-token heads exactly at H0 (uniform p), 48 heads of
   another hypothesis far from theirs (p < 1e-8), the protocol's per-head family spanning all 72. The old rule
   (the smallest p corrected by the per-head correction over the whole family) against the new one (Holm over
   the 24 heads' uncorrected p, :func:`headstats.stats.existence.some_unit_p`), under holm, fdr_bh and none;
2. "some head beats every baseline": 20 heads, two baselines; heads 0-9 beat baseline a (p = 1e-9) and tie b
   (uniform p), heads 10-19 the reverse, so no head beats both (H0). Old: Holm per baseline, then max over
   baselines and min over heads; new: max over baselines of the uncorrected p, then Holm over heads;
3. two-way design floors: ``few_multi_role_late`` with k multi-role heads placed at random among 72 heads of a
   6 x 12 model (H0), the rate of a decided verdict (claim p <= 0.05, either direction), and the floors of the
   two directions;
4. the sign-flip test over sentences when every non-zero d is +-1: its exact size at 0.05 under the normal
   approximation and under the binomial law (the exact test now used), n = 3, 9, 12 (sums over the exact law,
   no simulation);
5. the same when every |d| is 5 to 10 (what the analyses counted only up to 4 and left to the normal
   approximation): per draw of the n magnitudes, the size at 0.05 summed over the exact sign-flip law, averaged
   over 500 draws; and the largest gap between the Monte Carlo p-value (99,999 draws) and the exact one over
   those designs' observed sums.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from headstats.stats.claims import claim_p
from headstats.stats.corrections import correct_pvalues
from headstats.stats.exact import share_test
from headstats.stats.existence import beats_every_p, some_unit_p
from headstats.stats.signflip import N_DRAWS, signflip_histogram_test, signflip_law, signflip_pvalues

ALPHA = 0.05


def existence(n_sim: int = 400) -> None:
    print("| per-head correction | old rule: smallest corrected p of the family | new: Holm over the heads of the "
          "claim | simulations |")
    print("|---|---|---|---|")
    rng = np.random.default_rng(32)
    for correction in ("holm", "fdr_bh", "none"):
        old = new = 0
        for _ in range(n_sim):
            prev, other = rng.random(24), rng.random(48) * 1e-8
            corrected = correct_pvalues(np.concatenate([prev, other]), correction, ALPHA)
            old += corrected[:24].min() <= ALPHA
            new += some_unit_p(prev)[0] <= ALPHA
        print(f"| {correction} | {old / n_sim:.3f} | {new / n_sim:.3f} | {n_sim} |")


def every_baseline(n_sim: int = 2000, heads: int = 20) -> None:
    rng = np.random.default_rng(4)
    old = new = 0
    first = np.arange(heads) < heads // 2
    for _ in range(n_sim):
        p = np.column_stack([np.where(first, 1e-9, rng.random(heads)), np.where(first, rng.random(heads), 1e-9)])
        corrected = np.column_stack([multipletests(p[:, b], method="holm")[1] for b in range(2)])
        old += corrected.max(axis=1).min() <= ALPHA
        new += beats_every_p(p)[0] <= ALPHA
    print(f"\n| rule | rejection rate at 0.05 (H0 true) | simulations |\n|---|---|---|\n"
          f"| old: Holm per baseline, max over baselines, min over heads | {old / n_sim:.3f} | {n_sim} |\n"
          f"| new: max over baselines of the uncorrected p, Holm over heads | {new / n_sim:.3f} | {n_sim} |")


def two_way_floors(n_sim: int = 2000) -> None:
    print("\n| multi-role heads (of 72) | floor, claimed direction (fewer late) | floor, other direction | claim "
          "floor (the smaller) | rate of a decided verdict at 0.05 under H0 | simulations |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(7)
    late = np.arange(72) >= 48
    for k in (2, 4, 8, 16):
        decided = 0
        res = None
        for _ in range(n_sim):
            held = np.zeros(72, bool)
            held[rng.choice(72, k, replace=False)] = True
            res = share_test(int(held[late].sum()), 24, int(held[~late].sum()), 48, level=ALPHA / 2)
            decided += claim_p(res.p_less, res.p_greater) <= ALPHA
        f_for, f_against = min(1, 2 * res.floor_less), min(1, 2 * res.floor_greater)
        print(f"| {k} | {f_for:.3g} | {f_against:.3g} | {min(f_for, f_against):.3g} | {decided / n_sim:.4f} | "
              f"{n_sim} |")


def signflip_sizes() -> None:
    print("\n| sentences n (every d = +-1) | size at 0.05, normal approximation | size at 0.05, binomial law "
          "(exact) |")
    print("|---|---|---|")
    for n in (3, 9, 12):
        xs = np.arange(n + 1)
        pmf = sps.binom.pmf(xs, n, 0.5)
        normal = pmf[sps.norm.sf((2 * xs - n) / np.sqrt(n)) <= ALPHA].sum()
        p, _ = signflip_pvalues(2 * xs - n, np.full(n + 1, n), np.column_stack([np.full(n + 1, n)]))
        exact = pmf[p <= ALPHA].sum()
        print(f"| {n} | {normal:.3f} | {exact:.4f} |")


def signflip_sizes_large_d(n_draws: int = 500) -> None:
    print("\n| sentences n (every \\|d\\| in 5..10) | size at 0.05, normal approximation (mean, max over draws) | size "
          "at 0.05, exact law (mean, max) | largest \\|p Monte Carlo - p exact\\| | magnitude draws |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(510)
    for n in (3, 5, 9, 12):
        normal, exact, gap = [], [], 0.0
        for i in range(n_draws):
            magnitudes = rng.integers(5, 11, size=n)
            counts = np.bincount(magnitudes, minlength=11)[1:]
            values, pmf = signflip_law(counts)
            tail = np.cumsum(pmf[::-1])[::-1]  # P(T >= values[j])
            normal.append(pmf[sps.norm.sf(values / np.sqrt((magnitudes ** 2).sum())) <= ALPHA].sum())
            exact.append(pmf[tail <= ALPHA].sum())
            if i < 5:  # Monte Carlo against exact at every value T can take above 0
                for j in np.flatnonzero((pmf > 0) & (values > 0)):
                    mc = signflip_histogram_test(values[j], np.arange(1, 11), counts, n_draws=N_DRAWS, seed=i,
                                                 max_exact_support=0)[0]
                    gap = max(gap, abs(mc - tail[j]))
        print(f"| {n} | {np.mean(normal):.4f}, {np.max(normal):.4f} | {np.mean(exact):.4f}, {np.max(exact):.4f} | "
              f"{gap:.4f} | {n_draws} |")


if __name__ == "__main__":
    existence()
    every_baseline()
    two_way_floors()
    signflip_sizes()
    signflip_sizes_large_d()
