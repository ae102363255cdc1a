"""WikiText paragraph pairs: pairing within articles, headings, marks undone, ids, limit, and the real file."""

from __future__ import annotations

import pytest

from headstats.errors import DataError
from headstats.inputs.readers import infer_format, read_records
from headstats.inputs.wikitext import clean_wikitext, read_wikitext_pairs

RAW = """ 
 = First Article = 
 
 Para one of the first , with a well @-@ known 1 @,@ 000 and 3 @.@ 5 . 
 Para two . 
 
 = = A section = = 
 
 Para three . 
 
 = Second = 
 
 Only para . 
 = Third = 
 Third one . 
 Third two . 
 Third three . 
 Third four . 
"""


def test_pairs_by_hand(tmp_path):
    path = tmp_path / "wiki.test.raw"
    path.write_text(RAW)
    records = read_wikitext_pairs(path)
    # article 0: paragraphs 1-2 paired, 3 left over; article 1: one paragraph, no pair; article 2: two pairs
    assert [r.sentence_id for r in records] == ["0-0", "2-0", "2-1"]
    first = records[0]
    assert first.text_a == "Para one of the first , with a well-known 1,000 and 3.5 ." and first.text_b == "Para two ."
    assert first.meta["title"] == "First Article" and first.meta["lines"] == (4, 5)
    assert records[2].text_a == "Third three ." and records[2].meta["title"] == "Third"
    assert [r.sentence_id for r in read_wikitext_pairs(path, limit=2)] == ["0-0", "2-0"]
    assert infer_format(path) == "wikitext_pairs"
    assert [r.sentence_id for r in read_records(path)] == ["0-0", "2-0", "2-1"]


def test_a_section_heading_does_not_break_a_pair(tmp_path):
    path = tmp_path / "w.raw"
    path.write_text(" = A = \n one . \n = = S = = \n two . \n")
    assert [(r.text_a, r.text_b) for r in read_wikitext_pairs(path)] == [("one .", "two .")]


def test_no_pair_is_an_error(tmp_path):
    path = tmp_path / "w.raw"
    path.write_text(" = A = \n only one . \n")
    with pytest.raises(DataError, match="no two consecutive paragraphs"):
        read_wikitext_pairs(path)


def test_clean():
    assert clean_wikitext(" a @-@ b @,@ c @.@ d ") == "a-b,c.d"


def test_real_wikitext_2(shared_data):
    records = read_records(shared_data / "wiki" / "wikitext-2-raw" / "wiki.test.raw")
    assert len(records) == 1074 and all(r.is_pair for r in records)
    assert records[0].meta["title"] == "Robert Boulter" and records[0].text_a.startswith("Robert Boulter is")
