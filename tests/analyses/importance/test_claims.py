"""The importance claims: the layer-stratified permutation test of the role labels (exact where the labelings are
few, enumerated here by itertools), and the role claims from tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.stats.exact import label_permutation_test
from headstats.stats.claim_catalog import evaluate_all_claims
from headstats.stats.claims import ClaimSettings


def test_difference_test_is_exact_on_twenty_partitions():
    # 3 heads with the role, 3 without: C(6, 3) = 20 relabellings, the observed one the most extreme
    res = label_permutation_test(np.array([3.0, 4, 5, 0, 1, 2]), np.array([True] * 3 + [False] * 3))
    assert res.estimate == 3.0 and res.p_greater == pytest.approx(1 / 20) and res.p_less == pytest.approx(1.0)
    assert res.exact and res.floor == pytest.approx(1 / 20)
    assert res.ci_low <= res.estimate <= res.ci_high


def test_two_role_heads_get_the_exact_floor_and_an_interval_that_matches_the_test():
    # issue 32: 2 role heads of 72: the floor both ways is 2 / C(72, 2) = 7.8e-4 (not 2 / 10,000), p is scipy's exact
    # enumeration, and the interval holds 0 when the one-sided p is above 0.025
    from scipy import stats as sps

    rng = np.random.default_rng(3)
    inside, outside = rng.normal(0.6, 1, 2), rng.normal(0, 1, 70)
    res = label_permutation_test(np.concatenate([inside, outside]), np.arange(72) < 2, n_resamples=9999, seed=5)
    assert res.exact and res.floor == pytest.approx(1 / 2556) and 2 * res.floor == pytest.approx(7.8e-4, rel=5e-3)
    ref = sps.permutation_test((inside, outside), lambda a, b, axis=-1: a.mean(axis) - b.mean(axis),
                               permutation_type="independent", vectorized=True, alternative="greater").pvalue
    assert res.p_greater == pytest.approx(ref, rel=1e-12)
    assert (res.ci_low > 0) == (res.p_greater <= 0.025) and (res.ci_high < 0) == (res.p_less <= 0.025)
    # past n_resamples labelings: n_resamples seeded ones, floor 1 / (n + 1), read from the options
    many = label_permutation_test(rng.normal(0, 1, 72), np.arange(72) < 10, n_resamples=199, seed=1)
    assert not many.exact and many.floor == pytest.approx(1 / 200) and many.n_resamples == 199


def test_role_claims_read_the_permutations_from_the_importance_table():
    layer, head = np.divmod(np.arange(24), 6)
    held = head < 2  # 2 of 6 heads in each of 4 layers: 15^4 = 50,625 stratified labelings > 99
    base = {"model": "m", "dataset": "d", "layer": layer, "head": head}
    tables = {"importance": pd.DataFrame({**base, "importance": np.linspace(0, 1, 24), "importance_measure": "delta_loss",
                                          "n_permutations": 99, "permutation_seed": 7}),
              "roles": pd.DataFrame({**base, "local": held, "delimiter": ~held})}
    claims = evaluate_all_claims(tables, claims=["importance_role_local"])
    assert claims["floor"].iat[0] == pytest.approx(2 / 100)  # both ways: 2 / (99 + 1)
    assert "99 seeded random labelings (seed 7)" in claims["detectable"].iat[0]


def test_role_claims_from_tables():
    layer, head = np.divmod(np.arange(24), 6)
    held = head < 2
    importance = np.where(held, 1.0, 0.0) + np.linspace(0, 0.1, 24)
    base = {"model": "m", "dataset": "d", "layer": layer, "head": head}
    tables = {"importance": pd.DataFrame({**base, "importance": importance, "importance_measure": "delta_loss"}),
              "roles": pd.DataFrame({**base, "local": held, "delimiter": ~held})}
    claims = evaluate_all_claims(tables, claims=["importance_role_local", "delimiter_heads_least_important"])
    verdicts = dict(zip(claims["claim"], claims["verdict"]))
    assert verdicts == {"importance_role_local": "supported", "delimiter_heads_least_important": "supported"}
    # every layer holds 2 of 6: equal weights, the estimate is the mean of the four within-layer differences
    within = [importance[(layer == l) & held].mean() - importance[(layer == l) & ~held].mean() for l in range(4)]
    assert claims["estimate"].iat[0] == pytest.approx(np.mean(within), rel=1e-12)


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


def _stratified_sums(values, held, layers):
    """Every labeling that keeps the number of held units per layer, enumerated by itertools: the sum of the
    labelled values of each (the test's statistic given the layers' totals)."""
    import itertools

    per_layer = []
    for layer in np.unique(layers):
        idx = np.flatnonzero(layers == layer)
        per_layer.append([values[list(c)].sum() for c in itertools.combinations(idx, int(held[idx].sum()))])
    return np.array([sum(parts) for parts in itertools.product(*per_layer)])


def test_the_stratified_test_is_the_enumeration_of_the_labelings_that_keep_the_layer_counts():
    # issue 33 item 5: 3 layers of 4 heads, role heads 1 / 2 / 1 per layer: C(4,1) C(4,2) C(4,1) = 96 labelings
    rng = np.random.default_rng(33)
    layers = np.repeat([0, 1, 2], 4)
    held = np.isin(np.arange(12), [0, 4, 5, 8])
    values = rng.normal(0, 1, 12) + 0.8 * held + layers
    res = label_permutation_test(values, held, strata=layers, n_resamples=9999)
    sums = _stratified_sums(values, held, layers)
    observed = values[held].sum()
    assert res.exact and res.n_arrangements == 96 and len(sums) == 96 and res.floor == pytest.approx(1 / 96)
    assert res.p_greater == pytest.approx(np.mean(sums >= observed - 1e-12), rel=1e-12)
    assert res.p_less == pytest.approx(np.mean(sums <= observed + 1e-12), rel=1e-12)
    # the estimate: the within-layer differences weighted k(n - k)/n = 3/4, 1, 3/4
    diffs = [values[(layers == l) & held].mean() - values[(layers == l) & ~held].mean() for l in range(3)]
    assert res.estimate == pytest.approx(np.average(diffs, weights=[0.75, 1.0, 0.75]), rel=1e-12)
    assert (res.ci_low > 0) == (res.p_greater <= 0.025) and res.ci_low <= res.estimate <= res.ci_high
    # a layer whose heads all hold the role (or none) is fixed: adding one leaves p unchanged
    more = label_permutation_test(np.r_[values, 5.0, 6.0], np.r_[held, True, True], strata=np.r_[layers, 3, 3])
    assert more.p_greater == pytest.approx(res.p_greater, rel=1e-12) and more.n_strata == 3


def test_seeded_stratified_draws_agree_with_the_enumeration():
    # 4 layers of 6 heads, 2 role heads each: 15^4 = 50,625 labelings; 4,000 seeded draws that keep the layer
    # counts estimate the exact p within Monte Carlo error, with p = (1 + #) / (1 + draws)
    rng = np.random.default_rng(5)
    layers = np.repeat(np.arange(4), 6)
    held = np.tile(np.arange(6) < 2, 4)
    values = rng.normal(0, 1, 24) + 0.5 * held
    exact = label_permutation_test(values, held, strata=layers, n_resamples=60_000)
    drawn = label_permutation_test(values, held, strata=layers, n_resamples=4_000, seed=2)
    assert exact.exact and exact.n_arrangements == 15 ** 4 and not drawn.exact
    assert drawn.floor == pytest.approx(1 / 4001)
    sd = np.sqrt(exact.p_greater * (1 - exact.p_greater) / 4000)
    assert abs(drawn.p_greater - exact.p_greater) <= 4 * sd + 1 / 4001
    again = label_permutation_test(values, held, strata=layers, n_resamples=4_000, seed=2)
    assert again.p_greater == drawn.p_greater  # seeded


def test_role_heads_in_the_layers_that_matter_are_not_credited_with_their_layer():
    # importance grows with depth; the role sits mostly in the last layer and is no different from its layer's
    # other heads: the unstratified test calls it important, the layer-matched one does not
    layer, head = np.divmod(np.arange(24), 6)
    held = ((layer == 3) & (head < 4)) | ((layer == 2) & (head < 2))
    importance = 2.0 * layer + np.tile([0.3, 0.1, 0.5, 0.0, 0.4, 0.2], 4)
    sums = _stratified_sums(importance, held, layer)
    stratified = label_permutation_test(importance, held, strata=layer, n_resamples=9999)
    assert stratified.p_greater == pytest.approx(np.mean(sums >= importance[held].sum() - 1e-12), rel=1e-12)
    assert stratified.p_greater > 0.2
    pooled = label_permutation_test(importance, held, n_resamples=99_999)
    assert pooled.p_greater < 0.01
    base = {"model": "m", "dataset": "d", "layer": layer, "head": head}
    tables = {"importance": pd.DataFrame({**base, "importance": importance, "importance_measure": "delta_loss",
                                          "n_permutations": 9999, "permutation_seed": 0}),
              "roles": pd.DataFrame({**base, "local": held, "delimiter": ~held})}
    row = evaluate_all_claims(tables, claims=["importance_role_local"]).iloc[0]
    assert row["verdict"] == "not shown" and row["p_for"] == pytest.approx(stratified.p_greater, rel=1e-12)
    assert "exact: all 225 labelings that keep the local heads per layer" in row["detectable"]
    assert "layer 2: 2 of 6, layer 3: 4 of 6" in row["detail"]
    # with 15 labelings no shift can be rejected at 0.025 on either side: the interval is the whole line
    few = label_permutation_test(importance, (layer == 3) & (head < 2), strata=layer)
    assert few.n_arrangements == 15 and few.ci_low == -np.inf and few.ci_high == np.inf


def test_a_role_held_by_whole_layers_cannot_tell():
    layer, head = np.divmod(np.arange(24), 6)
    held = layer >= 2
    base = {"model": "m", "dataset": "d", "layer": layer, "head": head}
    tables = {"importance": pd.DataFrame({**base, "importance": layer * 1.0, "importance_measure": "delta_loss"}),
              "roles": pd.DataFrame({**base, "local": held, "delimiter": ~held})}
    row = evaluate_all_claims(tables, claims=["importance_role_local"]).iloc[0]
    assert row["verdict"] == "cannot tell"
    assert row["reason"].startswith("no layer holds both local heads and other heads (layer 2: 6 of 6, layer 3: 6 of 6)")
