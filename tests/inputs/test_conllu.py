"""The CoNLL-U reader on its own (read through every format in tests/inputs/test_readers.py): words, 0-based
heads, canonical relations and character offsets of a planted sentence, and the format registry that names it."""

from __future__ import annotations

import pytest

from headstats.errors import DataError
from headstats.inputs.conllu import read_conllu


def conllu_line(*columns) -> str:
    return "\t".join(str(c) for c in columns)


SENTENCE = "\n".join([
    "# sent_id = s1",
    "# text = The cat sat.",
    conllu_line(1, "The", "the", "DET", "_", "_", 2, "det", "_", "_"),
    conllu_line(2, "cat", "cat", "NOUN", "_", "_", 3, "nsubj", "_", "_"),
    conllu_line(3, "sat", "sit", "VERB", "_", "_", 0, "root", "_", "SpaceAfter=No"),
    conllu_line(4, ".", ".", "PUNCT", "_", "_", 3, "punct", "_", "_"),
    conllu_line(5, "it", "it", "PRON", "_", "_", 3, "obj", "_", "_"),
    "",
])


def test_a_planted_sentence(tmp_path):
    path = tmp_path / "s.conllu"
    path.write_text(SENTENCE.replace("# text = The cat sat.", "# text = The cat sat. it"))
    (record,) = read_conllu(path)
    assert record.sentence_id == "s1" and record.text_a == "The cat sat. it"
    assert [w.text for w in record.words_a] == ["The", "cat", "sat", ".", "it"]
    assert [w.head for w in record.words_a] == [1, 2, -1, 2, 2]  # 0-based, -1 for the root
    assert record.words_a[4].deprel == "dobj"  # obj -> dobj (canonical_relation)
    assert (record.words_a[3].start, record.words_a[3].end) == (11, 12)


def test_a_head_outside_the_sentence_names_file_and_sentence(tmp_path):
    path = tmp_path / "bad.conllu"
    path.write_text(SENTENCE.replace(conllu_line(2, "cat", "cat", "NOUN", "_", "_", 3, "nsubj", "_", "_"),
                                     conllu_line(2, "cat", "cat", "NOUN", "_", "_", 9, "nsubj", "_", "_")))
    with pytest.raises(DataError, match="bad.conllu.*s1"):
        read_conllu(path)


def test_the_formats_built_on_conllu_are_registered_by_the_readers():
    from headstats.inputs.readers import INPUT_FORMATS

    assert INPUT_FORMATS.get("conllu").reader is read_conllu
    assert {"gum_coref", "gap"} <= set(INPUT_FORMATS.names())
