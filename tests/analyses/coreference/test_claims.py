"""coreference_head_beats_baselines leaves out a baseline that is 0 or 1 by construction, and says so."""

from __future__ import annotations

import pandas as pd
import pytest

from headstats.analyses.coreference.claims import coreference_head_beats_baselines, degenerate_baselines
from headstats.stats.claim_catalog import evaluate_all_claims
from headstats.stats.claims import CANNOT_TELL, ClaimSettings


def coref_tests(base_acc: dict[str, float]) -> pd.DataFrame:
    rows = []
    for name, acc in base_acc.items():
        for head, (accuracy, p) in enumerate([(0.5, 0.001), (0.2, 0.9)]):
            rows.append({"model": "m", "dataset": "gap", "mention_type": "all", "baseline": name, "layer": 0,
                         "head": head, "n": 100, "accuracy": accuracy, "baseline_accuracy": acc, "p_unc": p,
                         "p_corr": p})
    return pd.DataFrame(rows)


def test_a_baseline_zero_by_construction_is_never_beaten():
    tests = coref_tests({"same_head_word": 0.0, "nearest": 0.3})
    assert degenerate_baselines(tests) == ["same_head_word"]
    ev = coreference_head_beats_baselines({"coreference_tests": tests}, ClaimSettings())[0]
    assert "left out (0 or 1 by construction, never beaten): same_head_word" in ev.detail
    assert ev.estimate == pytest.approx(0.5 - 0.3)
    only = coreference_head_beats_baselines({"coreference_tests": coref_tests({"same_head_word": 0.0})},
                                            ClaimSettings())[0]
    assert only.reason.startswith("every baseline is 0 or 1 by construction")
    out = evaluate_all_claims({"coreference_tests": coref_tests({"same_head_word": 0.0})}, ClaimSettings(),
                          claims=["coreference_head_beats_baselines"])
    assert out["verdict"].tolist() == [CANNOT_TELL]
