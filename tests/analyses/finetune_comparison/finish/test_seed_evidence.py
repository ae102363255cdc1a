"""The evidence of the fine-tuning claims over seeds: the exact sign-flip test, its floor, and no verdict with too
few seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.analyses.finetune_comparison.finish.replicates import seed_transitions
from headstats.analyses.finetune_comparison.finish.seed_evidence import seed_claims


def test_seed_claims_use_the_exact_sign_flip_test_and_cannot_tell_with_three_seeds():
    from headstats.stats.claim_catalog import evaluate_all_claims
    from headstats.stats.claims import ClaimSettings

    def roles(model, delim):
        return pd.DataFrame({"model": model, "dataset": "d", "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1],
                             "delimiter": delim, "syntactic": [False] * 4})
    base = roles("base", [True, True, True, False])
    tables = {"base": base, **{f"s{i}": roles(f"s{i}", [True, False, False, False]) for i in range(3)}}
    _, claims = seed_transitions(tables, "base", "g", ["s0", "s1", "s2"], ["d"])
    evidence = seed_claims(claims, alpha=0.05).set_index("claim")
    lost = evidence.loc["delimiter_heads_lost"]
    # net -2, -2, -2 over three seeds: the t-test's sd is 0; the exact sign-flip p is 1/8, never 0
    assert lost["estimate"] == -2 and lost["p_for"] == pytest.approx(0.125) and lost["floor"] == pytest.approx(0.125)
    assert lost["reason"].startswith("too few seeds: with 3 seeds the exact sign-flip test's smallest one-sided p-value is "
                                     "1/2^3 = 0.125")
    verdicts = evaluate_all_claims({"compare_seed_claims": evidence.reset_index()}, ClaimSettings())
    assert set(verdicts["verdict"]) == {"cannot tell"}
    assert verdicts["model"].tolist() == ["g", "g"]


def test_seed_claims_over_six_seeds_can_be_supported():
    from headstats.stats.claim_catalog import evaluate_all_claims
    from headstats.stats.claims import ClaimSettings

    claim = {"key": "delimiter_heads_lost", "values": np.array([-2.0, -3, -1, -2, -4, -2]), "alternative": "less",
             "group": "g", "dataset": "d", "measure": "role assignment", "detail": "planted"}
    evidence = seed_claims([claim], alpha=0.05)
    assert evidence["p_for"].iloc[0] == pytest.approx(1 / 64)
    out = evaluate_all_claims({"compare_seed_claims": evidence}, ClaimSettings())
    # one-sided in the claimed direction (METHODS 5.1): p = 1/64, no doubling (issue 32)
    assert out["verdict"].tolist() == ["supported"] and out["p"].iloc[0] == pytest.approx(1 / 64)
    assert np.isnan(evidence["p_against"].iloc[0]) and evidence["ci_high"].iloc[0] < 0  # the bound excludes 0


def test_twelve_seed_claims_over_eight_seeds_can_all_be_supported():
    # issue 32: every seed in the claimed direction, twelve claims of one comparison: two-sided (2/256 = 0.0078 >
    # 0.05 / 12) none was supported under Holm; one-sided 1/256 <= 0.05 / 12, all are
    from headstats.analyses.finetune_comparison.finish.seed_evidence import seed_claims
    from headstats.stats.claim_catalog import evaluate_all_claims
    from headstats.stats.claims import ClaimSettings

    rng = np.random.default_rng(0)
    claims = [{"key": "delimiter_heads_lost", "values": -1 - rng.random(8), "alternative": "less", "group": "g",
               "dataset": f"d{i}", "measure": "role assignment", "detail": "planted"} for i in range(12)]
    evidence = seed_claims(claims, alpha=0.05)
    out = evaluate_all_claims({"compare_seed_claims": evidence}, ClaimSettings())
    assert out["p_unc"].tolist() == pytest.approx([1 / 256] * 12)
    assert out["verdict"].tolist() == ["supported"] * 12
    assert out["family"].iloc[0] == "seed claims of g (12 that can reject)"
    # 1/2^k <= 0.05 / 12 from k = 8 on
    assert "8 in this family of 12 seed claims under holm" in out["detectable"].iloc[0]


@pytest.mark.parametrize("alternative", ["less", "greater"])
def test_the_hypothesis_text_states_the_direction_that_was_tested(alternative):
    # issue 32: the hypothesis column said "its mean is < 0" whatever was tested; it now states the one-sided
    # sign-flip test actually run, and p_for is that test's p (all 2^6 sign patterns enumerated here)
    import itertools

    from headstats.stats.claim_catalog import evaluate_all_claims
    from headstats.stats.claims import ClaimSettings

    values = np.array([-2.0, -3, -1, 2, -4, -2])
    claim = {"key": "delimiter_heads_lost", "values": values, "alternative": alternative, "group": "g",
             "dataset": "d", "measure": "role assignment", "detail": "planted"}
    evidence = seed_claims([claim], alpha=0.05)
    sums = np.array([(np.array(s) * np.abs(values)).sum() for s in itertools.product([-1, 1], repeat=6)])
    tail = (sums >= values.sum() - 1e-12) if alternative == "greater" else (sums <= values.sum() + 1e-12)
    assert evidence["p_for"].iloc[0] == pytest.approx(tail.mean(), rel=1e-12)
    sign, side = (">", "above") if alternative == "greater" else ("<", "below")
    other = "<" if sign == ">" else ">"
    out = evaluate_all_claims({"compare_seed_claims": evidence}, ClaimSettings())
    text = out["hypothesis"].iloc[0]
    assert text == ("H0: the per-seed net change of heads holding a delimiter role is symmetric about 0 (every sign "
                    f"pattern equally likely); H1 (one-sided, {alternative}): it is shifted {side} 0 (mean over "
                    f"seeds {sign} 0; exact sign-flip test, {'upper' if sign == '>' else 'lower'} tail)")
    assert f"mean over seeds {other} 0" not in text
