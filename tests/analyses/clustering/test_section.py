"""The clustering section: the layer-clustering test stated, the registry's verdict (claims.csv), and its figures."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.analyses.clustering.section import clustering_claims, clustering_section
from headstats.report.blocks import Report, render_markdown
from headstats.tables import RunTables


def test_clustering_claims_and_section(tmp_path):
    k = np.arange(6)
    a, b = np.meshgrid(k, k, indexing="ij")
    js = pd.DataFrame({"model": "m", "dataset": "d", "layer_a": (a // 3).ravel(), "head_a": (a % 3).ravel(),
                       "layer_b": (b // 3).ravel(), "head_b": (b % 3).ravel(), "js_sum": 0.0,
                       "js_mean": np.where((a // 3) == (b // 3), 0.1, 0.4).ravel() * (a != b).ravel(),
                       "n_queries": 10, "n_inputs": 2})
    mds = pd.DataFrame({"model": "m", "dataset": "d", "layer": k // 3, "head": k % 3, "x": [0, 0.1, 0.2, 1, 1.1, 1.2],
                        "y": [0, 0.1, 0, 1, 1, 1.1], "stress": 0.0, "behaviour": ["prev", "broad", "mixed"] * 2})
    tests = pd.DataFrame([{"model": "m", "dataset": "d", "hypothesis": "H1: same-layer pairs closer", "n_items": 6,
                           "n_groups": 2, "within_mean": 0.1, "between_mean": 0.4, "statistic": 0.3, "ratio": 0.25,
                           "p_value": 0.1, "n_permutations": 9, "seed": 0, "alpha": 0.05, "reject": False}])
    assert "alpha = 0.05): within 0.100, between 0.400 nats (ratio 0.25), p = 0.1" in clustering_claims(tests)[0]
    from headstats.stats.claim_catalog import evaluate_all_claims

    claims = evaluate_all_claims({"clustering_tests": tests}, claims=["layer_heads_cluster"])
    report = Report("t")
    clustering_section(report, tmp_path, RunTables({"js_distance": js, "mds": mds, "clustering_tests": tests,
                                                    "claims": claims}))
    md = render_markdown(report, tmp_path)
    # 9 permutations: the smallest p is 1 / 10 > alpha, so the registry cannot tell
    assert claims["verdict"].tolist() == ["cannot tell"]
    assert "**cannot tell**; design floor above alpha" in md
    assert {p.stem for p in (tmp_path / "figures").glob("*.png")} == {"js_distance_m__d", "mds_layer_m__d",
                                                                       "mds_behaviour_m__d"}
