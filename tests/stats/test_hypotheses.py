"""Declared hypotheses about per-input measures: each equals the house test with tau = threshold (checked
against scipy), corrected over the declared family spanning the hypotheses (checked against statsmodels)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from headstats.errors import ProtocolError
from headstats.measures import MeasureArray
from headstats.stats.hypotheses import MEASURE_TEST_COLUMNS, passing_heads, test_measures
from headstats.stats.onesample import TEST_COLUMNS


def arrays(seed=0):
    rng = np.random.default_rng(seed)
    n, layers, heads = 20, 2, 3
    prev = rng.uniform(0, 0.2, (n, layers, heads))
    prev[:, 0, 1] = rng.uniform(0.6, 0.9, n)  # head 0-1 attends to the previous token
    ratio = rng.uniform(0.3, 0.6, (n, layers, heads))
    ratio[:, 0, :] = rng.uniform(0.85, 0.95, (n, heads))  # layer 0 broad
    values = np.stack([prev, ratio], -1).astype(np.float32)
    values[3, :, :, 1] = np.nan  # an input not taking part in one measure
    return MeasureArray("m", "d", [f"s{i}" for i in range(n)], ("prev", "entropy_ratio"), values)


HYPOTHESES = [{"name": "previous_token", "measure": "prev", "threshold": 0.5},
              {"name": "broad", "measure": "entropy_ratio", "threshold": 0.75, "layers": None}]


def test_each_hypothesis_is_the_house_test_and_the_family_spans_them():
    a = arrays()
    out = test_measures(a, HYPOTHESES, correction="holm")
    assert tuple(out.columns) == MEASURE_TEST_COLUMNS and tuple(out.columns[:len(TEST_COLUMNS)]) == TEST_COLUMNS
    assert len(out) == 2 * 6 and out["role"].tolist()[:6] == ["previous_token"] * 6
    for r in out.itertuples():
        x = a.measure(r.measure)[:, r.layer, r.head].astype(float)
        x = x[np.isfinite(x)]
        ref = stats.ttest_1samp(x, r.threshold, alternative="greater")  # matches scipy
        assert r.tau == r.threshold and r.n == x.size
        assert r.statistic == pytest.approx(ref.statistic, rel=1e-5) and r.p_unc == pytest.approx(ref.pvalue, rel=1e-4)
    # Holm over all 12 hypotheses of (m, d) at once (statsmodels)
    expected = multipletests(out["p_unc"], method="holm")[1]
    np.testing.assert_allclose(out["p_corr"], expected, rtol=1e-10)
    held = passing_heads(out).set_index("role")
    assert held.loc["previous_token", "heads"] == "0-1"
    assert held.loc["broad", "heads"] == "0-0, 0-1, 0-2"
    assert (out.loc[out["role"] == "broad", "n"] == 19).all()


def test_layers_restrict_the_family():
    out = test_measures(arrays(), [{"name": "broad_l0", "measure": "entropy_ratio", "threshold": 0.75,
                                    "layers": [0]}], correction="bonferroni")
    assert sorted(set(out["layer"])) == [0] and len(out) == 3
    np.testing.assert_allclose(out["p_corr"], np.minimum(out["p_unc"] * 3, 1.0))


def test_family_per_hypothesis_and_other_tests():
    a = arrays()
    per = test_measures(a, HYPOTHESES, family=("model", "dataset", "role"), correction="bonferroni", test="wilcoxon")
    for _, part in per.groupby("role"):
        np.testing.assert_allclose(part["p_corr"], np.minimum(part["p_unc"] * 6, 1.0))
    x = a.measure("prev")[:, 0, 1].astype(float)
    ref = stats.wilcoxon(x - 0.5, alternative="greater")
    got = per[(per["role"] == "previous_token") & (per["layer"] == 0) & (per["head"] == 1)].iloc[0]
    assert got["p_unc"] == pytest.approx(ref.pvalue, rel=1e-6)


def test_bad_hypotheses():
    with pytest.raises(ProtocolError, match="unique"):
        test_measures(arrays(), [HYPOTHESES[0], HYPOTHESES[0]])
    with pytest.raises(ProtocolError, match="choose among prev, entropy_ratio"):
        test_measures(arrays(), [{"name": "x", "measure": "nope", "threshold": 0.1}])
    assert test_measures(arrays(), []).empty and isinstance(test_measures(arrays(), []), pd.DataFrame)
