"""Coreference readers: GUM entity brackets and GAP rows turned into queries with candidates and baselines."""

from __future__ import annotations

import pytest

from headstats.errors import DataError
from headstats.inputs.coref import parse_entity_field, read_gap, read_gum_coref
from headstats.inputs.readers import read_records

from conftest import GAP, GUM



def test_entity_field():
    assert parse_entity_field("(3-abstract-new-sssss-cf1-5-coref") == (["3"], [], [])
    assert parse_entity_field("(37-person-giv:act-snnnn-cf2-1-ana)") == ([], ["37"], [])
    assert parse_entity_field("6)5)") == ([], [], ["6", "5"])
    assert parse_entity_field("(5-x-coref(6-y)") == (["5"], ["6"], [])


def test_gum_queries_by_hand(tmp_path):
    path = tmp_path / "g.conllu"
    path.write_text(GUM)
    records = read_gum_coref(path)
    assert len(records) == 1 and records[0].text_a == "Mary saw the old dog . She liked the dog ."
    queries = records[0].meta["coref"]
    # mentions: Mary(0), the old dog (head 4), She (6), the dog (head 9); queries: She and "the dog"
    she, dog = queries
    assert (she["head"], she["type"]) == (6, "pronoun")
    assert [(c["words"], c["gold"]) for c in she["candidates"]] == [([0], True), ([4], False)]
    assert (she["nearest"], she["same_head"]) == (1, -1)
    assert (dog["head"], dog["type"]) == (9, "other")
    assert [c["words"] for c in dog["candidates"]] == [[0], [4], [6]]
    assert (dog["nearest"], dog["same_head"]) == (2, 1)       # nearest: She; same head word "dog": the old dog
    assert records[0].words_a[9].head == 7                     # heads shifted into the joined input
    assert read_records(path, format="gum_coref")[0].meta["coref"] == queries


def test_gap_rows_by_hand(tmp_path):
    path = tmp_path / "g.tsv"
    path.write_text(GAP)
    records = read_gap(path)
    assert len(records) == 1                                   # t-2: neither name is the pronoun's
    query = records[0].meta["coref"][0]
    words = [w.text for w in records[0].words_a]
    assert words[query["head"]] == "she"
    assert [[words[i] for i in c["words"]] for c in query["candidates"]] == [["Ann"], ["Bo", "Li"]]
    assert [c["gold"] for c in query["candidates"]] == [True, False]
    assert query["nearest"] == 1                               # Bo Li is nearer to the pronoun than Ann


def test_gap_refuses_other_tsv(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text("a\tb\n1\t2\n")
    with pytest.raises(DataError, match="not a GAP file"):
        read_gap(path)


def test_shared_gum_and_gap_have_queries(shared_data):
    gum = read_records(shared_data / "ud/en_gum/en_gum-ud-dev.conllu", format="gum_coref", limit=50)
    assert sum(len(r.meta["coref"]) for r in gum) > 100
    gap = read_records(shared_data / "coref/gap/gap-development.tsv", format="gap", limit=50)
    assert all(len(r.meta["coref"]) == 1 for r in gap)
