"""Pande et al.'s claims: the source they name, and their order in claims.csv (the roles' claims first, then the
fine-tuning claims over seeds)."""

from __future__ import annotations

from headstats.stats.claim_catalog import ordered_claims
from headstats.stats.claims import CLAIMS
from headstats.stats.paper_claims import PANDE


def test_the_roles_claims_come_first_then_the_seed_claims():
    order = ordered_claims()
    assert order.index("cls_early") < order.index("later_layers_change_most")
    assert order.index("local_syntactic") < order.index("later_layers_change_most")


def test_every_claim_of_pande_et_al_names_them_as_its_source():
    assert CLAIMS.get("cls_early").source == PANDE
    assert CLAIMS.get("delimiter_heads_lost").source == PANDE + " (fine-tuning)"
