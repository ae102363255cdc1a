"""The registry of claims (headstats.stats.claims): verdicts, the correction over the run's claims, user claims."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from headstats.stats.claims import (
    CANNOT_TELL,
    CLAIM_COLUMNS,
    CLAIMS,
    CONTRADICTED,
    NOT_SHOWN,
    SUPPORTED,
    ClaimSettings,
    Evidence,
    claim_p,
    evaluate_claims,
    evidence_from_table,
    register_claim,
    verdict_of,
)


@pytest.fixture
def user_claim():
    """A user's claim whose evidence is planted in a table ``planted`` (one row per data set)."""
    @register_claim("planted_claim", sentence="planted heads exist", source="a test", hypothesis="H0: none; H1: some",
                    unit="heads", test="planted p-values", measure="planted estimate", tables=("planted",))
    def planted(tables, settings):
        return evidence_from_table(tables["planted"], "planted_claim")
    yield "planted_claim"
    CLAIMS.unregister("planted_claim")


def _planted(rows):
    return pd.DataFrame([{"claim": "planted_claim", "model": "m", **r} for r in rows])


def test_verdicts_follow_the_corrected_p_and_the_direction(user_claim):
    table = _planted([
        {"dataset": "a", "estimate": 1.0, "p_for": 0.001, "p_against": 0.999},  # supported
        {"dataset": "b", "estimate": -1.0, "p_for": 0.999, "p_against": 0.002},  # contradicted
        {"dataset": "c", "estimate": 0.1, "p_for": 0.30, "p_against": 0.70, "detectable": "d >= 0.5"},  # not shown
        {"dataset": "d", "reason": "role out of reach: local"},  # cannot tell
        {"dataset": "e", "estimate": 1.0, "p_for": 0.125, "p_against": 1.0, "floor": 0.125},  # floor 0.25 > alpha
    ])
    out = evaluate_claims({"planted": table}, ClaimSettings(alpha=0.05, correction="holm"), claims=[user_claim])
    assert list(out.columns) == CLAIM_COLUMNS
    out = out.set_index("dataset")
    assert out["verdict"].to_dict() == {"a": SUPPORTED, "b": CONTRADICTED, "c": NOT_SHOWN, "d": CANNOT_TELL,
                                        "e": CANNOT_TELL}
    # each claim tested both ways: p = min(1, 2 min(p_for, p_against)); Holm over the three that can reject
    p_unc = [0.002, 0.004, 0.6]
    assert out.loc[["a", "b", "c"], "p_unc"].tolist() == pytest.approx(p_unc)
    ref = multipletests(p_unc, method="holm")[1]
    assert out.loc[["a", "b", "c"], "p"].tolist() == pytest.approx(ref.tolist(), rel=1e-12)
    assert math.isnan(out.loc["d", "p"]) and math.isnan(out.loc["e", "p"])
    assert out.loc["a", "family"] == "the run's claims (3 that can reject)"
    assert out.loc["e", "reason"].startswith("design floor above alpha: the smallest p-value this design can give "
                                             "in either direction is 0.25")
    assert "d >= 0.5" in out.loc["c", "reason"]
    decided = out[out["verdict"].isin([SUPPORTED, CONTRADICTED])]
    assert ((decided["p"] > 0) & (decided["p"] <= 1)).all()


def test_a_claim_without_an_opposite_keeps_its_one_sided_p():
    assert claim_p(0.01, math.nan) == 0.01
    assert claim_p(0.01, 0.99) == pytest.approx(0.02)
    assert verdict_of(Evidence("m", "d", p_for=0.01), 0.01, 0.05) == (SUPPORTED, "")


def test_p_zero_is_never_a_verdict():
    verdict, reason = verdict_of(Evidence("m", "d", p_for=0.0, p_against=1.0), 0.0, 0.05)
    assert verdict == CANNOT_TELL and "p = 0" in reason


def test_a_p_that_underflows_on_varying_data_is_a_verdict_and_degenerate_data_is_not():
    """A one-sided t test of 2,000 attention means near 0.9 against 0.5 (sd 0.05): scipy's p underflows to 0.
    The data vary (the interval has width), so the claim is supported with p = UNDERFLOW_P, not 'cannot tell';
    the same p with a zero-width interval (sd 0) stays degenerate."""
    from scipy import stats

    from headstats.stats.claims import UNDERFLOW_P, evidence_p

    x = 0.9 + 0.05 * np.random.default_rng(0).standard_normal(2000)
    test = stats.ttest_1samp(x, 0.5, alternative="greater")
    assert test.pvalue == 0.0  # below the float range
    low = test.confidence_interval(0.95).low
    varying = Evidence("m", "d", estimate=x.mean() - 0.5, ci_low=low - 0.5, ci_high=math.inf, p_for=test.pvalue)
    assert evidence_p(varying) == UNDERFLOW_P == np.finfo(float).tiny
    assert verdict_of(varying, 72 * UNDERFLOW_P, 0.05) == (SUPPORTED, "")
    flat = Evidence("m", "d", estimate=0.4, ci_low=0.4, ci_high=0.4, p_for=0.0)
    assert evidence_p(flat) == 0.0 and verdict_of(flat, 0.0, 0.05)[0] == CANNOT_TELL


def test_claims_whose_tables_are_missing_are_left_out():
    assert evaluate_claims({}, ClaimSettings()).empty


def test_settings_are_checked():
    with pytest.raises(ValueError, match="alpha"):
        ClaimSettings(alpha=0)


def test_registering_twice_is_refused(user_claim):
    with pytest.raises(ValueError, match="already registered"):
        register_claim(user_claim, sentence="s", source="x", hypothesis="H0", unit="heads", test="t",
                       measure="m")(lambda tables, settings: [])


def test_evidence_table_round_trip():
    ev = evidence_from_table(pd.DataFrame([{"claim": "k", "model": "g", "dataset": "d", "estimate": -2.0,
                                            "p_for": 0.125, "p_against": 1.0, "floor": 0.125,
                                            "reason": np.nan}]), "k")
    assert ev == [Evidence("g", "d", estimate=-2.0, p_for=0.125, p_against=1.0, floor=0.125)]


def test_a_count_test_that_underflows_is_a_bound_never_cannot_tell(user_claim):
    # a probe beating both baselines on 12,000 words: log10 p = -730, p = 0 in float64 (issue 32, item 6):
    # it was "cannot tell (degenerate data)"; a count test gives 0 only by underflow
    from scipy import stats as sps

    from headstats.stats.claims import p_text
    assert sps.binomtest(6500, 6500 + 500, 0.5, alternative="greater").pvalue == 0.0
    table = _planted([{"dataset": "a", "estimate": 0.2, "p_for": 0.0, "underflow_only": True}])
    out = evaluate_claims({"planted": table}, ClaimSettings(), claims=[user_claim])
    assert out["verdict"].tolist() == [SUPPORTED]
    assert out["p_text"].tolist() == ["p < 1e-300"]
    assert p_text(3e-301) == "p < 1e-300" and p_text(0.0047) == "p = 0.0047" and p_text(3.1e-12) == "p = 3.1e-12"


def test_a_significant_verdict_on_an_effect_below_the_stated_size_says_so():
    # issue 32 item 9: [CLS] heads "contradicted" on a mean layer 0.18 above all heads when 66 of 72 hold the
    # role; cls_early declares a smallest effect of one layer
    from headstats.analyses import load_all_claims
    from headstats.stats.claims import CLAIMS, effect_note

    load_all_claims()  # the roles' claims are their package's
    assert CLAIMS.get("cls_early").smallest_effect == 1.0
    assert effect_note(0.18, 1.0) == "effect below the stated size (|estimate| 0.18 < 1)"
    assert effect_note(-1.5, 1.0) == "" and effect_note(0.18, float("nan")) == ""
