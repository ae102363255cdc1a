"""Tests of headstats.stats.sensitivity: the tau grid equals repeated test_roles; robustness flags."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.errors import HeadstatsError
from headstats.stats.onesample import test_roles
from headstats.stats.sensitivity import SENSITIVITY_COLUMNS, robustness, tau_sensitivity
from simulations.planted import planted_scores


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    a = planted_scores(seed=21, n_sentences=30, effect=0.8, frac_alternative=0.5, missing=0.1)
    b = planted_scores(seed=22, n_sentences=30, effect=0.8, frac_alternative=0.5, dataset="other")
    return pd.concat([a, b], ignore_index=True)


def _counts(tests: pd.DataFrame, alpha: float) -> pd.DataFrame:
    g = tests.assign(a=(tests["p_corr"] < alpha)).groupby(["model", "dataset", "role"])
    return g.agg(assigned=("a", "sum"), tested=("p_unc", "count")).reset_index()


@pytest.mark.parametrize("test", ["t", "sign"])
def test_grid_equals_test_roles_at_each_tau(scores, test):
    taus, alphas = [2.5, 3.0, 3.5], (0.01, 0.05)
    table = tau_sensitivity(scores, taus=taus, alphas=alphas, test=test, correction="fdr_bh")
    assert list(table.columns) == list(SENSITIVITY_COLUMNS)
    assert len(table) == 2 * 2 * len(taus) * len(alphas)  # datasets x roles x taus x alphas
    for tau in taus:
        for alpha in alphas:
            ref = _counts(test_roles(scores, tau=tau, alpha=alpha, test=test, correction="fdr_bh"), alpha)
            got = table[(table["tau"] == tau) & (table["alpha"] == alpha)].reset_index(drop=True)
            assert got["n_heads_assigned"].tolist() == ref["assigned"].tolist()
            assert got["n_heads_tested"].tolist() == ref["tested"].tolist()


def test_counts_fall_with_tau_for_the_t_test(scores):
    table = tau_sensitivity(scores)
    assert sorted(table["tau"].unique()) == list(np.arange(1, 4.01, 0.25))
    for _, rows in table.groupby(["dataset", "role", "alpha"]):
        counts = rows.sort_values("tau")["n_heads_assigned"].to_numpy()
        assert (np.diff(counts) <= 0).all()


def test_min_n_and_family_respected(scores):
    table = tau_sensitivity(scores, taus=[3.0], alphas=[0.05], min_n=1000)
    assert (table["n_heads_tested"] == 0).all() and (table["n_heads_assigned"] == 0).all()
    fam = tau_sensitivity(scores, taus=[3.0], alphas=[0.05], family=())
    ref = _counts(test_roles(scores, family=()), 0.05)
    assert fam["n_heads_assigned"].tolist() == ref["assigned"].tolist()


def test_bad_grids_raise(scores):
    with pytest.raises(HeadstatsError, match="alphas"):
        tau_sensitivity(scores, alphas=[0.05, 1.5])
    with pytest.raises(HeadstatsError, match="taus"):
        tau_sensitivity(scores, taus=[])


def test_robustness_columns_and_stability(scores):
    rob = robustness(scores, tests=("t", "sign"), corrections=("holm", "none"))
    keys = ["model", "dataset", "role", "layer", "head"]
    assert list(rob.columns) == keys + ["t_holm", "t_none", "sign_holm", "sign_none", "n_assigned", "stable"]
    assert len(rob) == len(test_roles(scores))
    ref = test_roles(scores, test="sign", correction="holm")
    assert rob["sign_holm"].tolist() == ref["reject"].tolist()
    block = rob[["t_holm", "t_none", "sign_holm", "sign_none"]].to_numpy()
    assert (rob["stable"] == (block.all(axis=1) | ~block.any(axis=1))).all()
    # holm never assigns what no correction would not: t_holm implies t_none
    assert not (rob["t_holm"] & ~rob["t_none"]).any()
    unstable = robustness(scores, tests=("t", "sign"), corrections=("holm", "none"), only_unstable=True)
    assert len(unstable) == (~rob["stable"]).sum() and not unstable["stable"].any()


def test_measure_arrays_give_the_same_tables_as_the_long_frame():
    from conftest import long_frame, planted_arrays

    arrays = planted_arrays(seed=5)
    frame = long_frame(arrays)
    for test in ("t", "sign"):
        pd.testing.assert_frame_equal(tau_sensitivity(arrays, test=test), tau_sensitivity(frame, test=test),
                                      check_exact=True)
    pd.testing.assert_frame_equal(robustness(arrays), robustness(frame), check_exact=True)


def test_the_test_table_and_the_grid_of_one_matrix_share_their_bounds(scores):
    """The draw-free bounds (and their tilts) found for one score matrix are kept there: the bootstrap's test
    table and tau grid read from one matrix give, value for value, what each gives on a matrix of its own."""
    from headstats.stats.matrix import score_matrix

    frame = scores.drop(columns=[c for c in ("measure",) if c in scores])
    shared = score_matrix(frame)
    table = test_roles(shared, test="bootstrap", tau=2.5)
    grid = tau_sensitivity(shared, test="bootstrap", taus=[2.5, 3.0])
    assert len(shared.bounds) > 0
    pd.testing.assert_frame_equal(table, test_roles(score_matrix(frame), test="bootstrap", tau=2.5))
    pd.testing.assert_frame_equal(grid, tau_sensitivity(score_matrix(frame), test="bootstrap", taus=[2.5, 3.0]))


def test_decides_near_level_by_importance_only_for_a_sequential_run_of_a_stream_with_tilted_draws(scores):
    """The helper the report reads says what tau_sensitivity does: the bootstrap's sequential grid estimates cells
    by importance sampling (its run has tilted cells), the sign flips' and a fixed-B run's do not."""
    from headstats.stats.sensitivity import decides_near_level_by_importance

    assert decides_near_level_by_importance("bootstrap", sequential=True, n_resamples="auto")
    assert not decides_near_level_by_importance("bootstrap", sequential=False, n_resamples="auto")
    assert not decides_near_level_by_importance("bootstrap", sequential=True, n_resamples=9999)
    assert not decides_near_level_by_importance("permutation", sequential=True, n_resamples="auto")
    assert not decides_near_level_by_importance("t", sequential=True, n_resamples="auto")
    # a correction registered by a user that is not known to be monotone (any name outside the five built in) draws
    # every resample in one look, so nothing is left to importance sampling
    assert decides_near_level_by_importance("bootstrap", sequential=True, n_resamples="auto", correction="fdr_bh")
    assert not decides_near_level_by_importance("bootstrap", sequential=True, n_resamples="auto",
                                                correction="hommel")
