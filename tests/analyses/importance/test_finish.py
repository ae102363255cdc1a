"""Statistics of head importance: the removable share by hand, the pruning curve's intervals against scipy, the test
over seeds against limma's moderated t and statsmodels' Holm, and the role claims' exact permutation p-value."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from headstats.analyses.importance.finish import pruning_curve, removable_share, removable_table, seed_tests
from headstats.stats.seeds import moderated_t_over_seeds


def test_removable_share_stops_at_the_first_share_over_tolerance():
    shares = [0.0, 0.1, 0.2, 0.3, 0.4]
    assert removable_share(shares, [0.0, 0.005, 0.02, 0.0, 0.0], 0.01) == 0.1   # 0.3 is within, after a failure
    assert removable_share(shares, [0.0, 0.0, 0.0, 0.0, 0.01], 0.01) == 0.4
    assert removable_share(shares, [0.0, np.nan, 0.0, 0.0, 0.0], 0.01) == 0.0


def _inputs(model: str, correct: dict[float, list[int]]) -> pd.DataFrame:
    rows = []
    for share, values in correct.items():
        for i, c in enumerate(values):
            rows.append({"model": model, "dataset": "d", "sentence_id": str(i), "share": share,
                         "n_removed": int(round(share * 10)), "loss": 1.0 - c + share, "correct": float(c),
                         "ablation": "mean", "prune_by": "gradient"})
    return pd.DataFrame(rows)


def test_pruning_curve_intervals_match_scipy():
    correct = {0.0: [1, 1, 1, 1, 0], 0.5: [1, 0, 1, 0, 0]}
    curve = pruning_curve(_inputs("m", correct))
    row = curve[curve["share"] == 0.5].iloc[0]
    drop = np.array([0, 1, 0, 1, 0], float)
    low, high = sps.t.interval(0.95, 4, loc=drop.mean(), scale=sps.sem(drop))
    assert row["accuracy"] == pytest.approx(0.4) and row["drop"] == pytest.approx(0.4)
    assert (row["drop_ci_low"], row["drop_ci_high"]) == pytest.approx((low, high))
    table = removable_table(curve, None, tolerance=0.01)
    assert table["removable_share"].iat[0] == 0.0


def test_pruning_and_removable_over_seeds():
    frames = [_inputs(f"m{s}", {0.0: [1, 1, 1, 1], 0.5: [1, 1, 1, s > 0]}) for s in range(3)]
    curve = pruning_curve(pd.concat(frames), {"g": ["m0", "m1", "m2"]})
    seeds = curve[(curve["unit"] == "seeds") & (curve["share"] == 0.5)].iloc[0]
    accs = np.array([0.75, 1.0, 1.0])
    assert seeds["accuracy"] == pytest.approx(accs.mean())
    assert seeds["accuracy"] - seeds["accuracy_ci_low"] == pytest.approx(sps.t.ppf(0.975, 2) * sps.sem(accs))
    assert seeds["accuracy_ci_high"] == 1.0   # mean + t sem = 1.28: an accuracy's interval is cut at 1
    table = removable_table(curve, {"g": ["m0", "m1", "m2"]}, tolerance=0.01).set_index("model")
    assert table.loc["g", "removable_share"] == pytest.approx(1 / 3)   # seeds' shares 0, 0.5, 0.5
    # the t interval, 1/3 -+ t(0.975, 2) sem = (-0.38, 1.05), is cut to the shares tried, [0, 0.5]
    assert (table.loc["g", "ci_low"], table.loc["g", "ci_high"]) == (0.0, 0.5)
    assert table.loc["g", "unit"] == "seeds"


def test_seed_tests_match_moderated_t_and_holm():
    rng = np.random.default_rng(1)
    rows = []
    values = rng.normal(0.05, 0.05, size=(3, 6))
    for s in range(3):
        for k in range(6):
            rows.append({"model": f"m{s}", "dataset": "d", "layer": k // 3, "head": k % 3,
                         "mean_delta_loss": values[s, k], "importance_measure": "delta_loss"})
    table = seed_tests(pd.DataFrame(rows), {"g": ["m0", "m1", "m2"]})
    expected = moderated_t_over_seeds(values, alternative="greater")
    np.testing.assert_allclose(table["p_unc"], expected["p"])
    np.testing.assert_allclose(table["p_corr"], multipletests(expected["p"], method="holm")[1])
    assert (table["model"] == "g").all() and table["members"].iat[0] == "m0+m1+m2"


def test_replicate_groups_from_model_names():
    from headstats.analyses.importance.finish import replicate_groups

    names = ["default", "sst2-ft@seed0", "sst2-ft@seed1", "sst2-ft@seed0", "solo@seed3"]
    assert replicate_groups(names) == {"sst2-ft": ["sst2-ft@seed0", "sst2-ft@seed1"]}
