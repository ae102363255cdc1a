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
