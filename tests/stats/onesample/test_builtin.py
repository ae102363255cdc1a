"""Every built-in one-sample test against scipy/pingouin/statsmodels and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from headstats.stats import onesample as os_
from headstats.stats.onesample import test_roles

from headstats.stats.onesample.builtin import _wilcoxon_critical_rank
from onesample_cases import RNG, WX, X, long_table


def test_t_hand_computed():
    # s = 1..5, tau = 2: mean 3, sd sqrt(2.5), t = 1 / (sqrt(2.5)/sqrt(5)) = sqrt(2), dof 4
    out = test_roles(long_table({("local", 0, 0): [1, 2, 3, 4, 5]}), tau=2.0, correction="none")
    row = out.iloc[0]
    assert row["mean"] == 3 and row["sd"] == pytest.approx(math.sqrt(2.5))
    assert row["statistic"] == pytest.approx(math.sqrt(2)) and row["dof"] == 4
    assert row["p_unc"] == pytest.approx(0.11509982054024949, rel=1e-12)  # 1 - pt(sqrt(2), 4) in R
    assert row["effect_size"] == pytest.approx(1 / math.sqrt(2.5))
    assert row["effect_size_type"] == "cohen_d"
    assert row["ci_low"] == pytest.approx(3 - 2.131846786326649 * math.sqrt(2.5) / math.sqrt(5))  # qt(.95, 4)
    assert row["median"] == 3 and row["n"] == 5 and row["n_missing"] == 0



def test_t_matches_scipy_ttest_1samp():
    out = test_roles(long_table(X), tau=3.0, correction="none")
    for (_, _, head), xs in X.items():
        row = out[(out["head"] == head)].iloc[0]
        ref = sps.ttest_1samp(xs, 3.0, alternative="greater")  # matches scipy.stats.ttest_1samp
        assert row["statistic"] == pytest.approx(ref.statistic, rel=1e-12)
        assert row["p_unc"] == pytest.approx(ref.pvalue, rel=1e-10)
        assert row["dof"] == ref.df
        # one-sided bound: matches scipy's confidence_interval of the same result
        assert row["ci_low"] == pytest.approx(ref.confidence_interval(0.95).low, rel=1e-12)



def test_t_matches_pingouin_ttest():
    import pingouin

    out = test_roles(long_table(X), tau=3.0, correction="none")
    for (_, _, head), xs in X.items():
        row = out[out["head"] == head].iloc[0]
        ref = pingouin.ttest(np.asarray(xs), 3.0, alternative="greater")  # matches pingouin.ttest
        cols = {c.replace("-", "_"): c for c in ref.columns}
        assert row["p_unc"] == pytest.approx(float(ref[cols["p_val"]].iloc[0]), rel=1e-8)
        # pingouin reports |d|
        assert abs(row["effect_size"]) == pytest.approx(float(ref[cols["cohen_d"]].iloc[0]), rel=1e-8)



def test_t_zero_variance_and_single_input():
    out = test_roles(long_table({("local", 0, 0): [4.0, 4.0, 4.0], ("local", 0, 1): [5.0]}), correction="none")
    const, single = out.iloc[0], out.iloc[1]
    # the sd = 0 rule: identical scores above tau are not a test of the mean (was: t = inf, p = 0, assigned)
    assert np.isnan(const["statistic"]) and np.isnan(const["p_unc"]) and "sd=0" in const["note"]
    assert not const["reject"]
    assert single["n"] == 1 and np.isnan(single["p_unc"]) and single["note"] == "n=1 < min_n=2"



@pytest.mark.parametrize("test", ["t", "bootstrap", "permutation", "skew_t"])
def test_one_sd0_rule_for_every_test_of_the_mean(test):
    # identical scores above tau, below tau, and at tau: p NaN, not assigned, noted, for every mean test
    table = long_table({("local", 0, 0): [4.0] * 12, ("local", 0, 1): [2.0] * 12, ("local", 0, 2): [3.0] * 12,
                        ("local", 0, 3): list(np.linspace(2.5, 4.5, 12))})
    out = test_roles(table, test=test, correction="none", n_resamples=999)
    assert out["p_unc"].iloc[:3].isna().all() and not out["reject"].iloc[:3].any()
    assert all("sd=0" in note for note in out["note"].iloc[:3])
    assert np.isfinite(out["p_unc"].iloc[3])



def test_paired_t_follows_the_same_sd0_rule():
    from headstats.stats.paired import paired_t

    res = paired_t(np.full(10, 0.5), alternative="two-sided", confidence=0.95)
    assert np.isnan(res["p_unc"]) and np.isnan(res["statistic"]) and res["estimate"] == 0.5



def test_wilcoxon_matches_scipy_row_by_row():
    out = test_roles(long_table(WX), test="wilcoxon", correction="none", tau=3.0)
    for (_, layer, head), xs in WX.items():
        row = out[(out["layer"] == layer) & (out["head"] == head)].iloc[0]
        ref = sps.wilcoxon(np.asarray(xs) - 3.0, alternative="greater")  # matches scipy.stats.wilcoxon
        assert row["statistic"] == pytest.approx(ref.statistic)
        assert row["p_unc"] == pytest.approx(ref.pvalue, rel=1e-10)



def test_wilcoxon_rank_biserial_matches_pingouin():
    import pingouin

    out = test_roles(long_table(WX), test="wilcoxon", correction="none", tau=3.0)
    for (_, layer, head), xs in WX.items():
        row = out[(out["layer"] == layer) & (out["head"] == head)].iloc[0]
        ref = pingouin.wilcoxon(np.asarray(xs) - 3.0, alternative="greater")  # matches pingouin.wilcoxon RBC
        assert row["effect_size"] == pytest.approx(float(ref["RBC"].iloc[0]), rel=1e-12)
        assert row["effect_size_type"] == "rank_biserial"



def test_wilcoxon_hand_computed():
    # d = s - 3 = [1, -2, 3, 4]: ranks of |d| 1, 2, 3, 4; T+ = 1 + 3 + 4 = 8, T- = 2; exact
    # P(T+ >= 8) over the 16 sign patterns: sums 8, 9, 10 -> {1,3,4}, {2,3,4}, {1,2,3,4} = 3/16
    out = test_roles(long_table({("local", 0, 0): [4, 1, 6, 7]}), test="wilcoxon", correction="none")
    row = out.iloc[0]
    assert row["statistic"] == 8 and row["p_unc"] == pytest.approx(3 / 16)
    assert row["effect_size"] == pytest.approx((8 - 2) / 10)



def test_wilcoxon_bound_is_a_walsh_average_with_exact_coverage():
    xs = np.asarray(WX[("local", 0, 2)])
    n = xs.size
    out = test_roles(long_table({("local", 0, 0): list(xs)}), test="wilcoxon", confidence=0.9)
    walsh = np.sort([(xs[i] + xs[j]) / 2 for i in range(n) for j in range(i, n)])
    r = _wilcoxon_critical_rank(n, 0.9)
    assert out["ci_low"].iloc[0] == walsh[r - 1]



def test_wilcoxon_critical_rank_by_brute_force():
    # the exact null distribution of T+ for n = 12: all 4096 sign patterns of ranks 1..12
    n = 12
    patterns = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    t_plus = patterns @ np.arange(1, n + 1)
    for conf in (0.8, 0.9, 0.95, 0.99):
        r = _wilcoxon_critical_rank(n, conf)
        assert (t_plus <= r - 1).mean() <= 1 - conf < (t_plus <= r).mean()



def test_wilcoxon_bound_normal_approximation_close_to_exact_at_50():
    exact = _wilcoxon_critical_rank(50, 0.95)
    mu, sigma = 50 * 51 / 4, math.sqrt(50 * 51 * 101 / 24)
    approx = math.floor(mu + 0.5 + sps.norm.ppf(0.05) * sigma)
    assert abs(exact - approx) <= 1



def test_wilcoxon_all_equal_tau_is_nan_with_note():
    out = test_roles(long_table({("local", 0, 0): [3.0, 3.0, 3.0]}), test="wilcoxon")
    assert np.isnan(out["p_unc"].iloc[0]) and "all scores equal tau" in out["note"].iloc[0]



def test_sign_hand_computed_and_matches_binomtest():
    # scores vs tau 3: above 4, 4, 4; below 1; tied 3 -> K = 3 of N' = 4; P(Bin(4, .5) >= 3) = 5/16
    out = test_roles(long_table({("local", 0, 0): [4, 4, 4, 1, 3]}), test="sign", correction="none")
    row = out.iloc[0]
    assert row["statistic"] == 3 and row["p_unc"] == pytest.approx(5 / 16)
    # matches scipy.stats.binomtest
    assert row["p_unc"] == pytest.approx(sps.binomtest(3, 4, 0.5, alternative="greater").pvalue)
    assert row["effect_size"] == pytest.approx(3 / 4 - 0.5) and row["effect_size_type"] == "cohen_g"
    assert "1 scores equal to tau dropped" in row["note"]



def test_sign_matches_binomtest_on_random_rows():
    out = test_roles(long_table(X), test="sign", correction="none")
    for (_, _, head), xs in X.items():
        xs = np.asarray(xs)
        k, m = int((xs > 3).sum()), int((xs != 3).sum())
        ref = sps.binomtest(k, m, 0.5, alternative="greater").pvalue  # matches scipy.stats.binomtest
        assert out[out["head"] == head]["p_unc"].iloc[0] == pytest.approx(ref, rel=1e-10)



def test_sign_bound_is_order_statistic_with_coverage():
    xs = np.arange(1.0, 21.0)  # n = 20
    out = test_roles(long_table({("local", 0, 0): list(xs)}), test="sign", confidence=0.95)
    # largest r with P(Bin(20, .5) >= r) >= .95: P(B >= 6) = 0.9793, P(B >= 7) = 0.9423 -> r = 6
    assert sps.binom.sf(5, 20, 0.5) >= 0.95 > sps.binom.sf(6, 20, 0.5)
    assert out["ci_low"].iloc[0] == 6.0



def test_permutation_exact_matches_scipy_permutation_test():
    xs = {("local", 0, h): list(3 + 0.4 * h + RNG.standard_normal(10)) for h in range(3)}
    out = test_roles(long_table(xs), test="permutation", correction="none", n_resamples=9999)
    for (_, _, head), v in xs.items():
        d = np.asarray(v) - 3.0
        ref = sps.permutation_test((d,), np.mean, permutation_type="samples", alternative="greater",
                                   n_resamples=9999)  # matches scipy.stats.permutation_test (exact: 2^10)
        row = out[out["head"] == head].iloc[0]
        assert row["p_unc"] == pytest.approx(ref.pvalue, rel=1e-12)
        assert row["statistic"] == pytest.approx(ref.statistic)
        assert row["n_resamples"] == 1024 and "exact" in row["note"]
        assert pd.isna(row["seed"]) is False and row["seed"] == 0



def test_permutation_random_close_to_scipy_and_seeded():
    xs = {("local", 0, 0): list(3.2 + RNG.standard_normal(40))}
    a = test_roles(long_table(xs), test="permutation", n_resamples=4999, seed=7)
    b = test_roles(long_table(xs), test="permutation", n_resamples=4999, seed=7)
    c = test_roles(long_table(xs), test="permutation", n_resamples=4999, seed=8)
    pd.testing.assert_frame_equal(a, b)
    assert a["p_unc"].iloc[0] != c["p_unc"].iloc[0]
    assert a["seed"].iloc[0] == 7 and "seed=7" in a["note"].iloc[0]
    d = np.asarray(xs[("local", 0, 0)]) - 3.0
    ref = sps.permutation_test((d,), np.mean, permutation_type="samples", alternative="greater",
                               n_resamples=99999, rng=1).pvalue  # scipy.stats.permutation_test, many resamples
    se = math.sqrt(ref * (1 - ref) / 4999)
    assert abs(a["p_unc"].iloc[0] - ref) < 4 * se + 1e-3



def test_bootstrap_close_to_t_for_normal_data_and_seeded():
    xs = {("local", 0, h): list(3 + 0.15 * h + RNG.standard_normal(200)) for h in range(4)}
    boot = test_roles(long_table(xs), test="bootstrap", correction="none", n_resamples=4999, seed=3)
    t = test_roles(long_table(xs), test="t", correction="none")
    # studentized bootstrap p-values approximate the t-test's for normal data at N = 200
    assert np.allclose(boot["p_unc"], t["p_unc"], atol=0.02)
    assert np.allclose(boot["ci_low"], t["ci_low"], atol=0.03)
    assert np.allclose(boot["statistic"], t["statistic"])
    assert (boot["seed"] == 3).all() and (boot["n_resamples"] == 4999).all()
    again = test_roles(long_table(xs), test="bootstrap", correction="none", n_resamples=4999, seed=3)
    pd.testing.assert_frame_equal(boot, again)
    assert t["seed"].isna().all() and t["n_resamples"].isna().all()



def test_wilcoxon_note_names_the_method():
    out = test_roles(long_table(WX), test="wilcoxon", correction="none")
    notes = dict(zip(zip(out["layer"], out["head"]), out["note"], strict=True))
    assert notes[(0, 0)] == "exact"
    assert notes[(0, 1)].endswith("permutation") and "2 scores equal to tau dropped" in notes[(0, 1)]
    assert notes[(1, 0)] == "normal approximation"



def test_wilcoxon_bound_agrees_with_p_when_scores_equal_tau():
    # 10 scores exactly at tau and 6 above: the test drops the ten (zero_method="wilcox"), p = 2^-6 <= 0.05;
    # the former bound used all 16 scores, so 55 Walsh averages equal to tau made ci_low = tau: not > tau
    x = [3.0] * 10 + [3.2, 3.5, 3.9, 4.4, 5.0, 5.7]
    row = test_roles(long_table({("local", 0, 0): x}), test="wilcoxon", correction="none").iloc[0]
    assert row["p_unc"] == pytest.approx(sps.wilcoxon(np.array(x) - 3.0, alternative="greater").pvalue)
    assert row["p_unc"] <= 0.05 and row["ci_low"] > 3.0
    # the bound of the six scores the test used: the 3rd smallest Walsh average (P(T+ <= 2) = 3/64 <= 0.05 <
    # P(T+ <= 3) = 5/64)
    six = np.array(x[10:])
    walsh = np.sort([(six[i] + six[j]) / 2 for i in range(6) for j in range(i, 6)])
    assert row["ci_low"] == walsh[2]



def test_wilcoxon_bound_agrees_with_p_above_n_50():
    # n = 80: p from scipy's normal approximation (no continuity correction) and the bound from the same
    # approximation: for taus around the bound, ci_low > tau exactly when p <= 1 - confidence
    rng = np.random.default_rng(8)
    x = rng.gamma(2.0, 1.0, size=80) + 2.0
    bound = test_roles(long_table({("local", 0, 0): list(x)}), test="wilcoxon", tau=3.0).iloc[0]["ci_low"]
    walsh = np.sort([(x[i] + x[j]) / 2 for i in range(80) for j in range(i, 80)])
    at = int(np.searchsorted(walsh, bound))
    for w in walsh[at - 5:at + 5]:
        tau = float(np.nextafter(w, np.inf))
        row = test_roles(long_table({("local", 0, 0): list(x)}), test="wilcoxon", tau=tau,
                         correction="none").iloc[0]
        assert row["ci_low"] == bound
        assert (row["ci_low"] > tau) == (row["p_unc"] <= 0.05)



@pytest.mark.parametrize("test", ["bootstrap", "permutation"])
def test_resampling_p_does_not_depend_on_sentence_id_dtype(test):
    rng = np.random.default_rng(4)
    values = {("local", 0, h): list(3.0 + 0.2 * h + rng.gamma(1.0, 1.0, 40) - 1.0) for h in range(3)}
    as_int = long_table(values)
    as_str = as_int.assign(sentence_id=as_int["sentence_id"].astype(str))  # "10" < "2": another input order
    a = test_roles(as_int, test=test, n_resamples=999, seed=3)
    b = test_roles(as_str, test=test, n_resamples=999, seed=3)
    np.testing.assert_array_equal(a["p_unc"].to_numpy(), b["p_unc"].to_numpy())
    np.testing.assert_array_equal(a["ci_low"].to_numpy(), b["ci_low"].to_numpy())



@pytest.mark.parametrize("n", [2, 3, 4])
def test_bootstrap_small_n_is_the_complete_enumeration(n):
    # n <= 4: every one of the n^n resamples, equally likely, by brute force; no seed dependence
    import itertools

    x = np.array([3.4, 2.9, 4.6, 3.8][:n])
    t_obs = (x.mean() - 3.0) / (x.std(ddof=1) / math.sqrt(n))
    xc = x - x.mean()
    tstar = []
    for idx in itertools.product(range(n), repeat=n):
        r = xc[list(idx)]
        se = r.std(ddof=1) / math.sqrt(n)
        tstar.append(r.mean() / se if se > 0 else (np.sign(r.mean()) * np.inf if abs(r.mean()) > 1e-12 else 0.0))
    want = np.mean(np.array(tstar) >= t_obs - 1e-12)
    for seed in (0, 1):
        row = test_roles(long_table({("local", 0, 0): list(x)}), test="bootstrap", correction="none",
                         seed=seed, n_resamples=9999).iloc[0]
        assert row["p_unc"] == pytest.approx(want, abs=1e-12)
        assert row["n_resamples"] == n**n and "exact" in row["note"]



def test_skew_t_by_hand():
    x = np.array([2.1, 2.4, 2.5, 2.9, 3.3, 3.6, 4.8, 7.9, 3.1, 2.2])
    n, tau = x.size, 3.0
    s = x.std(ddof=1)
    g = np.mean((x - x.mean()) ** 3) / s**3
    S = (x.mean() - tau) / s
    stat = math.sqrt(n) * (S + g / (6 * n) + g * S**2 / 3 + g**2 * S**3 / 27)  # Johnson 1978 + Hall 1992
    row = test_roles(long_table({("local", 0, 0): list(x)}), test="skew_t", correction="none").iloc[0]
    assert row["statistic"] == pytest.approx(stat, rel=1e-12)
    assert row["p_unc"] == pytest.approx(sps.t.sf(stat, n - 1), rel=1e-12)
    # the bound inverts the test: at tau = ci_low the statistic is the critical value
    at = test_roles(long_table({("local", 0, 0): list(x)}), test="skew_t", tau=row["ci_low"],
                    correction="none").iloc[0]
    assert at["p_unc"] == pytest.approx(0.05, rel=1e-9)



def test_skew_t_is_the_t_test_without_skewness():
    x = [2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0]  # symmetric: mu_3 = 0
    a = test_roles(long_table({("local", 0, 0): x}), test="skew_t").iloc[0]
    b = test_roles(long_table({("local", 0, 0): x}), test="t").iloc[0]
    assert a["statistic"] == pytest.approx(b["statistic"]) and a["p_unc"] == pytest.approx(b["p_unc"])
    assert a["ci_low"] == pytest.approx(b["ci_low"])



def test_skew_t_type_one_error_closer_to_nominal_on_skewed_scores():
    # right-skewed (gamma shape 0.5, skewness 2.8) at mean = tau, n = 30: the t-test rejects too rarely
    # in the upper tail; the corrected test is nearer 0.05 (20,000 replications, MC se 0.0015)
    rng = np.random.default_rng(11)
    x = rng.gamma(0.5, 2.0, size=(20000, 30))  # mean 1
    t_rate = np.mean(os_.t_pvalues(x, tau=1.0) <= 0.05)
    j_rate = np.mean(os_.skew_t_pvalues(x, tau=1.0) <= 0.05)
    assert t_rate < 0.03 and abs(j_rate - 0.05) < abs(t_rate - 0.05)



def test_skew_t_level_at_a_corrected_alpha_on_left_skewed_scores():
    """Decisions are made near alpha / m (7e-5 for 720 heads), not at 0.05. Left-skewed scores (skewness -2,
    reflected exponential) at mean = tau, n = 50, alpha 1e-4, 200,000 replications (MC se ~4e-5): the
    t-test rejects about 28 times too often, skew_t about 3.3 times (docs/statistics.md, section 8)."""
    rng = np.random.default_rng(5)
    x = 2.0 - rng.exponential(1.0, size=(200_000, 50))  # mean 1
    t_rate = np.mean(os_.t_pvalues(x, tau=1.0) <= 1e-4)
    j_rate = np.mean(os_.skew_t_pvalues(x, tau=1.0) <= 1e-4)
    assert 15 < t_rate / 1e-4 < 45
    assert 1.5 < j_rate / 1e-4 < 6



def test_t_ddof0_is_the_published_statistic():
    x = [3.4, 2.9, 3.8, 4.1, 3.0, 3.6]
    n = len(x)
    mean = sum(x) / n
    sd0 = math.sqrt(sum((v - mean) ** 2 for v in x) / n)  # np.std(x), as the notebooks
    t0 = (mean - 3.0) / (sd0 / math.sqrt(n))
    out = test_roles(long_table({("local", 0, 0): x}), test="t_ddof0", correction="none")
    assert out["statistic"].iloc[0] == pytest.approx(t0, rel=1e-12)
    assert out["p_unc"].iloc[0] == pytest.approx(sps.t.sf(t0, n - 1), rel=1e-12)
    assert out["ci_low"].iloc[0] == pytest.approx(mean - sps.t.ppf(0.95, n - 1) * sd0 / math.sqrt(n), rel=1e-12)
    # the fast path from the moments gives the same p-values (tau sensitivity uses it)
    from headstats.stats.onesample import run_pvalues
    from headstats.stats.matrix import score_matrix

    mat = score_matrix(long_table({("local", 0, 0): x}))
    assert run_pvalues(mat, test="t_ddof0", tau=3.0)[0] == pytest.approx(sps.t.sf(t0, n - 1), rel=1e-12)
    # 2.6 % larger t than ddof 1 at N = 20 (METHODS 1.4): sqrt(20 / 19)
    y = list(3 + RNG.standard_normal(20))
    a = test_roles(long_table({("local", 0, 0): y}), test="t_ddof0")["statistic"].iloc[0]
    b = test_roles(long_table({("local", 0, 0): y}), test="t")["statistic"].iloc[0]
    assert a / b == pytest.approx(math.sqrt(20 / 19))

