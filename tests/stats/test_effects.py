"""Tests of headstats.stats.effects: each function equals pingouin's own (the Bayes factor where pingouin's holds)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pingouin
import pytest

from headstats.stats.effects import (
    bayes_factor_two_sided,
    n_for_power_greater,
    power_ttest_greater,
)


def test_power_matches_pingouin_scalar_calls():
    d = np.array([0.05, 0.2, 0.5, 1.0, 2.0])
    n = np.array([1000, 50, 20, 8, 3])
    ours = power_ttest_greater(d, n, alpha=0.01)
    for di, ni, p in zip(d, n, ours, strict=True):
        ref = pingouin.power_ttest(d=di, n=ni, alpha=0.01, contrast="one-sample", alternative="greater")
        assert p == pytest.approx(ref, rel=1e-12)  # matches pingouin.power_ttest


def test_power_documented_example():
    # pingouin's docstring: power_ttest(d=0.5, n=20, alternative="greater") = 0.4634 (two-samples contrast);
    # one-sample, one-sided, n = 20, d = 0.5 is 0.6951 (G*Power)
    assert power_ttest_greater(np.array([0.5]), np.array([20]), alpha=0.05)[0] == pytest.approx(0.6951, abs=1e-4)


def test_power_nan_where_undefined():
    out = power_ttest_greater(np.array([np.nan, 0.3, 0.3]), np.array([10, 1, np.nan]), alpha=0.05)
    assert np.isnan(out).all()


@pytest.mark.parametrize("alpha", [0.05, 0.001])
def test_n_for_power_is_ceiling_of_pingouin_solution(alpha):
    d = np.array([0.02, 0.1, 0.3, 0.5, 0.8, 1.5, 3.0])
    ours = n_for_power_greater(d, power=0.8, alpha=alpha)
    for di, ni in zip(d, ours, strict=True):
        ref = pingouin.power_ttest(d=di, power=0.8, alpha=alpha, contrast="one-sample", alternative="greater")
        assert ni == max(2.0, math.ceil(ref))  # matches ceil(pingouin.power_ttest(..., n=None))


def test_n_for_power_known_value_and_nans():
    # d = 0.5, 80 % power, one-sided 5 %: n = 26.14 -> 27 (G*Power, one-sample t)
    assert n_for_power_greater(np.array([0.5]), power=0.8, alpha=0.05)[0] == 27
    out = n_for_power_greater(np.array([0.0, -0.4, np.nan, 1e-5]), power=0.8, alpha=0.05)
    assert np.isnan(out).all()  # d <= 0, undefined, or > 1e7 inputs needed


def test_bayes_factor_matches_pingouin_and_handles_huge_t():
    t = np.array([0.5, 2.0, -3.0, 5.0])
    n = np.array([20, 30, 40, 100])
    ours = bayes_factor_two_sided(t, n)
    for ti, ni, b in zip(t, n, ours, strict=True):
        assert b == pytest.approx(pingouin.bayesfactor_ttest(ti, ni), rel=1e-10)  # matches pingouin.bayesfactor_ttest
    huge = bayes_factor_two_sided(np.array([200.0, np.nan]), np.array([1000, 10]))
    assert huge[0] == np.inf and np.isnan(huge[1])  # pingouin raises ZeroDivisionError here


def _jzs_bf10_mpmath(t: float, n: int, r: float = 0.707):
    """BF10 of the JZS formula (Rouder et al. 2009) by 50-digit quadrature over g, the range split at every
    power of ten so that the integrand's peak is never stepped over."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    nu, t, r = n - 1, mp.mpf(t), mp.mpf(r)

    def integrand(g):
        s = 1 + n * g * r ** 2
        prior = (2 * mp.pi) ** -0.5 * g ** -1.5 * mp.e ** (-1 / (2 * g))  # inverse-gamma(1/2, 1/2)
        return s ** -0.5 * (1 + t ** 2 / (s * nu)) ** (-(nu + 1) / mp.mpf(2)) * prior

    numerator = mp.quad(integrand, [0] + [mp.mpf(10) ** k for k in range(-3, 16)] + [mp.inf])
    return float(numerator / (1 + t ** 2 / nu) ** (-(nu + 1) / mp.mpf(2)))


@pytest.mark.parametrize("t, n", [(-618.67, 3), (-1968.3, 3), (-1e4, 4), (300.0, 5), (-100.0, 3), (2.0, 30),
                                  (40.0, 100)])
def test_bayes_factor_equals_50_digit_quadrature_where_pingouin_fails(t, n):
    """Few inputs and a huge t (a head whose scores barely vary): pingouin's quadrature over g gives -0.64 at
    (t, N) = (-619, 3) and 1,577 instead of 18,803,484 at (-10,000, 4); the log-space sum is right everywhere."""
    assert bayes_factor_two_sided(np.array([t]), np.array([n]))[0] == pytest.approx(_jzs_bf10_mpmath(t, n), rel=1e-10)


def test_bayes_factor_is_positive_and_finite_or_inf_over_a_wide_range():
    rng = np.random.default_rng(0)
    t = rng.choice([-1.0, 1.0], 300) * 10 ** rng.uniform(-3, 6, 300)
    n = rng.integers(2, 5000, 300)
    bf = bayes_factor_two_sided(t, n)
    assert ((bf > 0) & ~np.isnan(bf)).all()
    # the same |t| gives the same factor (two-sided), and it grows with |t| at a fixed N
    assert np.array_equal(bayes_factor_two_sided(-t, n), bf)
    grid = bayes_factor_two_sided(np.linspace(0, 50, 51), np.full(51, 20))
    assert (np.diff(grid) > 0).all()


def test_bayes_factor_at_extreme_t_neither_overflows_nor_warns():
    """Every term is a logarithm, so a t near the largest float (a head whose sd is 1e-300) is fine: with one degree
    of freedom BF10 grows only like ln t (the Cauchy tails of both hypotheses), and with more it overflows to inf."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bf = bayes_factor_two_sided(np.array([1e300, -1e300, 1e300, 1e-300, 0.0]), np.array([2, 2, 50, 5, 5]))
    assert 500 < bf[0] < 600 and bf[1] == bf[0] and bf[2] == np.inf
    assert bf[3] == pytest.approx(bayes_factor_two_sided(np.array([0.0]), np.array([5]))[0], rel=1e-12) == bf[4]


def test_bayes_factor_equals_cauchy_prior_integral():
    # JZS = Cauchy(0, r) prior on delta: BF10 = int nct.pdf(t; N-1, delta sqrt(N)) cauchy.pdf(delta; r) / t.pdf
    from scipy import integrate
    from scipy import stats as sps

    t, n, r = 2.0, 30, 0.707
    num = integrate.quad(lambda dl: sps.nct.pdf(t, n - 1, dl * math.sqrt(n)) * sps.cauchy.pdf(dl, scale=r),
                         -np.inf, np.inf)[0]
    assert bayes_factor_two_sided(np.array([t]), np.array([n]))[0] == pytest.approx(num / sps.t.pdf(t, n - 1), rel=1e-4)


def test_effect_sizes_hand_values_and_pingouin():
    from headstats.stats.effects import cohen_d, cohen_g, rank_biserial

    # d = (3 - 2) / sqrt(2.5) for 1..5 vs tau 2; NaN where sd is 0 or undefined
    assert cohen_d(np.array([3.0, 3.0, 3.0]), np.array([math.sqrt(2.5), 0.0, np.nan]), 2.0)[0] == pytest.approx(
        1 / math.sqrt(2.5))
    assert np.isnan(cohen_d(np.array([3.0, 3.0]), np.array([0.0, np.nan]), 2.0)).all()
    # T+ = 8 of total 10 -> (8 - 2) / 10; n' = 0 -> NaN
    assert rank_biserial(np.array([8.0, 0.0]), np.array([4, 0])).tolist()[0] == pytest.approx(0.6)
    assert np.isnan(rank_biserial(0.0, 0))
    x = np.array([3.4, 2.2, 4.1, 3.9, 5.2, 2.6, 3.3, 4.8, 3.05, 3.7])
    rbc = pingouin.wilcoxon(x - 3.0, alternative="greater", correction=False)["RBC"].iloc[0]
    from scipy import stats as sps

    t_plus = sps.wilcoxon(x - 3.0, alternative="greater").statistic
    assert rank_biserial(t_plus, 10) == pytest.approx(rbc)  # matches pingouin.wilcoxon RBC
    assert cohen_g(np.array([3, 0]), np.array([4, 0]))[0] == 0.25 and np.isnan(cohen_g(0, 0))


def test_effect_size_below_the_sd_floor_is_not_reported():
    from headstats.stats.effects import EFFECT_SD_FLOOR, cohen_d
    from headstats.stats.onesample import t_test

    # issue 20: a head with sd 1.7e-5 got Cohen's d of -58,038
    assert np.isnan(cohen_d(0.9, 1.7e-5, 3.0))
    assert cohen_d(0.9, EFFECT_SD_FLOOR, 3.0) == pytest.approx(-2.1 / EFFECT_SD_FLOOR)
    assert cohen_d(0.9, 1.7e-5, 3.0, sd_floor=0) == pytest.approx(-2.1 / 1.7e-5)
    x = np.array([[1.0, 1.00001, 0.99999, 1.0], [1.0, 2.0, 3.0, 4.0]])
    res = t_test(x, tau=3.0, confidence=0.95)
    assert np.isnan(res.effect_size[0]) and res.note[0].startswith("sd below 0.001")
    assert res.effect_size[1] == pytest.approx((2.5 - 3.0) / np.std(x[1], ddof=1))


def test_power_is_pingouins_to_the_bit_and_imports_no_pingouin():
    """The same scipy calls as ``pingouin.power_ttest``; a run's statistics never import pingouin (which imports
    seaborn and matplotlib)."""
    import subprocess
    import sys

    d, n = np.array([0.1, 0.5, 1.3, 2.0]), np.array([5, 20, 40, 300])
    ref = pingouin.power_ttest(d=d, n=n, alpha=0.003, contrast="one-sample", alternative="greater")
    assert np.array_equal(power_ttest_greater(d, n, alpha=0.003), ref)
    code = ("import sys, numpy as np; from headstats.stats import effects as e; "
            "e.power_ttest_greater(np.array([0.5]), np.array([20]), alpha=0.05); "
            "e.n_for_power_greater(np.array([0.5]), power=0.8, alpha=0.05); "
            "e.bayes_factor_two_sided(np.array([2.0]), np.array([30])); print('pingouin' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
