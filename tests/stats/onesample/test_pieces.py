"""The pieces of test_roles: NaNs and min_n, the correction within families (statsmodels), fast p-values,
the multiplicity-adjusted bounds and the skewness column."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from headstats.stats import onesample as os_
from headstats.stats.onesample import list_tests, test_roles
from simulations.planted import planted_scores

from onesample_cases import X, long_table


def test_nan_scores_dropped_and_counted():
    vals = {("local", 0, 0): [4.0, np.nan, 5.0, 3.5, np.nan, 4.2], ("local", 0, 1): [np.nan] * 6}
    for test in list_tests():
        out = test_roles(long_table(vals), test=test, n_resamples=99)
        a, b = out.iloc[0], out.iloc[1]
        assert a["n"] == 4 and a["n_missing"] == 2
        assert b["n"] == 0 and b["n_missing"] == 6 and np.isnan(b["p_unc"]) and np.isnan(b["p_corr"])
        assert b["note"] == "n=0 < min_n=2" and not b["reject"]
        assert np.isfinite(a["p_unc"])
    ref = sps.ttest_1samp([4.0, 5.0, 3.5, 4.2], 3.0, alternative="greater").pvalue  # matches scipy.stats.ttest_1samp
    out = test_roles(long_table(vals), correction="none")
    assert out["p_unc"].iloc[0] == pytest.approx(ref)



def test_min_n_keeps_small_heads_with_a_note():
    vals = {("local", 0, 0): [4.0, 4.5, 5.0], ("local", 0, 1): [4.0, np.nan, np.nan]}
    out = test_roles(long_table(vals), min_n=3)
    assert len(out) == 2
    assert out["note"].iloc[1] == "n=1 < min_n=3" and np.isnan(out["statistic"].iloc[1])
    assert np.isfinite(out["p_unc"].iloc[0])



def test_nan_p_values_stay_out_of_the_family():
    vals = dict(X)
    vals[("local", 1, 0)] = [np.nan] * 25
    out = test_roles(long_table(vals), correction="bonferroni")
    finite = out["p_unc"].notna()
    assert finite.sum() == 4
    expected = multipletests(out.loc[finite, "p_unc"], method="bonferroni")[1]  # matches statsmodels
    assert np.allclose(out.loc[finite, "p_corr"], expected)



@pytest.mark.parametrize("correction", ["holm", "bonferroni", "fdr_bh", "fdr_by"])
def test_correction_matches_statsmodels_within_default_family(correction):
    scores = pd.concat([planted_scores(seed=5, dataset="a"), planted_scores(seed=6, dataset="b")])
    out = test_roles(scores, correction=correction)
    for ds, rows in out.groupby("dataset"):
        ref = multipletests(rows["p_unc"], method=correction)[1]  # matches statsmodels multipletests
        assert np.allclose(rows["p_corr"], ref)
        assert (rows["family"] == f"model=planted|dataset={ds}").all()
        assert (rows["reject"] == (rows["p_corr"] < 0.05)).all()



def test_family_grouping_options():
    scores = pd.concat([planted_scores(seed=5, dataset="a"), planted_scores(seed=6, dataset="b")])
    everything = test_roles(scores, family=())
    assert (everything["family"] == "all").all()
    assert np.allclose(everything["p_corr"], multipletests(everything["p_unc"], method="holm")[1])
    per_role = test_roles(scores, family=("model", "dataset", "role"))
    assert per_role["family"].nunique() == 4
    assert per_role["family"].iloc[0] == "model=planted|dataset=a|role=delimiter"
    for _, rows in per_role.groupby("family"):
        assert np.allclose(rows["p_corr"], multipletests(rows["p_unc"], method="holm")[1])
    per_model = test_roles(scores, family=("model",))
    assert (per_model["family"] == "model=planted").all()
    none = test_roles(scores, correction="none")
    assert np.array_equal(none["p_corr"], none["p_unc"])



@pytest.mark.parametrize("test", ["t", "wilcoxon", "sign", "bootstrap", "permutation"])
def test_fast_p_values_equal_the_full_test(test):
    scores = planted_scores(seed=12, n_sentences=20, missing=0.2)
    mat = os_.score_matrix(scores)
    full = os_.run_test(mat, test=test, tau=3.0, confidence=0.95, seed=1, n_resamples=199, min_n=2)["p_unc"]
    fast = os_.run_pvalues(mat, test=test, tau=3.0, confidence=0.95, seed=1, n_resamples=199, min_n=2)
    assert np.array_equal(full.to_numpy(float), fast, equal_nan=True)



def test_fwer_adjusted_bound_is_bonferroni_and_matches_the_decisions():
    scores = planted_scores(seed=4, effect=0.8)
    out = test_roles(scores, correction="bonferroni", confidence=0.95, alpha=0.05)
    m = int(out["p_unc"].notna().sum())
    assert np.allclose(out["confidence_adj"], 1 - 0.05 / m)
    for _, row in out.iterrows():
        ref = row["mean"] - sps.t.ppf(1 - 0.05 / m, row["n"] - 1) * row["sd"] / math.sqrt(row["n"])
        assert row["ci_low_adj"] == pytest.approx(ref, rel=1e-12) and row["ci_high_adj"] == np.inf
        assert row["ci_low_adj"] <= row["ci_low"]
    # Bonferroni: adjusted bound above tau exactly when the head is assigned (confidence = 1 - alpha)
    assert ((out["ci_low_adj"] > out["tau"]) == out["reject"]).all()
    holm = test_roles(scores, correction="holm")
    assert np.allclose(holm["ci_low_adj"], out["ci_low_adj"])  # Holm's decisions, Bonferroni's bounds



def test_fdr_adjusted_bound_is_benjamini_yekutieli_fcr_for_the_selected():
    scores = planted_scores(seed=4, effect=0.8)
    out = test_roles(scores, test="wilcoxon", correction="fdr_bh", confidence=0.9)
    m = int(out["p_unc"].notna().sum())
    r = int(out["reject"].sum())
    assert 0 < r < m
    sel = out["reject"].to_numpy()
    assert np.allclose(out.loc[sel, "confidence_adj"], 1 - r * 0.1 / m)
    assert out.loc[~sel, ["ci_low_adj", "confidence_adj", "ci_high_adj"]].isna().all().all()
    from headstats.stats.ranks import walsh_lower_bound

    mat = os_.score_matrix(scores)
    for g in np.nonzero(sel)[0]:
        x = mat.values[g, : mat.n[g]]
        assert out["ci_low_adj"].iloc[g] == walsh_lower_bound(x[None, :], 1 - r * 0.1 / m)[0]



def test_by_adjusted_bound_holds_under_arbitrary_dependence():
    """Benjamini & Yekutieli (2005), Theorem 4: under arbitrary dependence the FCR-adjusted level is
    1 - R q / (m c_m), c_m = sum 1/i; 1 - R q / m is proved only under independence or positive dependence."""
    scores = planted_scores(seed=4, effect=0.8)
    out = test_roles(scores, test="t", correction="fdr_by", confidence=0.9)
    m = int(out["p_unc"].notna().sum())
    r = int(out["reject"].sum())
    assert 0 < r < m
    c_m = sum(1 / i for i in range(1, m + 1))
    sel = out["reject"].to_numpy()
    assert np.allclose(out.loc[sel, "confidence_adj"], 1 - r * 0.1 / (m * c_m))
    assert out.loc[~sel, "confidence_adj"].isna().all()
    mat = os_.score_matrix(scores)
    for g in np.nonzero(sel)[0][:3]:
        x = mat.values[g, : mat.n[g]]
        ref = sps.ttest_1samp(x, 0.0, alternative="greater").confidence_interval(1 - r * 0.1 / (m * c_m)).low
        assert out["ci_low_adj"].iloc[g] == pytest.approx(ref, rel=1e-10)



def test_no_correction_adjusted_bound_is_the_marginal_one():
    out = test_roles(planted_scores(seed=4), correction="none", test="sign")
    np.testing.assert_array_equal(out["ci_low_adj"].to_numpy(), out["ci_low"].to_numpy())
    assert (out["confidence_adj"] == 0.95).all()



def test_skewness_column_matches_scipy():
    scores = planted_scores(seed=4)
    out = test_roles(scores)
    mat = os_.score_matrix(scores)
    for g in range(len(out)):
        x = mat.values[g, : mat.n[g]]
        assert out["skewness"].iloc[g] == pytest.approx(sps.skew(x, bias=False), rel=1e-10)

