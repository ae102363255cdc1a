"""Pande et al.'s fine-tuning claims, registered as tests over seeds, each in the family of its comparison."""

from __future__ import annotations

import pandas as pd

from headstats.stats.claim_catalog import ordered_claims
from headstats.stats.claims import CLAIMS, ClaimSettings
from headstats.stats.paper_claims import SEED_CLAIMS, SEED_FAMILY, seed_hypothesis


def test_every_seed_claim_is_registered_over_seeds_with_its_hypothesis():
    for key, (sentence, quantity, claimed, test, measure) in SEED_CLAIMS.items():
        claim = CLAIMS.get(key)
        assert (claim.sentence, claim.unit, claim.family, claim.test) == (sentence, "seeds", SEED_FAMILY, test)
        assert claim.hypothesis == seed_hypothesis(key)
    assert seed_hypothesis("later_layers_change_most", "less") != seed_hypothesis("later_layers_change_most")


def test_a_seed_claim_reads_its_evidence_from_the_seed_claims_table():
    row = {"claim": "delimiter_heads_lost", "model": "g", "dataset": "d", "estimate": -2.0, "ci_low": float("nan"),
           "ci_high": -1.0, "p_for": 0.125, "p_against": 1.0, "floor": 0.125, "floor_against": 0.125,
           "detectable": "", "reason": "", "detail": "three seeds"}
    [evidence] = CLAIMS.get("delimiter_heads_lost").evaluate({"compare_seed_claims": pd.DataFrame([row])},
                                                              ClaimSettings())
    assert (evidence.model, evidence.estimate, evidence.p_for) == ("g", -2.0, 0.125)


def test_the_roles_claims_come_first_then_the_seed_claims():
    order = ordered_claims()
    assert order.index("cls_early") < order.index("later_layers_change_most")
    assert order.index("local_syntactic") < order.index("later_layers_change_most")
