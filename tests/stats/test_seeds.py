"""Seeds as replicates (headstats.stats.seeds) against scipy and statsmodels, and on planted data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import DescrStatsW

from headstats.stats.seeds import (
    fit_variance_prior,
    margin_for,
    moderated_t_over_seeds,
    margin_tests,
    seeds_needed,
    signflip_floor,
    signflip_over_seeds,
    signflip_test,
    slope_over_seeds,
    t_over_seeds,
)


@pytest.fixture
def planted():
    """5 seeds x 40 cells: cells 3, 17, 30 moved by +1, -0.8, +0.6; every seed adds N(0, 0.05^2) noise."""
    rng = np.random.default_rng(7)
    truth = np.zeros(40)
    truth[[3, 17, 30]] = [1.0, -0.8, 0.6]
    return truth, truth[None, :] + rng.normal(0, 0.05, size=(5, 40))


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_t_over_seeds_is_scipy_ttest_1samp(planted, alternative):
    _, values = planted
    res = t_over_seeds(values, mu=0.1, alternative=alternative, confidence=0.9)
    ref = sps.ttest_1samp(values, 0.1, alternative=alternative)
    np.testing.assert_allclose(res["statistic"], ref.statistic)
    np.testing.assert_allclose(res["p"], ref.pvalue)
    two = sps.ttest_1samp(values, 0.1).confidence_interval(0.9)
    np.testing.assert_allclose(res["ci_low"], two.low)
    np.testing.assert_allclose(res["ci_high"], two.high)
    assert (res["dof"] == 4).all()


def test_t_over_seeds_leaves_nan_seeds_out_and_handles_zero_spread():
    values = np.array([[1.0, 2.0, 0.0, 1.0], [2.0, 2.0, 0.0, np.nan], [4.0, 2.0, 0.0, np.nan]])
    res = t_over_seeds(values)
    ref = sps.ttest_1samp([1.0, 2.0, 4.0], 0.0)
    assert res["p"][0] == pytest.approx(ref.pvalue)
    # sd = 0 (all seeds moved by exactly 2, or all exactly at mu): t undefined, p NaN, never 0 (the sd = 0 rule)
    assert np.isnan(res["statistic"][1]) and np.isnan(res["p"][1])
    assert np.isnan(res["p"][2])
    assert np.isnan(res["p"][3]) and res["n_seeds"][3] == 1


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_signflip_is_scipy_permutation_test_and_never_below_its_floor(planted, alternative):
    _, values = planted
    got = signflip_over_seeds(values[:, :8], mu=0.05, alternative=alternative)
    ref = [sps.permutation_test((values[:, j] - 0.05,), np.mean, permutation_type="samples", n_resamples=np.inf,
                                alternative=alternative).pvalue for j in range(8)]
    np.testing.assert_allclose(got, ref)
    assert got.min() >= signflip_floor(5, alternative)
    assert signflip_floor(3) == 0.25 and signflip_floor(3, "greater") == 0.125


def test_seeds_needed_is_the_first_k_whose_floor_is_below_the_corrected_level():
    # Holm over 720 tests at 0.05: the smallest p must be < 0.05/720 = 6.9e-5; 2/2^15 = 6.1e-5 is the first
    assert seeds_needed(alpha=0.05, m=720, correction="holm") == 15
    assert signflip_floor(14) >= 0.05 / 720 > signflip_floor(15)
    assert seeds_needed(alpha=0.05, m=1, correction="none") == 6  # 2/2^6 = 0.031 < 0.05 <= 2/2^5
    assert seeds_needed(alpha=0.05, m=720, correction="holm", alternative="greater") == 14


def test_margin_tests_are_the_one_sided_t_tests_and_statsmodels_tost(planted):
    _, values = planted
    delta = margin_for(np.full(40, 2.0), min_change=0.25, scale="share")  # 0.5 for every cell
    assert (delta == 0.5).all()
    res = margin_tests(values, delta)
    for j in range(40):
        v = values[:, j]
        up = sps.ttest_1samp(v, 0.5, alternative="greater").pvalue
        down = sps.ttest_1samp(v, -0.5, alternative="less").pvalue
        assert res["p_exceeds"][j] == pytest.approx(min(1.0, 2 * min(up, down)))
        assert res["p_equivalent"][j] == pytest.approx(DescrStatsW(v).ttost_mean(-0.5, 0.5)[0])


def test_planted_changes_are_found_and_the_rest_shown_unchanged(planted):
    """The three planted cells exceed the margin 0.3 after Holm; every other cell is within it (TOST, Holm)."""
    truth, values = planted
    p = t_over_seeds(values)["p"]
    rejected = multipletests(p, alpha=0.05, method="holm")[0]
    assert set(np.flatnonzero(rejected)) == {3, 17, 30}
    res = margin_tests(values, 0.3)
    exceeds = multipletests(res["p_exceeds"], alpha=0.05, method="holm")[0]
    unchanged = multipletests(res["p_equivalent"], alpha=0.05, method="holm")[0]
    assert set(np.flatnonzero(exceeds)) == {3, 17, 30}
    assert set(np.flatnonzero(unchanged)) == set(range(40)) - {3, 17, 30}


def test_slope_over_seeds_is_linregress_per_seed_then_t_over_seeds():
    rng = np.random.default_rng(3)
    layers = np.arange(6)
    values = 0.02 * layers[None, :] + rng.normal(0, 0.01, size=(4, 6))
    res = slope_over_seeds(values)
    slopes = [sps.linregress(layers, row).slope for row in values]
    np.testing.assert_allclose(res["slopes"], slopes)
    assert res["p"] == pytest.approx(sps.ttest_1samp(slopes, 0.0, alternative="greater").pvalue)
    assert res["p"] < 0.01  # the planted trend


def test_seed_claims_never_rest_on_p_zero():
    """Issue 20: net changes -2, -2, -2 over three seeds gave p = 0; -2, -2, -3 gave 0.0099. The exact
    sign-flip p-value of both is 1/8 one-sided (its floor), and the plain t of the first is NaN."""
    net = np.array([[-2.0, -2.0], [-2.0, -2.0], [-2.0, -3.0]])
    t = t_over_seeds(net, alternative="less")
    assert np.isnan(t["p"][0])
    assert t["p"][1] == pytest.approx(sps.ttest_1samp([-2.0, -2.0, -3.0], 0.0, alternative="less").pvalue)
    sf = signflip_test(net, alternative="less")
    np.testing.assert_array_equal(sf["p"], [0.125, 0.125])
    np.testing.assert_array_equal(sf["floor"], [0.125, 0.125])
    np.testing.assert_array_equal(sf["n_seeds"], [3, 3])
    np.testing.assert_allclose(sf["mean"], [-2.0, -7 / 3])


#: 8 cells x 4 seeds, and what inmoose 0.9.1's limma port gives on them:
#: ``fit = eBayes(lmFit(pd.DataFrame(D), pd.DataFrame({"Intercept": np.ones(4)})))`` (computed once; inmoose
#: builds C++ extensions and pulls anndata, so it is not a test dependency). Row 4: all seeds equal.
LIMMA_D = np.array([[0.12, 0.31, -0.05, 0.22], [-0.4, -0.35, -0.52, -0.41], [0.02, -0.11, 0.07, 0.01],
                    [1.1, 0.2, 0.6, 0.9], [-2.0, -2.0, -2.0, -2.0], [0.05, 0.04, 0.06, 0.05],
                    [0.3, -0.2, 0.1, -0.4], [0.0, 0.25, -0.1, 0.15]])
LIMMA_DF_PRIOR, LIMMA_S2_PRIOR = 0.4563024201718563, 0.00016342473528363821
LIMMA_T = [2.0861779148098920e+00, -1.2553818440293611e+01, -7.0168568801960554e-02, 3.8372472934266160e+00,
           -8.6115351352259290e+02, 1.1219627910726368e+01, -3.4518430304845060e-01, 1.0351538168535244e+00]
LIMMA_P = [1.1617726331353344e-01, 5.2652510984555075e-04, 9.4792700621372139e-01, 2.4207759743689779e-02,
           2.4428495840272486e-10, 7.7049169652930048e-04, 7.4991739748751396e-01, 3.6751450676077890e-01]


def test_moderated_t_equals_limma_ebayes():
    got = moderated_t_over_seeds(LIMMA_D.T)
    assert got["df_prior"] == pytest.approx(LIMMA_DF_PRIOR, rel=1e-12)
    assert got["s2_prior"] == pytest.approx(LIMMA_S2_PRIOR, rel=1e-12)
    np.testing.assert_allclose(got["statistic"], LIMMA_T, rtol=1e-11)
    np.testing.assert_allclose(got["p"], LIMMA_P, rtol=1e-10)
    np.testing.assert_allclose(got["dof"], LIMMA_DF_PRIOR + 3, rtol=1e-12)
    assert np.isfinite(got["p"][4]) and got["p"][4] > 0  # all seeds equal: finite t, p > 0


def test_moderated_t_from_smyths_formulas_by_hand():
    """Smyth (2004), eqs. in section 6, written out with scipy: d0 by a root of trigamma (brentq, not
    Newton), s0^2, the posterior variance, t on d0 + d degrees of freedom; the one-sided and CI too."""
    from scipy import optimize, special

    rng = np.random.default_rng(11)
    k, m = 5, 300
    sd = 0.2 * np.sqrt(6 / rng.chisquare(6, size=m))
    values = (rng.normal(0, 1, (k, m)) * sd).T
    values[:20] += 0.5
    s2 = values.var(1, ddof=1)
    d = k - 1
    e = np.log(s2) - special.digamma(d / 2) + np.log(d / 2)
    target = e.var(ddof=1) - special.polygamma(1, d / 2)
    d0 = 2 * optimize.brentq(lambda y: special.polygamma(1, y) - target, 1e-3, 1e6, xtol=1e-14)
    s20 = np.exp(e.mean() + special.digamma(d0 / 2) - np.log(d0 / 2))
    post = (d0 * s20 + d * s2) / (d0 + d)
    t = values.mean(1) / np.sqrt(post / k)
    got = moderated_t_over_seeds(values.T, alternative="greater", confidence=0.9)
    assert got["df_prior"] == pytest.approx(d0, rel=1e-8)
    assert got["s2_prior"] == pytest.approx(s20, rel=1e-8)
    np.testing.assert_allclose(got["statistic"], t, rtol=1e-8)
    np.testing.assert_allclose(got["p"], sps.t.sf(t, d0 + d), rtol=1e-7)
    half = sps.t.ppf(0.95, d0 + d) * np.sqrt(post / k)
    np.testing.assert_allclose(got["ci_high"] - got["ci_low"], 2 * half, rtol=1e-8)


def test_variance_prior_without_excess_spread_is_infinite_df_and_pooled_variance():
    # identical variances: var(e) = 0 < trigamma(d/2), so d0 = inf and s0^2 = mean(s2) (limma's pooled rule)
    d0, s20 = fit_variance_prior(np.full(10, 0.3), 4)
    assert d0 == np.inf and s20 == pytest.approx(0.3)
    values = np.array([[0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [2.0, 3.0, 4.0]])  # s2 = 1 in every column
    got = moderated_t_over_seeds(values)
    np.testing.assert_allclose(got["statistic"], [1.0, 2.0, 3.0] / np.sqrt(1 / 3))
    np.testing.assert_allclose(got["dof"], 6.0)  # min(inf + 2, pooled 6)
    assert fit_variance_prior([0.5], 3) == (0.0, pytest.approx(np.nan, nan_ok=True))


def test_seeds_needed_for_the_t_tests_is_the_first_k_with_the_power():
    from statsmodels.stats.power import TTestPower

    level = 0.05 / 720
    k = seeds_needed(alpha=0.05, m=720, correction="holm", test="t")
    assert k == 31
    power = TTestPower()
    assert power.power(effect_size=1.0, nobs=k - 1, alpha=level) < 0.8  # 0.774
    crit = sps.t.isf(level / 2, k - 1)  # statsmodels returns NaN at nobs = 31 (the far lower tail of nct)
    assert sps.nct.sf(crit, k - 1, np.sqrt(k)) >= 0.8  # 0.804
    # one-sided at 0.05 alone, a change of 0.5 sd: statsmodels' power crosses 0.8 at the same k
    k1 = seeds_needed(alpha=0.05, m=1, correction="none", alternative="greater", test="t", effect=0.5)
    assert power.power(0.5, k1 - 1, 0.05, alternative="larger") < 0.8 <= power.power(0.5, k1, 0.05,
                                                                                      alternative="larger")
    # the moderated t: an infinite prior is the z-test; a finite prior lies between it and the t
    z = seeds_needed(alpha=0.05, m=720, correction="holm", test="moderated_t", df_prior=np.inf)
    d4 = seeds_needed(alpha=0.05, m=720, correction="holm", test="moderated_t", df_prior=4.0)
    zk = int(np.ceil(((sps.norm.isf(level / 2) + sps.norm.isf(0.2)) / 1.0) ** 2))
    assert z == zk == 24 and z < d4 < k
