"""The sign-flip test over clusters from counts (headstats.stats.signflip) against exact enumeration of every
sign pattern (issue 32, item 5)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sps

from headstats.stats.signflip import signflip_law, signflip_pvalues


def enumerate_p(d, alternative="greater"):
    d = np.asarray(d, dtype=float)
    d = d[d != 0]
    t = d.sum()
    sums = np.array([np.dot(s, np.abs(d)) for s in itertools.product((-1, 1), repeat=len(d))])
    return np.mean(sums >= t - 1e-9) if alternative == "greater" else np.mean(np.abs(sums) >= abs(t) - 1e-9)


def counts_of(d, k=4):
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


@pytest.mark.parametrize("n", [3, 9, 12])
def test_mixed_magnitudes_are_the_exact_convolution_equal_to_enumeration(n):
    rng = np.random.default_rng(100 + n)
    for _ in range(5):
        d = rng.integers(-4, 5, size=n)
        d[0] = 3  # at least one |d| > 1
        for alternative in ("greater", "two-sided"):
            p, method = signflip_pvalues([d.sum()], [(d * d).sum()], counts_of(d), alternative=alternative)
            assert method[0] == "exact"
            assert p[0] == pytest.approx(enumerate_p(d, alternative), rel=1e-12)


def test_a_difference_beyond_the_counted_magnitudes_is_the_normal_approximation():
    d = np.array([7, 1, -1, 2])
    p, method = signflip_pvalues([d.sum()], [(d * d).sum()], counts_of(d))
    assert method[0] == "normal" and p[0] == pytest.approx(sps.norm.sf(9 / np.sqrt(55)), rel=1e-12)
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


def test_the_law_sums_to_one_and_is_symmetric():
    pmf, off = signflip_law([2, 1, 0, 1])
    assert pmf.sum() == pytest.approx(1.0) and np.allclose(pmf, pmf[::-1]) and off == 2 + 2 + 4


def test_no_test_gives_empty_p_values_with_or_without_counts():
    """A data set with no unit for any test (coreference on a corpus without coreference) gives empty arrays:
    it stopped a reduced Clark run with a traceback (reshape of 0 tests into (0, -1))."""
    from headstats.stats.signflip import signflip_pvalues

    for counts in (None, np.zeros((0, 3)), []):
        p, method = signflip_pvalues([], [], counts)
        assert p.shape == (0,) and method.shape == (0,)
