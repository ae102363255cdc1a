"""layer_heads_cluster reads the clustering's permutation test, with its floor 1 / (B + 1)."""

from __future__ import annotations

import pandas as pd
import pytest

from headstats.stats.claim_catalog import evaluate_all_claims
from headstats.stats.claims import SUPPORTED, ClaimSettings


def test_clustering_claim_reads_the_permutation_test_with_its_floor():
    table = pd.DataFrame([{"model": "m", "dataset": "d", "claim": "heads of one layer sit together", "n_items": 24,
                           "n_groups": 6, "within_mean": 0.1, "between_mean": 0.3, "statistic": 0.2, "ratio": 0.33,
                           "p_value": 1 / 10000, "n_permutations": 9999, "seed": 0, "alpha": 0.05, "reject": True}])
    out = evaluate_all_claims({"clustering_tests": table}, ClaimSettings(), claims=["layer_heads_cluster"])
    assert out["verdict"].tolist() == [SUPPORTED] and out["floor"].iloc[0] == pytest.approx(1e-4)
