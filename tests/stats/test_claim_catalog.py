"""The catalog of claims: every built-in claim module imported, so that a run tests them all."""

from __future__ import annotations

import pytest

from headstats.errors import UnknownNameError
from headstats.stats.claim_catalog import evaluate_all_claims, list_claims


def test_unknown_claims_list_the_known_ones():
    with pytest.raises(UnknownNameError, match="local_syntactic"):
        evaluate_all_claims({}, claims=["local_syntactc"])


def test_the_builtin_claims_are_listed_with_their_hypotheses():
    listed = list_claims().set_index("claim")
    for key in ("delimiter_largest", "cls_early", "sep_middle_late", "few_multi_role_late", "local_syntactic",
                "later_layers_change_most", "sep_attention_falls", "delimiter_heads_lost", "syntactic_heads_gained"):
        assert key in listed.index
        assert listed.loc[key, "hypothesis"].startswith("H0:")
    # each claim's family, declared up front
    assert listed.loc["cls_early", "family"] == "Pande claims of {model}"
    assert listed.loc["delimiter_heads_lost", "family"] == "seed claims of {model}"
    assert listed.loc["previous_token_heads", "family"] == "the run's claims"


def test_claims_are_ordered_pande_first_then_by_the_protocols_analyses():
    """claims.csv lists Pande et al.'s claims, then each analysis' in the order of the study's enabled analyses (those
    a protocol section turns on first: the comparison's seed claims with ``compare:``; then Clark et al.'s protocol:
    surface, clustering, ..., dependency, coreference, probing), then the others."""
    from headstats.stats.claim_catalog import ordered_claims

    keys = ordered_claims(["finetune_comparison", "surface", "clustering", "pictures", "dependency", "coreference",
                           "probing"])
    at = {key: i for i, key in enumerate(keys)}
    assert keys[0] == "delimiter_largest" and at["local_syntactic"] < at["later_layers_change_most"]
    assert at["syntactic_heads_gained"] < at["previous_token_heads"]
    assert at["previous_token_heads"] < at["sep_middle_layers"] < at["layer_heads_cluster"] < at["head_beats_offset"]
    assert at["head_beats_offset"] < at["coreference_head_beats_baselines"] < at["probes_beat_baselines"]
    assert at["probes_beat_baselines"] < at["importance_role_local"]  # not in the protocol: after its analyses
    first = ordered_claims(["importance"])
    assert first.index("importance_tracks_change") < first.index("previous_token_heads")
