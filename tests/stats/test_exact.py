"""Exact tests over heads and seeds (headstats.stats.exact) against scipy and hand-counted planted grids."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from headstats.stats.exact import layer_sum_counts, position_test, range_test, share_test, signflip_claim


@pytest.mark.parametrize("table", [(0, 24, 4, 48), (1, 24, 7, 48), (5, 12, 2, 20), (3, 3, 0, 9)])
def test_share_test_is_fishers_exact_test(table):
    k_a, n_a, k_b, n_b = table
    res = share_test(k_a, n_a, k_b, n_b)
    grid = [[k_a, n_a - k_a], [k_b, n_b - k_b]]
    assert res.p_less == pytest.approx(sps.fisher_exact(grid, alternative="less").pvalue, rel=1e-12)
    assert res.p_greater == pytest.approx(sps.fisher_exact(grid, alternative="greater").pvalue, rel=1e-12)


def test_share_test_floor_and_detectable_count_on_the_issue_table():
    # 0 of 24 late heads against 4 of 48 others: P(all 4 multi-role heads fall among the 48) = C(48,4) / C(72,4)
    res = share_test(0, 24, 4, 48)
    assert res.p_less == pytest.approx(math.comb(48, 4) / math.comb(72, 4), rel=1e-12)
    # the most extreme table with these margins is the observed one (0 late), so the floor is p_less itself
    assert res.floor_less == pytest.approx(res.p_less, rel=1e-12)
    assert res.detect_less is None  # no split of 4 multi-role heads reaches 0.025
    # 1 of 24 against 7 of 48: P(X <= 1), X hypergeometric (72 heads, 8 multi-role, 24 drawn)
    hand = sum(math.comb(8, x) * math.comb(64, 24 - x) for x in (0, 1)) / math.comb(72, 24)
    assert share_test(1, 24, 7, 48).p_less == pytest.approx(hand, rel=1e-12)
    big = share_test(2, 24, 30, 48, level=0.025)
    assert big.detect_less is not None
    assert sps.fisher_exact([[big.detect_less, 24 - big.detect_less], [32 - big.detect_less, 16 + big.detect_less]],
                            alternative="less").pvalue <= 0.025
    assert sps.fisher_exact([[big.detect_less + 1, 23 - big.detect_less], [31 - big.detect_less,
                                                                          17 + big.detect_less]],
                            alternative="less").pvalue > 0.025


def test_share_test_odds_ratio_is_scipys_conditional_one():
    res = share_test(5, 12, 2, 20, confidence=0.9)
    ref = sps.contingency.odds_ratio([[5, 7], [2, 18]], kind="conditional")
    ci = ref.confidence_interval(0.9)
    assert (res.odds_ratio, res.ci_low, res.ci_high) == pytest.approx((ref.statistic, ci.low, ci.high), rel=1e-9)


def test_layer_sum_counts_add_up_to_the_binomial_coefficient():
    layers = np.repeat(np.arange(12), 12)
    for k in (1, 5, 72):
        assert layer_sum_counts(layers, k).sum() == pytest.approx(math.comb(144, k), rel=1e-12)


def test_position_test_on_a_hand_counted_grid():
    # 3 layers x 2 heads; the held heads sit in layers 0, 0, 1. Of the C(6, 3) = 20 subsets of three heads,
    # those with layer sum <= 1 are {0, 0, 1a} and {0, 0, 1b}: p_lower = 2 / 20; p_upper = P(sum >= 1) = 20 / 20.
    layers = np.array([0, 0, 1, 1, 2, 2])
    held = np.array([True, True, True, False, False, False])
    res = position_test(layers, held)
    assert res.p_lower == pytest.approx(0.1, abs=1e-15)
    assert res.p_upper == pytest.approx(1.0, abs=1e-15)
    assert res.floor_lower == pytest.approx(0.1, abs=1e-15)  # nothing sits lower than 0, 0, 1
    assert res.mean_held - res.mean_all == pytest.approx(1 / 3 - 1)


def test_position_test_equals_full_enumeration_on_an_uneven_grid():
    rng = np.random.default_rng(3)
    layers = rng.integers(0, 5, size=13)
    held = np.zeros(13, bool)
    held[[1, 4, 6, 11]] = True
    obs = layers[held].sum()
    sums = np.array([layers[list(c)].sum() for c in itertools.combinations(range(13), 4)])
    res = position_test(layers, held)
    assert res.p_lower == pytest.approx((sums <= obs).mean(), rel=1e-12)
    assert res.p_upper == pytest.approx((sums >= obs).mean(), rel=1e-12)
    assert res.floor_upper == pytest.approx((sums == sums.max()).mean(), rel=1e-12)


def test_position_test_of_one_head_cannot_go_below_its_layer_share():
    # one head of 72 in layer 0 of 6 layers of 12: the best p is 12 / 72
    res = position_test(np.repeat(np.arange(6), 12), np.eye(72, dtype=bool)[0])
    assert res.p_lower == pytest.approx(12 / 72)
    assert res.floor_lower == pytest.approx(12 / 72)
    # the interval inverts the test: a random head's layer is 0-5 with 1/6 each, so every shift in [-5, 0] keeps
    # both one-sided p-values above 0.025
    assert (res.ci_low, res.ci_high) == (-5.0, 0.0)


def test_position_interval_holds_zero_exactly_when_the_test_does_not_reject():
    # the held heads' layers shifted by d are rejected at 0.025 per side exactly for d outside the interval; in
    # particular 0 is inside unless a one-sided p is below 0.025 (enumerated over every 4-subset of 13 heads)
    rng = np.random.default_rng(5)
    for _ in range(20):
        layers = rng.integers(0, 6, size=13)
        held = np.zeros(13, bool)
        held[rng.choice(13, size=4, replace=False)] = True
        sums = np.array([layers[list(c)].sum() for c in itertools.combinations(range(13), 4)]) / 4
        res = position_test(layers, held, confidence=0.95)
        cdf = np.array([(sums <= v).mean() for v in sums])
        sf = np.array([(sums >= v).mean() for v in sums])
        q_lo, q_hi = sums[cdf >= 0.025].min(), sums[sf >= 0.025].max()  # the null's quantiles, by enumeration
        assert (res.ci_low, res.ci_high) == pytest.approx((res.mean_held - q_hi, res.mean_held - q_lo), abs=1e-12)
        inside = res.ci_low <= 0 <= res.ci_high
        assert inside == (min(res.p_lower, res.p_upper) >= 0.025)


def test_range_test_is_two_one_sided_binomial_tests():
    res = range_test(36, 72, 0.42, 0.88)
    assert res.p_for == pytest.approx(max(sps.binomtest(36, 72, 0.42, alternative="greater").pvalue,
                                          sps.binomtest(36, 72, 0.88, alternative="less").pvalue), rel=1e-12)
    none = range_test(0, 72, 0.42, 0.88)
    assert none.p_for == pytest.approx(1.0)
    assert none.p_against == pytest.approx(2 * sps.binomtest(0, 72, 0.42, alternative="less").pvalue, rel=1e-12)
    ci = sps.binomtest(36, 72).proportion_ci(0.95, method="exact")
    assert (res.ci_low, res.ci_high) == pytest.approx((ci.low, ci.high))
    first, last = res.detect  # the counts whose TOST p is at most 0.025, checked at their edges

    def tost(k):
        return max(sps.binomtest(k, 72, 0.42, alternative="greater").pvalue,
                   sps.binomtest(k, 72, 0.88, alternative="less").pvalue)
    assert tost(first) <= 0.025 < tost(first - 1)
    assert tost(last) <= 0.025 < tost(last + 1)


@pytest.mark.parametrize("values", [[-2, -2, -2], [-2, -2, -3]])
def test_signflip_claim_never_gives_p_zero(values):
    # the issue's seeds: the exact sign-flip p of both is 1/8, where the t-test gave 0 and 0.0099
    res = signflip_claim(values, alternative="less")
    assert res.p_for == pytest.approx(0.125)
    assert res.p_against == pytest.approx(1.0)
    assert res.floor == pytest.approx(0.125)
    assert res.seeds_needed == 6  # 2 / 2^6 = 0.031 < 0.05 <= 2 / 2^5


def test_signflip_bound_inverts_the_exact_sign_flip_test():
    # the one-sided 95 % bound is the smallest shift the one-sided test at 0.05 does not reject: just below it
    # the shifted values give p <= 0.05, at it p > 0.05 (all 2^8 sign patterns)
    from headstats.stats.exact import signflip_bound
    from headstats.stats.seeds import signflip_test

    v = np.array([1.0, 2, 3, -0.5, 4, 5, 2, 1])
    low = signflip_bound(v, alternative="greater")
    assert signflip_test(v - (low - 1e-6), alternative="greater")["p"][0] <= 0.05
    assert signflip_test(v - (low + 1e-6), alternative="greater")["p"][0] > 0.05
    assert 0 < low < v.mean()  # the test rejects 0 (p = 2/256), so does the bound
    assert signflip_bound(-v, alternative="less") == pytest.approx(-low, abs=1e-9)
