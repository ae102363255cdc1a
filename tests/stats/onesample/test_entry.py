"""test_roles, the public entry point: fixed columns, the options' checks, tables of any form, planted heads."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from headstats.errors import HeadstatsError
from headstats.stats.onesample import TEST_COLUMNS, list_tests, test_roles
from simulations.planted import plant, planted_scores

from onesample_cases import RNG, X, long_table


def test_columns_fixed_and_one_row_per_hypothesis():
    scores = planted_scores(seed=3)
    for test in list_tests():
        out = test_roles(scores, test=test, n_resamples=199)
        assert list(out.columns) == list(TEST_COLUMNS)
        assert len(out) == 2 * 2 * 4
        assert (out["alternative"] == "greater").all()
        assert (out["test"] == test).all()
        assert np.isinf(out["ci_high"]).all()
    assert list(TEST_COLUMNS[:30]) == (
        "model dataset role layer head test n n_missing mean sd median tau statistic dof alternative p_unc "
        "p_corr correction family alpha effect_size effect_size_type ci_low ci_high confidence reject power "
        "n_for_power bf10_two_sided note"
    ).split()



@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"tau": float("nan")}, "tau must be a finite"),
        ({"tau": float("inf")}, "tau must be a finite"),
        ({"tau": -1.0}, "tau must be greater than or equal to 0"),
        ({"alpha": 0.0}, "alpha must be greater than 0"),
        ({"alpha": 1.0}, "alpha must be less than 1"),
        ({"confidence": 1.0}, "confidence must be less than 1"),
        ({"correction": "sidak"}, "holm, bonferroni, fdr_bh, fdr_by, none"),
        ({"family": ("model", "sentence")}, "family must be 'model', 'dataset', 'role' or 'layer'"),
        ({"min_n": 1}, "min_n must be greater than or equal to 2"),
        ({"n_resamples": 0}, "n_resamples must be 'auto' or a whole number >= 99"),
        ({"power_target": 1.5}, "power_target must be less than 1"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"alpha": True}, "alpha expected a number, not true"),
    ],
)
def test_bad_options_raise_with_what_is_allowed(kwargs, match):
    with pytest.raises(ValueError, match=match):
        test_roles(long_table(X), **kwargs)



def test_bad_tables_raise():
    scores = long_table(X)
    with pytest.raises(HeadstatsError, match="lacks column"):
        test_roles(scores.drop(columns="role"))
    with pytest.raises(HeadstatsError, match="duplicate"):
        test_roles(pd.concat([scores, scores.iloc[:1]]))
    bad = scores.copy()
    bad.loc[0, "score"] = np.inf
    with pytest.raises(HeadstatsError, match="infinite"):
        test_roles(bad)



def test_empty_table_gives_empty_result_with_columns():
    out = test_roles(long_table({}).astype({"score": float}))
    assert len(out) == 0 and list(out.columns) == list(TEST_COLUMNS)



def test_row_order_does_not_matter():
    scores = planted_scores(seed=4)
    a = test_roles(scores, test="bootstrap", n_resamples=499)
    b = test_roles(scores.sample(frac=1.0, random_state=1), test="bootstrap", n_resamples=499)
    pd.testing.assert_frame_equal(a, b)



def test_planted_heads_found():
    pl = plant(n_layers=3, n_heads=4, n_sentences=60, effect=1.5, seed=11)
    out = test_roles(pl.scores)
    merged = out.merge(pl.truth, on=["model", "dataset", "role", "layer", "head"])
    assert merged.loc[merged["is_alternative"], "reject"].all()
    assert not merged.loc[~merged["is_alternative"], "reject"].any()



def test_statistics_layer_imports_no_torch_matplotlib_or_rich():
    import subprocess
    import sys

    code = (
        "import sys, headstats.stats.onesample, headstats.stats.power, headstats.stats.sensitivity, "
        "headstats.stats.seeds, headstats.stats.effects, headstats.stats.corrections, headstats.stats.ranks, "
        "headstats.stats.matrix, headstats.stats.paired\n"
        "print(sorted(m for m in ('torch', 'matplotlib', 'rich', 'pingouin') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # pingouin (which imports matplotlib) is loaded lazily, on the first power / Bayes factor computation
    assert out.strip() == "[]"



@pytest.mark.parametrize("test", ["t", "wilcoxon", "sign", "bootstrap", "permutation"])
def test_measure_arrays_give_the_same_table_as_the_long_frame(test):
    from conftest import long_frame, planted_arrays

    arrays = planted_arrays(seed=3)
    kwargs = dict(test=test, n_resamples=199, correction="fdr_bh", family=("model", "dataset", "role"))
    from_arrays = test_roles(arrays, **kwargs)
    pd.testing.assert_frame_equal(from_arrays, test_roles(long_frame(arrays), **kwargs), check_exact=True)
    assert list(from_arrays.columns) == list(TEST_COLUMNS)
    assert from_arrays["model"].tolist()[:1] == ["k"] and len(from_arrays) == 2 * 6 * 3 + 2 * 6



def test_empty_list_of_arrays_gives_an_empty_table():
    out = test_roles([])
    assert len(out) == 0 and list(out.columns) == list(TEST_COLUMNS)



def test_reject_uses_less_or_equal_like_statsmodels():
    # sign test, 4 of 4 above tau: p = 1/16 exactly; at alpha = 1/16 statsmodels rejects (p <= alpha)
    out = test_roles(long_table({("local", 0, 0): [3.5, 4.0, 3.2, 5.0]}), test="sign", correction="bonferroni",
                     alpha=0.0625)
    row = out.iloc[0]
    assert row["p_corr"] == 0.0625
    assert bool(row["reject"]) == bool(multipletests([0.0625], alpha=0.0625, method="bonferroni")[0][0]) is True



def test_tau_per_role_is_used_row_by_row_and_corrected_together():
    from statsmodels.stats.multitest import multipletests

    vals = {("local", 0, h): list(2.0 + 0.4 * h + RNG.standard_normal(15)) for h in range(3)}
    vals |= {("block", 0, h): list(1.2 + 0.3 * h + 0.5 * RNG.standard_normal(15)) for h in range(3)}
    table = long_table(vals)
    out = test_roles(table, tau={"default": 2.5, "block": 1.5})
    assert (out.loc[out["role"] == "block", "tau"] == 1.5).all()
    assert (out.loc[out["role"] == "local", "tau"] == 2.5).all()
    for (role, layer, head), x in vals.items():
        row = out[(out["role"] == role) & (out["head"] == head)].iloc[0]
        ref = sps.ttest_1samp(x, 1.5 if role == "block" else 2.5, alternative="greater").pvalue
        assert row["p_unc"] == pytest.approx(ref, rel=1e-10)
    holm = multipletests(out["p_unc"].to_numpy(), method="holm")[1]
    np.testing.assert_allclose(out["p_corr"].to_numpy(), holm, rtol=1e-12)
    # a mapping without the role falls back to its default; a plain number still works
    same = test_roles(table, tau={"default": 2.5})
    plain = test_roles(table, tau=2.5)
    pd.testing.assert_frame_equal(same, plain)
    for test in ("wilcoxon", "bootstrap"):
        mixed = test_roles(table, test=test, tau={"default": 2.5, "block": 1.5}, n_resamples=199)
        alone = test_roles(table, test=test, tau=1.5, n_resamples=199)
        np.testing.assert_allclose(mixed.loc[mixed["role"] == "block", "p_unc"],
                                   alone.loc[alone["role"] == "block", "p_unc"])

