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


def test_gap_words_without_arcs_are_said_to_have_no_parse(tmp_path, tiny_model_dir):
    # GAP's reader splits words (every head -1): not a parse, under parse auto and gold alike; a CoNLL-U file's
    # parses are gold even when one of its sentences is a single word (a root, no arc)
    from headstats.inputs.records import Record, Word
    from headstats.study.data import PARSE_WORDS, prepare_records

    scoring = load_protocol(tiny_protocol(tmp_path, tiny_model_dir, ["local"])).scoring
    split = Record("0", "Her friend", words_a=(Word("Her", 0, 3, -1, "dep"), Word("friend", 4, 10, -1, "dep")))
    parsed = Record("1", "Her friend", words_a=(Word("Her", 0, 3, 1, "nmod:poss"), Word("friend", 4, 10, -1, "root")))
    alone = Record("2", "Yes", words_a=(Word("Yes", 0, 3, -1, "root"),))
    for parse in ("auto", "gold"):
        assert prepare_records([split], scoring, name="gap", parse=parse)[2]["parses"] == "none"
        assert prepare_records([parsed, alone], scoring, name="ud", parse=parse)[2]["parses"] == "gold"
    assert PARSE_WORDS["none"] == "no parse"
