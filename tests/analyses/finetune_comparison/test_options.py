"""The comparison's options: a protocol's ``compare:`` entries are its CompareSpec; the replicate groups among an
entry's fine-tuned models and their seed pairs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from headstats.analyses.finetune_comparison.options import CompareSpec
from headstats.config.protocol import Protocol


def test_a_protocols_compare_entries_are_the_packages_options():
    protocol = Protocol.model_validate({
        "name": "x", "models": ["a", "b"], "datasets": [{"name": "d", "path": "x.txt"}],
        "compare": [{"base": "a", "finetuned": ["b"], "test": "t"}]})
    assert isinstance(protocol.compare[0], CompareSpec) and protocol.compare[0].test == "t"
    assert protocol.options_of("finetune_comparison") is protocol.compare
    with pytest.raises(ValidationError, match="alternative"):
        CompareSpec(base="a", finetuned=["b"], alternative="up")


def test_replicate_groups_need_two_seeds_and_give_every_pair_once():
    spec = CompareSpec(base="base", finetuned=["s0", "s1", "s2", "solo", "other"])
    replicate_of = {"s0": "ft", "s1": "ft", "s2": "ft", "solo": "alone", "other": None}
    assert spec.replicate_members(replicate_of) == {"ft": ["s0", "s1", "s2"]}  # a group of one is no replicate
    assert spec.seed_pairs(replicate_of) == [("s0", "s1"), ("s0", "s2"), ("s1", "s2")]  # k(k-1)/2 = 3
    assert spec.seed_pairs({}) == []
