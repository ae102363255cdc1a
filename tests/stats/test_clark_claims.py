"""The claims of Clark et al. (headstats.stats.clark_claims) on planted tables, against scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from headstats.stats.claim_catalog import evaluate_all_claims
from headstats.stats.claims import CANNOT_TELL, NOT_SHOWN, SUPPORTED, ClaimSettings
from headstats.stats.clark_claims import (
    broad_first_layer,
    coreference_head_beats_baselines,
    degenerate_baselines,
    previous_token_heads,
    sep_middle_layers,
)


def surface_tests(passing: dict[str, set[tuple[int, int]]], layers: int = 6, heads: int = 4) -> pd.DataFrame:
    rows = []
    p_of = {}
    for measure, thr in (("prev", 0.5), ("entropy_ratio", 0.75), ("sep", 0.5)):
        for layer in range(layers):
            for head in range(heads):
                ok = (layer, head) in passing.get(measure, set())
                p = 1e-6 * (1 + layer * heads + head) if ok else 0.5
                p_of[(measure, layer, head)] = p
                rows.append({"model": "m", "dataset": "d", "role": measure, "layer": layer, "head": head,
                             "measure": measure, "threshold": thr, "mean": thr + (0.3 if ok else -0.2),
                             "ci_low": thr + (0.2 if ok else -0.3), "ci_high": np.inf, "p_unc": p, "p_corr": p,
                             "correction": "holm", "reject": ok})
    return pd.DataFrame(rows)


def test_previous_token_heads_is_the_smallest_corrected_p():
    tests = surface_tests({"prev": {(1, 2), (3, 0)}})
    ev = previous_token_heads({"surface_tests": tests}, ClaimSettings())[0]
    assert ev.p_for == pytest.approx(1e-6 * (1 + 1 * 4 + 2))
    assert ev.estimate == pytest.approx(0.3) and ev.ci_low == pytest.approx(0.2)
    assert "2 of 24 heads pass" in ev.detail
    out = evaluate_all_claims({"surface_tests": tests}, ClaimSettings(), claims=["previous_token_heads"])
    assert out["verdict"].tolist() == [SUPPORTED]
    nothing = evaluate_all_claims({"surface_tests": surface_tests({})}, ClaimSettings(), claims=["previous_token_heads"])
    assert nothing["verdict"].tolist() == [NOT_SHOWN]


def test_broad_first_layer_is_fishers_exact_test():
    broad = {(0, h) for h in range(4)} | {(2, 1)}
    ev = broad_first_layer({"surface_tests": surface_tests({"entropy_ratio": broad})}, ClaimSettings())[0]
    grid = [[4, 0], [1, 19]]
    assert ev.p_for == pytest.approx(sps.fisher_exact(grid, alternative="greater").pvalue, rel=1e-12)
    assert ev.p_against == pytest.approx(sps.fisher_exact(grid, alternative="less").pvalue, rel=1e-12)


def test_sep_middle_layers_compares_the_middle_third():
    sep = {(2, h) for h in range(4)} | {(3, h) for h in range(3)}
    ev = sep_middle_layers({"surface_tests": surface_tests({"sep": sep})}, ClaimSettings())[0]
    grid = [[7, 1], [0, 16]]  # layers 2-3 of 6 are the middle third
    assert ev.p_for == pytest.approx(sps.fisher_exact(grid, alternative="greater").pvalue, rel=1e-12)
    none = sep_middle_layers({"surface_tests": surface_tests({})}, ClaimSettings())[0]
    assert none.reason.startswith("too few heads")


def coref_tests(base_acc: dict[str, float]) -> pd.DataFrame:
    rows = []
    for name, acc in base_acc.items():
        for head, (accuracy, p) in enumerate([(0.5, 0.001), (0.2, 0.9)]):
            rows.append({"model": "m", "dataset": "gap", "mention_type": "all", "baseline": name, "layer": 0,
                         "head": head, "n": 100, "accuracy": accuracy, "baseline_accuracy": acc, "p_corr": p})
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


def test_clustering_claim_reads_the_permutation_test_with_its_floor():
    table = pd.DataFrame([{"model": "m", "dataset": "d", "claim": "heads of one layer sit together", "n_items": 24,
                           "n_groups": 6, "within_mean": 0.1, "between_mean": 0.3, "statistic": 0.2, "ratio": 0.33,
                           "p_value": 1 / 10000, "n_permutations": 9999, "seed": 0, "alpha": 0.05, "reject": True}])
    out = evaluate_all_claims({"clustering_tests": table}, ClaimSettings(), claims=["layer_heads_cluster"])
    assert out["verdict"].tolist() == [SUPPORTED] and out["floor"].iloc[0] == pytest.approx(1e-4)
