"""Accuracy intervals, McNemar's exact test and the dependency table (METHODS 2.3), checked against
statsmodels and scipy and against counts worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar

from headstats.stats.accuracy import paired_exact_test, proportion_interval


def test_wilson_interval_by_formula():
    # Wilson (1927): (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n), p = 8/10
    z, p, n = 1.959963984540054, 0.8, 10
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low, high = proportion_interval([8], [10])
    assert low[0] == pytest.approx((centre - half) / (1 + z * z / n), rel=1e-9)
    assert high[0] == pytest.approx((centre + half) / (1 + z * z / n), rel=1e-9)
    assert np.isnan(proportion_interval([0], [0])[0][0])


def test_paired_exact_test_is_mcnemar_exact():
    # two-sided equals statsmodels' exact McNemar on the 2x2 table; one-sided is P(X >= b), X ~ Bin(b + c, 1/2)
    for b, c in [(9, 2), (3, 3), (0, 5), (12, 0)]:
        table = [[40, b], [c, 30]]
        assert paired_exact_test(b, c, alternative="two-sided")[0] == pytest.approx(mcnemar(table, exact=True).pvalue)
    assert paired_exact_test(9, 2)[0] == pytest.approx(sum(math.comb(11, k) for k in range(9, 12)) / 2**11)
    assert paired_exact_test(0, 0)[0] == 1.0


def test_cluster_signflip_test_enumerates_the_sentences_signs():
    from itertools import product

    from headstats.stats.accuracy import cluster_signflip_test

    d = [2.0, 1.0, -1.0, 3.0, 0.0]  # the 0 sentence changes nothing
    sums = [sum(s * x for s, x in zip(signs, d[:4])) for signs in product((1, -1), repeat=4)]
    assert cluster_signflip_test(d) == pytest.approx(sum(v >= 5 for v in sums) / 16)  # 2/16
    assert cluster_signflip_test(d, alternative="two-sided") == pytest.approx(sum(abs(v) >= 5 for v in sums) / 16)
    assert cluster_signflip_test([0, 0]) == 1.0
    # 40 sentences of d = 1: the binomial law (the sign test), exact, 2^-40 (a Monte Carlo floor was 1 / (B + 1))
    assert cluster_signflip_test(np.ones(40), n_resamples=999) == pytest.approx(2.0**-40, rel=1e-12)
    # 40 distinct magnitudes that are not integers: Monte Carlo, p = (1 + hits) / (B + 1), never 0
    assert cluster_signflip_test(np.linspace(0.1, 4, 40), n_resamples=999) == pytest.approx(1 / 1000)


def test_cluster_bootstrap_interval_resamples_whole_sentences():
    from headstats.stats.accuracy import cluster_bootstrap_interval

    # identical sentences: every resample has the same ratio
    assert cluster_bootstrap_interval([3, 3, 3], [4, 4, 4]) == (0.75, 0.75)
    rng = np.random.default_rng(0)
    n = rng.integers(5, 20, 60)
    correct = rng.binomial(n, 0.7)
    low, high = cluster_bootstrap_interval(correct, n, confidence=0.9, n_resamples=4999)
    assert low < correct.sum() / n.sum() < high
    # the by-hand bootstrap with the same generator gives the same percentiles
    idx = np.random.default_rng(0).integers(0, 60, size=(4999, 60))
    ratios = correct[idx].sum(1) / n[idx].sum(1)
    assert (low, high) == (np.quantile(ratios, 0.05), np.quantile(ratios, 0.95))


def test_signflip_normal_test_has_the_sign_flip_variance_and_approaches_the_exact_test():
    from itertools import product

    from headstats.stats.accuracy import cluster_signflip_test, signflip_normal_test

    d = np.array([3.0, -1.0, 2.0, 2.0, 0.0, 1.0])
    sums = np.array([np.dot(signs, d) for signs in product((1, -1), repeat=len(d))])
    assert sums.mean() == 0 and sums.var() == pytest.approx((d * d).sum())  # the variance is exactly sum d^2
    assert signflip_normal_test(d.sum(), (d * d).sum())[()] == pytest.approx(sps.norm.sf(7 / np.sqrt(19)))
    assert signflip_normal_test(0.0, 0.0)[()] == 1.0
    rng = np.random.default_rng(2)
    d = rng.integers(-3, 5, size=300).astype(float)
    exact = cluster_signflip_test(d, n_resamples=199_999)
    assert signflip_normal_test(d.sum(), (d * d).sum())[()] == pytest.approx(exact, abs=0.01)


def test_cluster_ratio_interval_is_the_sandwich_over_sentences():
    from headstats.stats.accuracy import cluster_ratio_interval

    rng = np.random.default_rng(1)
    n = rng.integers(3, 15, 80).astype(float)
    c = rng.binomial(n.astype(int), rng.uniform(0.3, 0.9, 80)).astype(float)
    p = c.sum() / n.sum()
    se = np.sqrt(80 / 79 * ((c - p * n) ** 2).sum()) / n.sum()
    low, high = cluster_ratio_interval(c.sum(), n.sum(), (c * c).sum(), (c * n).sum(), (n * n).sum(), 80,
                                       confidence=0.9)
    assert (low, high) == (pytest.approx(p - 1.6448536269514722 * se), pytest.approx(p + 1.6448536269514722 * se))
    # one word per sentence: the Wald interval of a proportion (times J / (J - 1))
    x = (rng.random(200) < 0.7).astype(float)
    lo, hi = cluster_ratio_interval(x.sum(), 200, x.sum(), x.sum(), 200, 200)
    wald = 1.959963984540054 * np.sqrt(x.mean() * (1 - x.mean()) / 200 * 200 / 199)
    assert (lo, hi) == (pytest.approx(x.mean() - wald), pytest.approx(x.mean() + wald))


