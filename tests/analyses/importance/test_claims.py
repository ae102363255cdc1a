"""The importance claims: the exact permutation test of the role labels, and the role claims from tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.analyses.importance.claims import _difference_test
from headstats.stats.claim_catalog import evaluate_all_claims
from headstats.stats.claims import ClaimSettings


def test_difference_test_is_exact_on_twenty_partitions():
    # 3 heads with the role, 3 without: C(6, 3) = 20 relabellings, the observed one the most extreme
    est, low, high, greater, less, floor = _difference_test(np.array([3.0, 4, 5]), np.array([0.0, 1, 2]),
                                                            ClaimSettings())
    assert est == 3.0 and greater == pytest.approx(1 / 20) and less == pytest.approx(1.0)
    assert low <= est <= high


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
