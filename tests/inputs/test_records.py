"""Records and words: the data model every reader produces."""

from __future__ import annotations

import dataclasses

import pytest

from headstats.errors import DataError
from headstats.inputs.records import Record, Word, as_records


def test_single_and_pair_records():
    single = Record("0", "The cat sat.")
    pair = Record("1", "The cat sat.", "It slept.")
    assert not single.is_pair and pair.is_pair
    assert not single.is_parsed


def test_a_pair_is_parsed_only_when_both_sides_are():
    words = (Word("The", 0, 3, 1, "det"), Word("cat", 4, 7, -1, "ROOT"))
    assert Record("0", "The cat", words_a=words).is_parsed
    assert not Record("0", "The cat", "A dog", words_a=words).is_parsed
    assert Record("0", "The cat", "The cat", words_a=words, words_b=words).is_parsed


def test_records_are_frozen_and_meta_does_not_count_in_equality():
    a = Record("0", "x", meta={"source": "a"})
    assert a == Record("0", "x", meta={"source": "b"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.text_a = "y"
    word = Word("cat", 4, 7, 1, "nsubj")
    assert "The cat"[word.start:word.end] == "cat"


def test_count_records_says_how_many_and_what_kind():
    from headstats.inputs.records import count_records

    single = [Record(sentence_id=str(k), text_a="a b") for k in range(3)]
    pairs = [Record(sentence_id=f"p{k}", text_a="a", text_b="b") for k in range(1200)]
    assert count_records(single) == "3 inputs"
    assert count_records(pairs) == "1,200 pairs"
    assert count_records(single + pairs[:2]) == "5 inputs, 2 pairs"


def test_sentences_and_pairs_become_records_numbered_by_position():
    kept = Record("x", "A kept record.")
    records = as_records(["The cat sat.", ("The cat sat.", "It slept."), ["A", "B"], kept])
    assert records == [Record("0", "The cat sat."), Record("1", "The cat sat.", "It slept."), Record("2", "A", "B"),
                       kept]
    assert records[3] is kept
    assert as_records(iter(["one"])) == [Record("0", "one")]


@pytest.mark.parametrize("items, message", [
    ([3], "input 0 is a int, not a sentence: give Records"),
    (["a", ("a", "b", "c")], "input 1 is a tuple"),
    (["a", ("a", 2)], "input 1 is a tuple"),
    (["a", Record("0", "b")], "two inputs have the id '0'"),
    (None, "the inputs are a NoneType: give a list of Records"),
    (5, "the inputs are a int"),
    ({"a": 1}, "the inputs are a dict"),
])
def test_anything_else_is_refused_in_one_line(items, message):
    with pytest.raises(DataError, match=message) as caught:
        as_records(items)
    assert "\n" not in str(caught.value)


def test_first_shared_id_names_both_positions_and_the_id():
    from headstats.inputs.records import first_shared_id

    records = [Record("a", "x"), Record("b", "y"), Record("c", "z"), Record("b", "w"), Record("a", "v")]
    assert first_shared_id(records) == (1, 3, "b")
    assert first_shared_id(records[:3]) is None and first_shared_id([]) is None
