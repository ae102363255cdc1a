"""Tests of simulations.planted: planted tables, and the error rates that the corrections control."""

from __future__ import annotations

import numpy as np
import pytest

from headstats.errors import HeadstatsError
from headstats.stats.onesample import SCORE_COLUMNS
from simulations.planted import SIMULATION_COLUMNS, draw, plant, planted_scores, simulate_error_rates


def test_plant_shape_truth_and_missing():
    pl = plant(n_layers=3, n_heads=2, roles=("local", "block"), n_sentences=10, frac_alternative=0.5,
               missing=0.3, seed=1)
    assert list(pl.scores.columns) == list(SCORE_COLUMNS)
    assert len(pl.scores) == 2 * 3 * 2 * 10
    assert len(pl.truth) == 12 and pl.truth["is_alternative"].sum() == 6
    assert set(pl.truth["true_mean"]) == {3.0, 4.5}
    # the same sentences are missing for every head of a role
    local = pl.scores[pl.scores["role"] == "local"]
    pattern = local.pivot_table(index=["layer", "head"], columns="sentence_id", values="score", dropna=False).isna()
    assert (pattern.nunique(axis=0) == 1).all() and pattern.to_numpy().any()


def test_plant_explicit_alternatives_and_reproducible():
    pl = plant(alternative_heads=[("local", 0, 1), ("delimiter", 1, 3)], seed=3)
    alt = pl.truth[pl.truth["is_alternative"]]
    assert set(zip(alt["role"], alt["layer"], alt["head"], strict=True)) == {("local", 0, 1), ("delimiter", 1, 3)}
    assert planted_scores(seed=3).equals(planted_scores(seed=3))
    assert not planted_scores(seed=3).equals(planted_scores(seed=4))


@pytest.mark.parametrize("distribution", ["normal", "gamma", "lognormal"])
def test_draw_has_the_planted_mean_and_sd(distribution):
    x = draw(np.random.default_rng(0), np.array([3.0, 4.0]), sd=1.0, size=(2, 200_000), distribution=distribution)
    assert np.allclose(x.mean(axis=1), [3.0, 4.0], atol=0.01)
    assert np.allclose(x.std(axis=1), 1.0, atol=0.02)
    with pytest.raises(HeadstatsError, match="distribution"):
        draw(np.random.default_rng(0), np.array([3.0]), sd=1.0, size=(1, 3), distribution="cauchy")


def _assert_controlled(table):
    for _, row in table.iterrows():
        if row["controls"] == "none":
            continue
        # each controlled rate is within its nominal level plus 3 Monte Carlo standard errors
        # (the se at the nominal rate guards against an estimated se of 0)
        se_nominal = np.sqrt(row["alpha"] * (1 - row["alpha"]) / row["n_replications"])
        bound = row["alpha"] + 3 * max(row["error_rate_se"], se_nominal)
        assert row["error_rate"] <= bound, (row["test"], row["correction"], row["error_rate"], bound)


def test_error_rates_are_controlled_normal():
    table = simulate_error_rates(n_replications=2000, seed=0)
    assert list(table.columns) == list(SIMULATION_COLUMNS)
    assert len(table) == 3 * 5
    _assert_controlled(table)
    t = table.set_index(["test", "correction"])
    # no correction: FWER near 1 - 0.95^60 for 60 true nulls; t-test, no correction: per-head level alpha
    assert t.loc[("t", "none"), "fwer"] > 0.9
    # power ordering: none >= fdr_bh >= holm >= bonferroni
    p = t.xs("t", level="test")["power"]
    assert p["none"] >= p["fdr_bh"] >= p["holm"] >= p["bonferroni"] > 0.5


def test_error_rates_are_controlled_skewed_scores():
    _assert_controlled(simulate_error_rates(n_replications=1000, distribution="gamma", seed=1, n_sentences=40))


def test_error_rates_resampling_tests():
    table = simulate_error_rates(tests=("permutation", "bootstrap"), n_replications=150, m_null=16, m_alt=4,
                                 n_sentences=20, n_resamples=999, seed=2, effect=1.2)
    _assert_controlled(table)
    assert (table.loc[table["correction"] == "holm", "power"] > 0.3).all()
