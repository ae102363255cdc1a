"""Tests of headstats.stats.power and the power columns of test_roles."""

from __future__ import annotations

import math

import numpy as np
import pingouin
import pytest

from headstats.stats.onesample import next_discovery_alpha, test_roles
from headstats.stats.power import POWER_SUMMARY_COLUMNS, add_power, power_summary, underpowered
from simulations.planted import plant, planted_scores


def test_power_columns_are_design_power_at_the_effect_of_interest():
    # issue 8: power and N needed at the declared effect (not the observed one), the MDE at the head's N,
    # all at the corrected level, each against pingouin.power_ttest
    out = test_roles(planted_scores(seed=2, effect=0.6), correction="bonferroni", effect_of_interest=0.4)
    m = out["p_unc"].notna().sum()
    assert np.allclose(out["power_alpha"], 0.05 / m)
    for _, row in out.iterrows():
        ref = pingouin.power_ttest(d=0.4, n=row["n"], alpha=0.05 / m, contrast="one-sample", alternative="greater")
        assert row["power"] == pytest.approx(ref, rel=1e-10)
        need = pingouin.power_ttest(d=0.4, power=0.8, alpha=0.05 / m, contrast="one-sample", alternative="greater")
        assert row["n_for_power"] == math.ceil(need)
        mde = pingouin.power_ttest(n=row["n"], power=0.8, alpha=0.05 / m, contrast="one-sample",
                                   alternative="greater")
        assert row["mde"] == pytest.approx(mde, rel=1e-6) and row["mde_score"] == pytest.approx(mde * row["sd"])
        assert row["effect_of_interest"] == 0.4
        d = (row["mean"] - row["tau"]) / row["sd"]
        assert row["bf10_two_sided"] == pytest.approx(pingouin.bayesfactor_ttest(d * math.sqrt(row["n"]), row["n"]),
                                                      rel=1e-8)  # matches pingouin.bayesfactor_ttest


def test_power_is_not_a_function_of_the_p_value():
    # two heads with the same N in one family: very different p-values, the same design power (observed
    # power would have tracked p, Hoenig & Heisey 2001)
    import pandas as pd

    rng = np.random.default_rng(1)
    rows = [("m", "d", i, 0, h, "local", float(v)) for h, centre in ((0, 4.0), (1, 2.9))
            for i, v in enumerate(centre + rng.normal(0, 1.0, 40))]
    table = pd.DataFrame(rows, columns=["model", "dataset", "sentence_id", "layer", "head", "role", "score"])
    out = test_roles(table, correction="bonferroni")
    assert out["p_unc"].iloc[0] < 1e-6 < 0.5 < out["p_unc"].iloc[1]
    assert out["power"].iloc[0] == out["power"].iloc[1] and out["mde"].iloc[0] == out["mde"].iloc[1]


@pytest.mark.parametrize("test, efficiency", [("wilcoxon", 3 / math.pi), ("sign", 2 / math.pi)])
def test_median_tests_power_for_their_parameter_by_efficiency(test, efficiency):
    # for the median tests: the t-test's power at N x ARE (normal scores), not the t-test's power at N
    scores = planted_scores(seed=2)
    t = test_roles(scores, test="t", correction="bonferroni")
    w = test_roles(scores, test=test, correction="bonferroni")
    a = w["power_alpha"].iloc[0]
    for _, row in w.iterrows():
        ref = pingouin.power_ttest(d=0.5, n=row["n"] * efficiency, alpha=a, contrast="one-sample",
                                   alternative="greater")
        assert row["power"] == pytest.approx(ref, rel=1e-9)
        need = pingouin.power_ttest(d=0.5, power=0.8, alpha=a, contrast="one-sample", alternative="greater")
        assert row["n_for_power"] == math.ceil(need / efficiency)  # rounded once (issue 20: 98 against 97)
        assert "ARE" in row["power_note"]
    assert (w["power"] < t["power"] + 1e-12).all()


def test_power_zero_where_the_test_cannot_reach_the_level():
    # the sign test at n = 5 cannot give p below 2^-5 = 0.031; with 20 hypotheses Bonferroni's level is 0.0025
    rng = np.random.default_rng(0)
    rows = [("m", "d", i, 0, h, "local", float(v)) for h in range(20) for i, v in enumerate(4 + rng.normal(size=5))]
    import pandas as pd

    table = pd.DataFrame(rows, columns=["model", "dataset", "sentence_id", "layer", "head", "role", "score"])
    out = test_roles(table, test="sign", correction="bonferroni")
    assert (out["power"] == 0).all() and np.isinf(out["mde"]).all()
    assert out["power_note"].str.contains("smallest p").all()


@pytest.mark.parametrize(
    "correction, m, r, expected",
    [
        ("none", 10, 3, 0.05),
        ("bonferroni", 10, 3, 0.005),
        ("holm", 10, 3, 0.05 / 7),
        ("holm", 10, 10, 0.05),
        ("fdr_bh", 10, 3, 0.05 * 4 / 10),
        ("fdr_by", 4, 0, 0.05 / (4 * (1 + 1 / 2 + 1 / 3 + 1 / 4))),
    ],
)
def test_next_discovery_alpha_hand_values(correction, m, r, expected):
    assert next_discovery_alpha(correction, 0.05, m, r) == pytest.approx(expected)


def test_next_discovery_alpha_is_the_threshold_for_one_more_rejection():
    # holm, m = 5, p = [.001, .2, .3, .4, .5]: one rejection; a second needs p <= .05 / 4
    from headstats.stats.corrections import correct_pvalues

    p = np.array([0.001, 0.2, 0.3, 0.4, 0.5])
    a = next_discovery_alpha("holm", 0.05, 5, 1)
    assert (correct_pvalues(np.r_[p[0], a * 0.999, p[2:]], "holm") < 0.05).sum() == 2
    assert (correct_pvalues(np.r_[p[0], a * 1.001, p[2:]], "holm") < 0.05).sum() == 1


def test_underpowered_and_summary():
    # few inputs: the tests cannot detect d = 0.5 at the Holm level; the list is every head not assigned
    # whose power at the effect of interest is below 0.8, whatever its observed mean
    pl = plant(n_layers=2, n_heads=4, roles=("local",), n_sentences=12, effect=0.5, frac_alternative=0.5, seed=9)
    out = test_roles(pl.scores)
    under = underpowered(out)
    assert len(under) >= 1
    assert (~under["reject"]).all() and (under["power"] < 0.8).all() and (under["mde"] > 0.5).all()
    assert set(map(tuple, under[["layer", "head"]].to_numpy())) == set(
        map(tuple, out.loc[~out["reject"] & (out["power"] < 0.8), ["layer", "head"]].to_numpy()))
    assert (under["n_for_power"] > under["n"]).all()
    summary = power_summary(out)
    assert list(summary.columns) == list(POWER_SUMMARY_COLUMNS)
    row = summary.iloc[0]
    assert row["n_heads"] == 8 and row["n_underpowered"] == len(under)
    assert row["n_assigned"] + row["n_not_assigned"] == 8
    assert row["max_n_for_power"] == under["n_for_power"].max() and row["effect_of_interest"] == 0.5


def test_add_power_leaves_untested_rows_nan():
    out = test_roles(planted_scores(seed=1, missing=0.0, n_sentences=3), min_n=5)
    assert out["power"].isna().all() and out["n_for_power"].isna().all() and out["bf10_two_sided"].isna().all()
    again = add_power(out)
    assert again["power"].isna().all() and again["mde"].isna().all()


@pytest.mark.parametrize("alpha, efficiency, once, twice", [(0.01, 3 / math.pi, 45, 46), (0.001, 3 / math.pi, 70, 71),
                                                            (0.05 / 432, 3 / math.pi, 93, 94),
                                                            (0.01, 2 / math.pi, None, 68)])
def test_inputs_for_power_rounds_once(alpha, efficiency, once, twice):
    from headstats.stats.power import inputs_for_power

    need = pingouin.power_ttest(d=0.5, power=0.8, alpha=alpha, contrast="one-sample", alternative="greater")
    got = inputs_for_power(0.5, power=0.8, alpha=alpha, efficiency=efficiency)
    assert got == math.ceil(need / efficiency)
    assert math.ceil(math.ceil(need) / efficiency) == twice  # the old double rounding
    if once is not None:
        assert got == once


def test_power_of_a_head_that_cannot_reach_tau_is_not_printed():
    """Issue 20: on demo_single local's mean ceiling is 2.71 < tau 3, yet power read about 1."""
    import pandas as pd

    from headstats.stats.power import mark_out_of_reach, power_summary, underpowered

    out = test_roles(planted_scores(seed=2), correction="bonferroni")
    out["score_ceiling"] = np.where(out["role"] == out["role"].iloc[0], 2.71, 40.0)
    before = out.copy()
    marked = mark_out_of_reach(out)
    low = marked["role"] == out["role"].iloc[0]
    assert low.any() and (~low).any()
    for column in ("power", "mde", "mde_score", "n_for_power"):
        assert marked.loc[low, column].isna().all()
        pd.testing.assert_series_equal(marked.loc[~low, column], before.loc[~low, column])
    assert marked.loc[low, "power_note"].str.contains("mean ceiling 2.71").all()
    assert not underpowered(marked)["role"].eq(out["role"].iloc[0]).any()
    summary = power_summary(marked).set_index("role")
    assert np.isnan(summary.loc[out["role"].iloc[0], "median_mde"])
    pd.testing.assert_frame_equal(out, before)  # a copy
