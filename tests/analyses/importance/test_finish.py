"""Statistics of head importance: the removable share by hand, the pruning curve's intervals against scipy, the test
over seeds against limma's moderated t and statsmodels' Holm, and the role claims' exact permutation p-value."""

from __future__ import annotations

import itertools

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
    table = removable_table(_inputs("m", correct), None, curve=curve, tolerance=0.01)
    assert table["removable_share"].iat[0] == 0.0


def test_pruning_and_removable_over_seeds():
    frames = [_inputs(f"m{s}", {0.0: [1, 1, 1, 1], 0.5: [1, 1, 1, s > 0]}) for s in range(3)]
    curve = pruning_curve(pd.concat(frames), {"g": ["m0", "m1", "m2"]})
    seeds = curve[(curve["unit"] == "seeds") & (curve["share"] == 0.5)].iloc[0]
    accs = np.array([0.75, 1.0, 1.0])
    assert seeds["accuracy"] == pytest.approx(accs.mean())
    assert seeds["accuracy"] - seeds["accuracy_ci_low"] == pytest.approx(sps.t.ppf(0.975, 2) * sps.sem(accs))
    assert seeds["accuracy_ci_high"] == 1.0   # mean + t sem = 1.28: an accuracy's interval is cut at 1
    table = removable_table(pd.concat(frames), {"g": ["m0", "m1", "m2"]}, curve=curve,
                            tolerance=0.01).set_index("model")
    assert table.loc["g", "removable_share"] == pytest.approx(1 / 3)   # seeds' shares 0, 0.5, 0.5
    # two-stage bootstrap, by hand: m0's share is 0.5 only when its one failing input is left out of a resample
    # (0.75^4 = 0.316), m1 and m2's always 0.5; a drawn seed's share is 0 with q = (1 - 0.316) / 3 = 0.228, so
    # the mean of three is 0 with q^3 = 0.012 < 0.025 and at most 1/6 with 0.012 + 3 q^2 (1 - q) = 0.132
    assert (table.loc["g", "ci_low"], table.loc["g", "ci_high"]) == (pytest.approx(1 / 6), 0.5)
    assert table.loc["g", "unit"] == "seeds" and table.loc["g", "interval"].startswith("two-stage percentile")


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


SHARES = np.array([0.0, 0.25, 0.5, 0.75])


def _grid_inputs(model: str, correct: np.ndarray) -> pd.DataFrame:
    """Inputs x shares of 0/1 correctness as ``importance_pruning_inputs`` rows."""
    rows = [{"model": model, "dataset": "d", "sentence_id": str(i), "share": share, "n_removed": j, "loss": 1.0,
             "correct": float(correct[i, j]), "ablation": "mean", "prune_by": "gradient"}
            for i in range(correct.shape[0]) for j, share in enumerate(SHARES)]
    return pd.DataFrame(rows)


def _exact_quantiles(stats: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of an exactly enumerated bootstrap law (all equally likely resamples): the
    smallest values whose CDF reaches (1 - confidence) / 2 and (1 + confidence) / 2."""
    values, counts = np.unique(stats, return_counts=True)
    cdf = np.cumsum(counts) / len(stats)
    tail = (1 - confidence) / 2
    assert np.abs(cdf - tail).min() > 0.01 and np.abs(cdf - 1 + tail).min() > 0.01  # no quantile on a jump
    return float(values[np.argmax(cdf >= tail)]), float(values[np.argmax(cdf >= 1 - tail)])


CORRECT = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 1, 0]])


def test_the_removable_share_interval_is_the_bootstrap_over_inputs_enumerated():
    # issue 32 item 7: the removable share had no interval per model (and zero width over agreeing seeds). Five
    # inputs: all 5^5 = 3,125 ordered resamples enumerated by itertools give the bootstrap law of the share
    drops = CORRECT[:, [0]] - CORRECT
    law = np.array([removable_share(SHARES, drops[list(pick)].mean(axis=0), 0.25)
                    for pick in itertools.product(range(5), repeat=5)])
    table = removable_table(_grid_inputs("m", CORRECT), None, tolerance=0.25, n_resamples=20_000, seed=3)
    row = table.iloc[0]
    assert row["removable_share"] == removable_share(SHARES, drops.mean(axis=0), 0.25) == 0.25
    assert (row["ci_low"], row["ci_high"]) == _exact_quantiles(law) == (0.0, 0.5)
    assert row["interval"] == "percentile bootstrap over inputs (20000 resamples)" and row["n"] == 5


def test_agreeing_seeds_keep_their_inputs_uncertainty():
    # three seeds with the same inputs and drops: the t interval over their equal shares had zero width; the
    # two-stage bootstrap (seeds, then inputs within each) has the inputs' spread. Reference: the two-stage law
    # enumerated for two seeds of three inputs (2^2 seed draws x 27 x 27 input draws)
    small = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 1, 1]])
    drops = small[:, [0]] - small
    per_seed = {pick: removable_share(SHARES, drops[list(pick)].mean(axis=0), 0.4)
                for pick in itertools.product(range(3), repeat=3)}
    law = np.array([(per_seed[a] + per_seed[b]) / 2 for _seeds in itertools.product(range(2), repeat=2)
                    for a in per_seed for b in per_seed])
    frames = pd.concat([_grid_inputs(f"m{s}", small) for s in range(2)])
    table = removable_table(frames, {"g": ["m0", "m1"]}, tolerance=0.4, n_resamples=20_000, seed=1).set_index("model")
    assert table.loc["m0", "removable_share"] == table.loc["m1", "removable_share"] == table.loc["g", "removable_share"]
    assert (table.loc["g", "ci_low"], table.loc["g", "ci_high"]) == _exact_quantiles(law)
    assert table.loc["g", "ci_high"] > table.loc["g", "ci_low"]
