"""The sign-flip test over clusters from counts (headstats.stats.signflip) against exact enumeration of every
sign pattern, scipy's binomial test, and its Monte Carlo law (issue 32, item 5)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sps

from headstats.stats.signflip import signflip_law, signflip_pvalues, signflip_histogram_test


def enumerate_p(d, alternative="greater"):
    d = np.asarray(d, dtype=float)
    d = d[d != 0]
    t = d.sum()
    sums = np.array([np.dot(s, np.abs(d)) for s in itertools.product((-1, 1), repeat=len(d))])
    return {"greater": np.mean(sums >= t - 1e-9), "less": np.mean(sums <= t + 1e-9),
            "two-sided": np.mean(np.abs(sums) >= abs(t) - 1e-9)}[alternative]


def counts_of(d, k=64):
    a = np.abs(np.asarray(d, dtype=int))
    return np.array([[int((a == m).sum()) for m in range(1, k + 1)]])


def test_the_compound_relation_five_sentences_against_none_is_one_in_32():
    # EWT compound: 5 sentences where the head is right and the offset not, none the other way (issue 32):
    # the normal approximation gave 0.0127, the exact sign-flip p is 1/32
    d = [1, 1, 1, 1, 1]
    p, method = signflip_pvalues([5], [5], counts_of(d))
    assert method[0] == "binomial" and p[0] == pytest.approx(1 / 32, rel=1e-12)
    assert sps.norm.sf(5 / np.sqrt(5)) == pytest.approx(0.0127, abs=1e-4)


@pytest.mark.parametrize("n", [3, 9, 12])
@pytest.mark.parametrize("alternative", ["greater", "two-sided"])
def test_every_d_plus_or_minus_one_is_the_binomial_law_equal_to_enumeration(n, alternative):
    rng = np.random.default_rng(n)
    for _ in range(5):
        d = rng.choice([-1, 1], size=n) * 1
        p, method = signflip_pvalues([d.sum()], [(d * d).sum()], counts_of(d), alternative=alternative)
        assert method[0] == "binomial"
        assert p[0] == pytest.approx(enumerate_p(d, alternative), rel=1e-12)


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_one_magnitude_is_scipys_binomial_test(alternative):
    # every |d| = 3 over 200 clusters, 117 positive: T = 3 (2 * 117 - 200) and the sign test of 117 of 200
    t = 3 * (2 * 117 - 200)
    p, method = signflip_histogram_test(t, [3], [200], alternative=alternative)
    assert method == "binomial"
    assert p == pytest.approx(sps.binomtest(117, 200, 0.5, alternative=alternative).pvalue, rel=1e-12)
    p, _ = signflip_pvalues([0], [200], [[200]], alternative="two-sided")  # T = 0: p = 1
    assert p[0] == 1.0


@pytest.mark.parametrize("n", [3, 9, 12])
def test_mixed_magnitudes_are_the_exact_convolution_equal_to_enumeration(n):
    rng = np.random.default_rng(100 + n)
    for _ in range(5):
        d = rng.integers(-4, 5, size=n)
        d[:2] = [3, -2]  # two magnitudes at least
        for alternative in ("greater", "less", "two-sided"):
            p, method = signflip_pvalues([d.sum()], [(d * d).sum()], counts_of(d), alternative=alternative)
            assert method[0] == "exact"
            assert p[0] == pytest.approx(enumerate_p(d, alternative), rel=1e-12)


def test_magnitudes_five_to_ten_were_normal_and_are_exact_now():
    """A planted case with every |d| in 5..10: with |d| counted up to 4 only, it fell to the normal approximation,
    2.2 times too small on 5 sentences; counted up to 64 it is the exact law, the enumeration of the 2^n sign
    patterns."""
    d = np.array([6, 8, 5, 9, 7])
    p, method = signflip_pvalues([d.sum()], [(d * d).sum()], counts_of(d))
    assert method[0] == "exact" and p[0] == pytest.approx(1 / 32, rel=1e-12)  # only the observed pattern
    old, old_method = signflip_pvalues([d.sum()], [(d * d).sum()], counts_of(d, k=4))
    assert old_method[0] == "normal" and old[0] == pytest.approx(sps.norm.sf(35 / np.sqrt(255)), rel=1e-12)
    assert old[0] == pytest.approx(0.0142, abs=1e-4)
    d = np.array([5, 7, -6, 10, 8, 9, -5, 6, 7, 10, -8, 9, 5])
    for alternative in ("greater", "two-sided"):
        p, method = signflip_pvalues([d.sum()], [(d * d).sum()], counts_of(d), alternative=alternative)
        assert method[0] == "exact" and p[0] == pytest.approx(enumerate_p(d, alternative), rel=1e-12)
    assert p[0] == pytest.approx(2 * 148 / 2**13, rel=1e-12)  # 148 of the 8,192 patterns reach T >= 57


def test_the_monte_carlo_law_agrees_with_the_exact_law_where_both_apply():
    rng = np.random.default_rng(7)
    d = rng.integers(-8, 9, size=60)
    d = d[d != 0]
    c = counts_of(d)[0]
    for t, alternative in ((d.sum(), "greater"), (14, "greater"), (-9, "less"), (30, "two-sided")):
        exact, method = signflip_histogram_test(t, np.arange(1, 65), c, alternative=alternative)
        assert method == "exact"
        mc, method = signflip_histogram_test(t, np.arange(1, 65), c, alternative=alternative, n_draws=40_000, seed=3,
                                   max_exact_support=0)
        assert method == "monte_carlo"
        assert abs(mc - exact) < 4 * np.sqrt(exact * (1 - exact) / 40_000) + 1 / 40_001
    # p = (1 + #{T_b >= t}) / (B + 1) with T_b = sum_m m (2 Binomial(c_m, 1/2) - c_m), drawn in one block
    m, cm = np.array([1.0, 2.0, 5.0]), np.array([4, 3, 2])
    x = np.random.default_rng(11).binomial(cm, 0.5, size=(999, 3))
    by_hand = (1 + int((((2 * x - cm) @ m) >= 6).sum())) / 1000
    assert signflip_histogram_test(6, m, cm, n_draws=999, seed=11, max_exact_support=0) == (by_hand, "monte_carlo")
    # never below 1 / (B + 1)
    assert signflip_histogram_test(30, [1, 2], [10, 10], n_draws=99, max_exact_support=0)[0] == 1 / 100


def test_non_integer_magnitudes_are_drawn():
    d = np.array([0.5, 1.25, -0.75, 2.0, 1.5, -0.25, 1.0, 0.5])
    p, method = signflip_histogram_test(d.sum(), *np.unique(np.abs(d), return_counts=True), n_draws=40_000, seed=1)
    exact = enumerate_p(d)
    assert method == "monte_carlo" and abs(p - exact) < 4 * np.sqrt(exact * (1 - exact) / 40_000) + 1 / 40_001


def test_a_difference_beyond_the_counted_magnitudes_is_the_normal_approximation():
    d = np.array([70, 1, -1, 2])  # |d| = 70 > 64: the counts miss it, sum m^2 c_m < sum d^2
    p, method = signflip_pvalues([d.sum()], [(d * d).sum()], counts_of(d))
    assert method[0] == "normal" and p[0] == pytest.approx(sps.norm.sf(72 / np.sqrt(d @ d)), rel=1e-12)
    p, method = signflip_pvalues([d.sum()], [(d * d).sum()], None)  # a table without counts
    assert method[0] == "normal"
    p, method = signflip_pvalues([0.0], [0.0], counts_of([]))
    assert p[0] == 1.0 and method[0] == "none"


@pytest.mark.parametrize("n,size", [(3, 0.0), (9, 0.0195), (12, 0.0193)])
def test_the_size_at_005_of_the_exact_test_is_at_most_alpha(n, size):
    # the normal approximation rejected 0.125 (n = 3), 0.090 (n = 9), 0.073 (n = 12) at 0.05 when every d is
    # +-1 (issue 32); the exact test's size is P(X >= the critical count) under Binomial(n, 1/2), <= 0.05
    law = sps.binom(n, 0.5)
    xs = np.arange(n + 1)
    p, _ = signflip_pvalues(2 * xs - n, np.full(n + 1, n), np.column_stack([np.full(n + 1, n), np.zeros((n + 1, 3))]))
    exact_size = law.pmf(xs)[p <= 0.05].sum()
    assert exact_size == pytest.approx(size, abs=5e-4) and exact_size <= 0.05
    z = (2 * xs - n) / np.sqrt(n)
    normal_size = law.pmf(xs)[sps.norm.sf(z) <= 0.05].sum()
    assert normal_size == pytest.approx({3: 0.125, 9: 0.0898, 12: 0.0730}[n], abs=5e-4)


def test_the_law_is_the_enumeration_sums_to_one_and_is_symmetric():
    values, pmf = signflip_law([2, 1, 0, 1])  # |d| = 1, 1, 2, 4
    assert values[0] == -8 and values[-1] == 8 and pmf.sum() == pytest.approx(1.0) and np.allclose(pmf, pmf[::-1])
    sums = [np.dot(s, [1, 1, 2, 4]) for s in itertools.product((-1, 1), repeat=4)]
    assert np.allclose(pmf, [np.mean(np.equal(sums, v)) for v in values], atol=1e-15)
    # a law too wide to enumerate keeps its far tail: 3,000 clusters of |d| = 1 and 2,000 of |d| = 3
    values, pmf = signflip_law([3000, 0, 2000])
    assert pmf.sum() == pytest.approx(1.0, rel=1e-12)
    var = (values.astype(float) ** 2 * pmf).sum()
    assert var == pytest.approx(3000 + 9 * 2000, rel=1e-12)  # the sign-flip variance sum d^2


def test_no_test_gives_empty_p_values_with_or_without_counts():
    """A data set with no unit for any test (coreference on a corpus without coreference) gives empty arrays:
    it stopped a reduced Clark run with a traceback (reshape of 0 tests into (0, -1))."""
    for counts in (None, np.zeros((0, 3)), []):
        p, method = signflip_pvalues([], [], counts)
        assert p.shape == (0,) and method.shape == (0,)
