"""Tests of headstats.stats.power and the power columns of test_roles."""

from __future__ import annotations

import math

import numpy as np
import pingouin
import pytest

from headstats.stats.onesample import next_discovery_alpha, test_roles
from headstats.stats.power import POWER_SUMMARY_COLUMNS, add_power, power_summary, underpowered
from headstats.stats.simulation import plant, planted_scores


def test_power_columns_match_pingouin_at_the_family_level():
    out = test_roles(planted_scores(seed=2, effect=0.6), correction="bonferroni")
    m = out["p_unc"].notna().sum()
    assert np.allclose(out["power_alpha"], 0.05 / m)
    for _, row in out.iterrows():
        d = (row["mean"] - row["tau"]) / row["sd"]
        ref = pingouin.power_ttest(d=d, n=row["n"], alpha=0.05 / m, contrast="one-sample", alternative="greater")
        assert row["power"] == pytest.approx(ref, rel=1e-10)  # matches pingouin.power_ttest
        if d > 0:
            need = pingouin.power_ttest(d=d, power=0.8, alpha=0.05 / m, contrast="one-sample", alternative="greater")
            assert row["n_for_power"] == max(2, math.ceil(need))  # matches pingouin.power_ttest(n=None)
        else:
            assert np.isnan(row["n_for_power"])
        assert row["bf10_two_sided"] == pytest.approx(pingouin.bayesfactor_ttest(d * math.sqrt(row["n"]), row["n"]),
                                                      rel=1e-8)  # matches pingouin.bayesfactor_ttest


def test_non_t_tests_get_the_t_approximation():
    scores = planted_scores(seed=2)
    t = test_roles(scores, test="t")
    w = test_roles(scores, test="wilcoxon")
    # same d, n; only power_alpha (via the number of rejections) may differ
    same = np.isclose(t["power_alpha"], w["power_alpha"])
    assert np.allclose(t.loc[same, "power"], w.loc[same, "power"])


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
    # small effects with few inputs: not assigned although above tau
    pl = plant(n_layers=2, n_heads=4, roles=("local",), n_sentences=12, effect=0.5, frac_alternative=0.5, seed=9)
    out = test_roles(pl.scores)
    under = underpowered(out)
    assert len(under) >= 1
    assert (~under["reject"]).all() and (under["mean"] > under["tau"]).all() and (under["power"] < 0.8).all()
    assert (under["n_for_power"].dropna() > under["n"].loc[under["n_for_power"].notna()]).all()
    summary = power_summary(out)
    assert list(summary.columns) == list(POWER_SUMMARY_COLUMNS)
    row = summary.iloc[0]
    assert row["n_heads"] == 8 and row["n_underpowered"] == len(under)
    assert row["n_assigned"] + row["n_not_assigned"] == 8
    assert row["max_n_for_power"] == under["n_for_power"].max()


def test_add_power_leaves_untested_rows_nan():
    out = test_roles(planted_scores(seed=1, missing=0.0, n_sentences=3), min_n=5)
    assert out["power"].isna().all() and out["n_for_power"].isna().all() and out["bf10_two_sided"].isna().all()
    again = add_power(out)
    assert again["power"].isna().all()
