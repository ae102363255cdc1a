"""Seeds as replicates (headstats.stats.seeds) against scipy and statsmodels, and on planted data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import DescrStatsW

from headstats.stats.seeds import (
    margin_for,
    margin_tests,
    seeds_needed,
    signflip_floor,
    signflip_over_seeds,
    simulate_seed_type1,
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
    assert res["statistic"][1] == np.inf and res["p"][1] == 0.0  # all seeds moved by exactly 2
    assert res["p"][2] == 1.0  # all seeds exactly at mu
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


def test_type1_simulation_seeds_keep_the_level_and_inputs_do_not():
    """Under H0 with run-to-run noise (sd 0.1) the per-input test of one run rejects far too often; the
    t-test over 3 seeds keeps the level within Monte Carlo error; the sign-flip test never rejects (floor 0.25)."""
    sim = simulate_seed_type1(n_sim=4000, seeds=3, inputs=300, sd_seed=0.1, sd_input=1.0, mixed=False,
                              rng_seed=1).set_index("method")
    t = sim.loc["t_over_seeds"]
    assert abs(t["rejection_rate"] - 0.05) < 3.5 * np.sqrt(0.05 * 0.95 / 4000)
    assert sim.loc["signflip_over_seeds", "rejection_rate"] == 0.0
    # one run: p < 0.05 when |u_1| > 1.96 * sqrt(0.1^2/... ) -- the run effect is not input noise
    se_input = 1.0 / np.sqrt(300)
    expected = 2 * sps.norm.sf(1.96 * se_input / np.sqrt(se_input ** 2 + 0.1 ** 2))
    assert sim.loc["paired_inputs_one_seed", "rejection_rate"] == pytest.approx(expected, abs=0.03)
