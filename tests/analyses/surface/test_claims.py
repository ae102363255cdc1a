"""The claims of Clark et al. (headstats.analyses.surface.claims) on planted tables, against scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from headstats.analyses.surface.claims import broad_first_layer, previous_token_heads, sep_middle_layers
from headstats.stats.claim_catalog import evaluate_all_claims
from headstats.stats.claims import NOT_SHOWN, SUPPORTED, ClaimSettings


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


def test_previous_token_heads_is_holm_over_the_heads_of_the_uncorrected_p():
    tests = surface_tests({"prev": {(1, 2), (3, 0)}})
    ev = previous_token_heads({"surface_tests": tests}, ClaimSettings())[0]
    # Holm over the 24 heads tested for prev: the smallest adjusted p is 24 min p (issue 32)
    assert ev.p_for == pytest.approx(24 * 1e-6 * (1 + 1 * 4 + 2), rel=1e-12)
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
