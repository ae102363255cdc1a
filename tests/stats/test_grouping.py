"""The grouping permutation test: hand-computed within/between means, exact p against full enumeration."""

from __future__ import annotations

from itertools import permutations
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from headstats.errors import HeadstatsError
from headstats.stats.grouping import CLUSTERING_TEST_COLUMNS, finish_clustering, group_permutation_test


def test_within_between_by_hand_and_p_against_enumeration():
    # two groups of two on a line: {0, 0.1} and {1, 1.2}
    x = np.array([0.0, 0.1, 1.0, 1.2])
    d = np.abs(x[:, None] - x[None, :])
    res = group_permutation_test(d, [0, 0, 1, 1], n_permutations=20000, seed=1)
    assert res.within_mean == pytest.approx((0.1 + 0.2) / 2)
    assert res.between_mean == pytest.approx((1.0 + 1.2 + 0.9 + 1.1) / 4)
    assert res.statistic == pytest.approx(res.between_mean - res.within_mean)
    # every one of the 24 orderings of the labels: 8 of them give the observed partition {0,1},{2,3} (the
    # largest statistic), so the exact permutation p is 1/3; the sampled p must be near it
    labels = np.array([0, 0, 1, 1])
    stats_all = []
    for perm in permutations(range(4)):
        g = labels[list(perm)]
        same = g[:, None] == g[None, :]
        iu = np.triu_indices(4, 1)
        s = same[iu]
        stats_all.append(d[iu][~s].mean() - d[iu][s].mean())
    exact = np.mean(np.array(stats_all) >= res.statistic - 1e-12)
    assert exact == pytest.approx(1 / 3)
    assert res.p_value == pytest.approx(exact, abs=0.01)
    assert res.n_items == 4 and res.n_groups == 2 and res.ratio == pytest.approx(res.within_mean / res.between_mean)


def test_no_structure_gives_a_large_p_and_seeded():
    rng = np.random.default_rng(0)
    pts = rng.standard_normal((24, 2))
    d = np.linalg.norm(pts[:, None] - pts[None, :], axis=-1)
    groups = np.repeat(np.arange(4), 6)
    a = group_permutation_test(d, groups, n_permutations=999, seed=3)
    b = group_permutation_test(d, groups, n_permutations=999, seed=3)
    assert a == b and a.p_value > 0.05


def test_bad_input():
    with pytest.raises(HeadstatsError, match="square"):
        group_permutation_test(np.zeros((3, 2)), [0, 1, 2])
    with pytest.raises(HeadstatsError, match="NaN"):
        group_permutation_test(np.full((3, 3), np.nan), [0, 0, 1])
    with pytest.raises(HeadstatsError, match="same group"):
        group_permutation_test(np.zeros((3, 3)), [0, 1, 2])


def test_finish_clustering_tests_the_js_table():
    k = np.arange(6)
    a, b = np.meshgrid(k, k, indexing="ij")
    d = np.where((a // 3) == (b // 3), 0.1, 0.4) * (a != b)
    js = pd.DataFrame({"model": "m", "dataset": "d", "layer_a": (a // 3).ravel(), "head_a": (a % 3).ravel(),
                       "layer_b": (b // 3).ravel(), "head_b": (b % 3).ravel(), "js_mean": d.ravel()})
    from headstats.analyses.clustering import ClusteringOptions

    statistics, options = SimpleNamespace(alpha=0.05), ClusteringOptions(n_permutations=199)
    out = finish_clustering({"js_distance": js}, statistics, options, 3)["clustering_tests"]
    ref = group_permutation_test(d, k // 3, n_permutations=199, seed=3)
    row = out.iloc[0]
    assert row["p_value"] == pytest.approx(ref.p_value) and row["within_mean"] == pytest.approx(0.1)
    assert row["between_mean"] == pytest.approx(0.4) and bool(row["reject"]) == (ref.p_value <= 0.05)
    assert row["n_permutations"] == 199
    # 3 layers x 4 heads perfectly layered (1 of 5,775 partitions), 99 permutations: p = 1 / 100 = alpha
    # exactly, rejected (p <= alpha, as statsmodels decides)
    k12 = np.arange(12)
    a12, b12 = np.meshgrid(k12, k12, indexing="ij")
    js12 = pd.DataFrame({"model": "m", "dataset": "d", "layer_a": (a12 // 4).ravel(), "head_a": (a12 % 4).ravel(),
                         "layer_b": (b12 // 4).ravel(), "head_b": (b12 % 4).ravel(),
                         "js_mean": (np.where((a12 // 4) == (b12 // 4), 0.1, 0.4) * (a12 != b12)).ravel()})
    edge = finish_clustering({"js_distance": js12}, SimpleNamespace(alpha=0.01), ClusteringOptions(n_permutations=99),
                             3)["clustering_tests"].iloc[0]
    assert edge["p_value"] == pytest.approx(0.01) and bool(edge["reject"])
    assert "claim" not in out and out["hypothesis"].iloc[0].startswith("H1: same-layer pairs")
    empty = finish_clustering({}, statistics, options, 3)["clustering_tests"]
    assert empty.empty and list(empty.columns) == CLUSTERING_TEST_COLUMNS


def test_finish_clustering_defaults_to_9999_permutations():
    k = np.arange(4)
    a, b = np.meshgrid(k, k, indexing="ij")
    js = pd.DataFrame({"model": "m", "dataset": "d", "layer_a": (a // 2).ravel(), "head_a": (a % 2).ravel(),
                       "layer_b": (b // 2).ravel(), "head_b": (b % 2).ravel(), "js_mean": (a != b).ravel() * 0.2})
    from headstats.analyses.clustering import ClusteringOptions

    out = finish_clustering({"js_distance": js}, SimpleNamespace(alpha=0.05), ClusteringOptions(), 0)
    assert out["clustering_tests"]["n_permutations"].tolist() == [9999]


def test_finish_clustering_rejects_at_p_equal_to_alpha():
    # the package's reject rule is p <= alpha (headstats.stats.corrections.reject); grouping said p < alpha
    from headstats.analyses.clustering import ClusteringOptions

    k = np.arange(6)
    a, b = np.meshgrid(k, k, indexing="ij")
    d = np.where((a // 3) == (b // 3), 0.1, 0.4) * (a != b)
    js = pd.DataFrame({"model": "m", "dataset": "d", "layer_a": (a // 3).ravel(), "head_a": (a % 3).ravel(),
                       "layer_b": (b // 3).ravel(), "head_b": (b % 3).ravel(), "js_mean": d.ravel()})
    ref = group_permutation_test(d, k // 3, n_permutations=99, seed=1)
    for alpha, expected in ((ref.p_value, True), (np.nextafter(ref.p_value, 0), False)):
        out = finish_clustering({"js_distance": js}, SimpleNamespace(alpha=alpha),
                                ClusteringOptions(n_permutations=99), 1)
        assert bool(out["clustering_tests"]["reject"].iat[0]) is expected
