"""Reading a study's data sets: which protocols need parses, which rows fine-tuning saw."""

from __future__ import annotations

from tiny_study import tiny_protocol

from headstats.config.protocol import load_protocol
from headstats.study.data import needs_parses, training_exclusions


def test_needs_parses_only_for_arc_roles(tmp_path, tiny_model_dir):
    assert not needs_parses(load_protocol(tiny_protocol(tmp_path, tiny_model_dir, ["local", "block"])).scoring)
    assert needs_parses(load_protocol(tiny_protocol(tmp_path, tiny_model_dir, ["local", "syntactic:nsubj"])).scoring)


def test_training_exclusions_are_empty_without_glue_or_finetuned_models(tmp_path, tiny_model_dir):
    protocol = load_protocol(tiny_protocol(tmp_path, tiny_model_dir, ["local"]))
    assert training_exclusions(protocol.datasets[0], {"ft": {"path": "x"}}) == set()
