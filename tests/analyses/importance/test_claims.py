"""The importance claims: the exact permutation test of the role labels, and the role claims from tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.stats.exact import label_permutation_test
from headstats.stats.claim_catalog import evaluate_all_claims
from headstats.stats.claims import ClaimSettings


def test_difference_test_is_exact_on_twenty_partitions():
    # 3 heads with the role, 3 without: C(6, 3) = 20 relabellings, the observed one the most extreme
    res = label_permutation_test(np.array([3.0, 4, 5]), np.array([0.0, 1, 2]))
    assert res.estimate == 3.0 and res.p_greater == pytest.approx(1 / 20) and res.p_less == pytest.approx(1.0)
    assert res.exact and res.floor == pytest.approx(1 / 20)
    assert res.ci_low <= res.estimate <= res.ci_high


def test_two_role_heads_get_the_exact_floor_and_an_interval_that_matches_the_test():
    # issue 32: 2 role heads of 72: the floor both ways is 2 / C(72, 2) = 7.8e-4 (not 2 / 10,000), p is scipy's exact
    # enumeration, and the interval holds 0 when the one-sided p is above 0.025
    from scipy import stats as sps

    rng = np.random.default_rng(3)
    inside, outside = rng.normal(0.6, 1, 2), rng.normal(0, 1, 70)
    res = label_permutation_test(inside, outside, n_resamples=9999, seed=5)
    assert res.exact and res.floor == pytest.approx(1 / 2556) and 2 * res.floor == pytest.approx(7.8e-4, rel=5e-3)
    ref = sps.permutation_test((inside, outside), lambda a, b, axis=-1: a.mean(axis) - b.mean(axis),
                               permutation_type="independent", vectorized=True, alternative="greater").pvalue
    assert res.p_greater == pytest.approx(ref, rel=1e-12)
    assert (res.ci_low > 0) == (res.p_greater <= 0.025) and (res.ci_high < 0) == (res.p_less <= 0.025)
    # past n_resamples labelings: n_resamples seeded ones, floor 1 / (n + 1), read from the options
    many = label_permutation_test(rng.normal(0, 1, 10), rng.normal(0, 1, 62), n_resamples=199, seed=1)
    assert not many.exact and many.floor == pytest.approx(1 / 200) and many.n_resamples == 199


def test_role_claims_read_the_permutations_from_the_importance_table():
    layer, head = np.divmod(np.arange(24), 6)
    held = np.arange(24) < 8
    base = {"model": "m", "dataset": "d", "layer": layer, "head": head}
    tables = {"importance": pd.DataFrame({**base, "importance": np.linspace(0, 1, 24), "importance_measure": "delta_loss",
                                          "n_permutations": 99, "permutation_seed": 7}),
              "roles": pd.DataFrame({**base, "local": held, "delimiter": ~held})}
    claims = evaluate_all_claims(tables, claims=["importance_role_local"])
    assert claims["floor"].iat[0] == pytest.approx(2 / 100)  # both ways: 2 / (99 + 1)
    assert "99 seeded random labelings (seed 7)" in claims["detectable"].iat[0]


def test_role_claims_from_tables():
    layer, head = np.divmod(np.arange(24), 6)
    held = np.arange(24) < 8
    importance = np.where(held, 1.0, 0.0) + np.linspace(0, 0.1, 24)
    base = {"model": "m", "dataset": "d", "layer": layer, "head": head}
    tables = {"importance": pd.DataFrame({**base, "importance": importance, "importance_measure": "delta_loss"}),
              "roles": pd.DataFrame({**base, "local": held, "delimiter": ~held})}
    claims = evaluate_all_claims(tables, claims=["importance_role_local", "delimiter_heads_least_important"])
    verdicts = dict(zip(claims["claim"], claims["verdict"]))
    assert verdicts == {"importance_role_local": "supported", "delimiter_heads_least_important": "supported"}
    assert claims["estimate"].iat[0] == pytest.approx(importance[held].mean() - importance[~held].mean())


def test_role_claims_read_the_permutations_from_the_importance_table():
    layer, head = np.divmod(np.arange(24), 6)
    held = np.arange(24) < 8
    base = {"model": "m", "dataset": "d", "layer": layer, "head": head}
    tables = {"importance": pd.DataFrame({**base, "importance": np.linspace(0, 1, 24), "importance_measure": "delta_loss",
                                          "n_permutations": 99, "permutation_seed": 7}),
              "roles": pd.DataFrame({**base, "local": held, "delimiter": ~held})}
    claims = evaluate_all_claims(tables, claims=["importance_role_local"])
    assert claims["floor"].iat[0] == pytest.approx(2 / 100)  # both ways: 2 / (99 + 1)
    assert "99 seeded random labelings (seed 7)" in claims["detectable"].iat[0]


def test_the_spearman_interval_covers_at_its_stated_level():
    # bivariate normal, rho = 0.6, 40 heads: the population Spearman rho is 6 / pi asin(rho / 2); the Pearson
    # variance 1 / (n - 3) covered it 0.941 of the time at 0.95 (issue 32); Bonett-Wright's covers 0.95
    from scipy import stats as sps

    from headstats.analyses.importance.claims import spearman_interval

    rng = np.random.default_rng(32)
    rho, n, n_sim = 0.6, 40, 2000
    truth = 6 / np.pi * np.arcsin(rho / 2)
    cov = [[1, rho], [rho, 1]]
    hits = 0
    for _ in range(n_sim):
        x = rng.multivariate_normal([0, 0], cov, size=n)
        low, high = spearman_interval(float(sps.spearmanr(x[:, 0], x[:, 1]).statistic), n, 0.95)
        hits += low <= truth <= high
    assert abs(hits / n_sim - 0.95) <= 2 * np.sqrt(0.95 * 0.05 / n_sim)
