"""Shared planted data of the comparison's tests."""

from __future__ import annotations

import pandas as pd
import pytest


@pytest.fixture
def paired_up_up_down() -> pd.DataFrame:
    """Three significant paired tests whose direction the tested estimate gives, not the median (issue 8): the
    first two rise (estimates 0.55, 0.52 with intervals above 0) though their median differences are negative, the
    third falls (-0.4) though its median difference is positive."""
    return pd.DataFrame({
        "model_before": "b", "model_after": "a", "dataset": "d", "layer": [0, 0, 1], "head": [0, 1, 0],
        "role": "local", "test": "wilcoxon", "alternative": "two-sided", "correction": "holm", "family": "f",
        "alpha": 0.05, "median_diff": [-0.02, -0.05, 0.3], "estimate": [0.55, 0.52, -0.4],
        "ci_low": [0.33, 0.40, -0.6], "ci_high": [0.74, 0.70, -0.2], "p_unc": [1e-4, 1e-4, 1e-3],
        "reject": [True, True, True],
    })
