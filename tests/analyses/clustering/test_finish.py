"""finish_clustering: the permutation test of the layer labels on the JS divergences, per model and data set."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from headstats.analyses.clustering.finish import CLUSTERING_TEST_COLUMNS, finish_clustering
from headstats.stats.grouping import group_permutation_test
from headstats.tables import RunTables


def test_finish_clustering_tests_the_js_table():
    k = np.arange(6)
    a, b = np.meshgrid(k, k, indexing="ij")
    d = np.where((a // 3) == (b // 3), 0.1, 0.4) * (a != b)
    js = pd.DataFrame({"model": "m", "dataset": "d", "layer_a": (a // 3).ravel(), "head_a": (a % 3).ravel(),
                       "layer_b": (b // 3).ravel(), "head_b": (b % 3).ravel(), "js_mean": d.ravel()})
    from headstats.analyses.clustering.options import ClusteringOptions

    statistics, options = SimpleNamespace(alpha=0.05), ClusteringOptions(n_permutations=199)
    out = finish_clustering(RunTables({"js_distance": js}), statistics, options, 3)["clustering_tests"]
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
    edge = finish_clustering(RunTables({"js_distance": js12}), SimpleNamespace(alpha=0.01),
                             ClusteringOptions(n_permutations=99), 3)["clustering_tests"].iloc[0]
    assert edge["p_value"] == pytest.approx(0.01) and bool(edge["reject"])
    assert "claim" not in out and out["hypothesis"].iloc[0].startswith("H1: same-layer pairs")
    empty = finish_clustering(RunTables(), statistics, options, 3)["clustering_tests"]
    assert empty.empty and list(empty.columns) == CLUSTERING_TEST_COLUMNS


def test_finish_clustering_defaults_to_9999_permutations():
    k = np.arange(4)
    a, b = np.meshgrid(k, k, indexing="ij")
    js = pd.DataFrame({"model": "m", "dataset": "d", "layer_a": (a // 2).ravel(), "head_a": (a % 2).ravel(),
                       "layer_b": (b // 2).ravel(), "head_b": (b % 2).ravel(), "js_mean": (a != b).ravel() * 0.2})
    from headstats.analyses.clustering.options import ClusteringOptions

    out = finish_clustering(RunTables({"js_distance": js}), SimpleNamespace(alpha=0.05), ClusteringOptions(), 0)
    assert out["clustering_tests"]["n_permutations"].tolist() == [9999]


def test_finish_clustering_rejects_at_p_equal_to_alpha():
    # the package's reject rule is p <= alpha (headstats.stats.corrections.reject); grouping said p < alpha
    from headstats.analyses.clustering.options import ClusteringOptions

    k = np.arange(6)
    a, b = np.meshgrid(k, k, indexing="ij")
    d = np.where((a // 3) == (b // 3), 0.1, 0.4) * (a != b)
    js = pd.DataFrame({"model": "m", "dataset": "d", "layer_a": (a // 3).ravel(), "head_a": (a % 3).ravel(),
                       "layer_b": (b // 3).ravel(), "head_b": (b % 3).ravel(), "js_mean": d.ravel()})
    ref = group_permutation_test(d, k // 3, n_permutations=99, seed=1)
    for alpha, expected in ((ref.p_value, True), (np.nextafter(ref.p_value, 0), False)):
        out = finish_clustering(RunTables({"js_distance": js}), SimpleNamespace(alpha=alpha),
                                ClusteringOptions(n_permutations=99), 1)
        assert bool(out["clustering_tests"]["reject"].iat[0]) is expected


def test_the_permutation_test_says_when_it_starts_through_the_spec_log():
    """Through the registry's ``finished`` (as the study calls it), each (model, data set) logs one line."""
    from headstats.analyses import get_analysis
    from headstats.analyses.clustering.options import ClusteringOptions

    k = np.arange(6)
    a, b = np.meshgrid(k, k, indexing="ij")
    js = pd.concat([pd.DataFrame({"model": "m", "dataset": name, "layer_a": (a // 3).ravel(),
                                  "head_a": (a % 3).ravel(), "layer_b": (b // 3).ravel(), "head_b": (b % 3).ravel(),
                                  "js_mean": (0.1 * (a != b)).ravel()}) for name in ("d1", "d2")])
    lines: list[str] = []
    out = get_analysis("clustering").finished({"js_distance": js}, SimpleNamespace(alpha=0.05),
                                              ClusteringOptions(n_permutations=199), 0, log=lines.append)
    assert lines == [f"clustering: permutation test of the layers of m / {d} (199 permutations of 6 heads)"
                     for d in ("d1", "d2")]
    assert len(out["clustering_tests"]) == 2
