"""Tests of headstats.inputs.readers: text, JSONL, GLUE TSV and CoNLL-U inputs, and their errors."""

from __future__ import annotations

import json
import sys
import types
import warnings
from pathlib import Path

import pytest

from headstats.errors import DataError, HeadstatsError
from headstats.inputs.filters import split_empty
from headstats.inputs.readers import infer_format, read_records
from headstats.inputs.records import Record, Word

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "data" / "demo"
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
EWT_DEV = SHARED_DATA / "ud" / "en_ewt" / "en_ewt-ud-dev.conllu"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def conllu_line(*columns) -> str:
    return "\t".join(str(c) for c in columns)


# --- formats and dispatch --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("a.txt", "text"), ("a.jsonl", "jsonl"), ("dev.tsv", "glue"), ("x.conllu", "conllu"), ("x.conll", "conllu"),
     ("X.CONLLU", "conllu")],
)
def test_infer_format(name, fmt):
    assert infer_format(name) == fmt


def test_infer_format_unknown_lists_formats():
    with pytest.raises(HeadstatsError, match=r"'data\.csv'.*pass format: one of text, jsonl, glue, conllu"):
        infer_format("data.csv")


def test_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(HeadstatsError, match=f"data file not found: '{missing}'"):
        read_records(missing)


def test_directory_is_not_a_file(tmp_path):
    folder = tmp_path / "corpus.txt"
    folder.mkdir()
    with pytest.raises(DataError, match=r"corpus\.txt' is a folder, not a file; name one data file inside it"):
        read_records(folder)


@pytest.mark.parametrize(("name", "content"), [("e.txt", ""), ("b.txt", "\n  \n\t\n"), ("e.jsonl", "\n"),
                                               ("e.conllu", "# just a comment\n\n")])
def test_empty_corpus(tmp_path, name, content):
    with pytest.raises(HeadstatsError, match="no inputs in .*the corpus is empty"):
        read_records(write(tmp_path, name, content))


def test_unknown_format_and_bad_limit(tmp_path):
    path = write(tmp_path, "a.txt", "One.\n")
    with pytest.raises(HeadstatsError, match="unknown input format 'csv'; choose one of text, jsonl, glue, conllu"):
        read_records(path, format="csv")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(HeadstatsError, match="limit must be a positive whole number"):
            read_records(path, limit=bad)


def test_format_overrides_extension(tmp_path):
    path = write(tmp_path, "data.lines", '{"text_a": "Hello there."}\n')
    (rec,) = read_records(path, format="jsonl")
    assert rec.text_a == "Hello there."


# --- plain text ------------------------------------------------------------------------------------------


def test_text_singles_pairs_and_blank_lines(tmp_path):
    content = "The cat sat.\n\n  # not a comment  \nA man runs.\tSomeone is running.\r\n   \nLast one."
    recs = read_records(write(tmp_path, "c.txt", content))
    assert [r.sentence_id for r in recs] == ["0", "1", "2", "3"]  # index among non-blank lines
    assert recs[0] == Record("0", "The cat sat.")
    assert recs[1].text_a == "# not a comment" and not recs[1].is_pair
    assert (recs[2].text_a, recs[2].text_b) == ("A man runs.", "Someone is running.")
    assert recs[3].text_a == "Last one."
    assert [r.meta["line"] for r in recs] == [1, 3, 4, 6]


def test_text_limit_and_bom(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeffFirst.\nSecond.\nThird.\n".encode())
    recs = read_records(path, limit=2)
    assert [r.text_a for r in recs] == ["First.", "Second."]


def test_text_two_tabs_gives_the_line(tmp_path):
    path = write(tmp_path, "bad.txt", "Fine.\n\nA\tB\tC\n")
    with pytest.raises(HeadstatsError, match=r"bad\.txt, line 3: 2 TABs"):
        read_records(path)


def test_text_empty_side_gives_the_line(tmp_path):
    with pytest.raises(HeadstatsError, match=r"line 2: one side of the pair is empty"):
        read_records(write(tmp_path, "bad.txt", "Fine.\nOnly one side\t \n"))


def test_text_not_utf8(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes("Caf\xe9 au lait.\n".encode("latin-1"))
    with pytest.raises(HeadstatsError, match="not UTF-8"):
        read_records(path)


def test_text_invisible_lines_are_empty_records_and_a_file_of_them_is_refused(tmp_path):
    content = "The cat sat.\n\u200b\u200c\n  \n\ufeff\u00ad \u2060\nA dog ran.\n"
    recs = read_records(write(tmp_path, "z.txt", content))
    # whitespace-only line 3 is a blank line; lines 2 and 4 are inputs without a visible character
    assert [(r.sentence_id, r.meta["line"]) for r in recs] == [("0", 1), ("1", 2), ("2", 4), ("3", 5)]
    assert split_empty(recs)[1] == [("1", "empty"), ("2", "empty")]
    with pytest.raises(DataError, match=r"no usable inputs in '.*only\.txt': all 2 record\(s\) are empty \(no visible "
                                        r"character"):
        read_records(write(tmp_path, "only.txt", "\u200b\n\n\u00ad\u200d\n"))


def test_text_pair_with_an_invisible_side_gives_the_line(tmp_path):
    with pytest.raises(DataError, match=r"line 2: one side of the pair is empty \(no visible character\)"):
        read_records(write(tmp_path, "bad.txt", "Fine.\nA cat.\t\u200b\u2060\n"))


# --- JSONL -----------------------------------------------------------------------------------------------


def test_jsonl_ids_labels_and_pairs(tmp_path):
    lines = [
        {"text_a": "A cat sat.", "id": "s-17", "label": 1},
        {"text_a": "Is it raining?", "text_b": "Yes, heavily.", "label": "entailment", "extra": [1, 2]},
        {"text_a": "Numbers work.", "id": 42},
    ]
    content = "\n".join(json.dumps(line) for line in lines[:2]) + "\n\n" + json.dumps(lines[2]) + "\n"
    recs = read_records(write(tmp_path, "c.jsonl", content))
    assert [r.sentence_id for r in recs] == ["s-17", "1", "42"]
    assert recs[0].label == "1" and recs[0].text_b is None
    assert (recs[1].text_a, recs[1].text_b, recs[1].label) == ("Is it raining?", "Yes, heavily.", "entailment")
    assert recs[2].label is None and recs[2].meta["line"] == 4


def test_jsonl_invalid_json_gives_the_line(tmp_path):
    content = '{"text_a": "ok"}\n{"text_a": "ok too"}\n{"text_a": "broken"\n'
    with pytest.raises(HeadstatsError, match=r"c\.jsonl, line 3: invalid JSON"):
        read_records(write(tmp_path, "c.jsonl", content))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"text_b": "no a"}', "line 2: missing or empty 'text_a'"),
        ('{"text_a": "  "}', "line 2: missing or empty 'text_a'"),
        ('{"text_a": "\\u200b\\u00ad"}', "line 2: missing or empty 'text_a'"),
        ('{"text_a": "a", "text_b": "\\ufeff"}', "line 2: 'text_b' must be a string with a visible character"),
        ('{"text_a": 5}', "line 2: missing or empty 'text_a'"),
        ('["text_a", "x"]', "line 2: expected a JSON object"),
        ('{"text_a": "a", "text_b": 3}', "line 2: 'text_b' must be a string with a visible character"),
        ('{"text_a": "a", "id": {"x": 1}}', "line 2: field 'id' must be a string or a number"),
    ],
)
def test_jsonl_bad_records(tmp_path, line, message):
    with pytest.raises(HeadstatsError, match=message):
        read_records(write(tmp_path, "c.jsonl", '{"text_a": "fine"}\n' + line + "\n"))


def test_duplicate_ids_are_refused(tmp_path):
    content = '{"text_a": "a", "id": "x"}\n{"text_a": "b"}\n{"text_a": "c", "id": "x"}\n'
    with pytest.raises(HeadstatsError, match="records 0 and 2 .* share the id 'x'"):
        read_records(write(tmp_path, "c.jsonl", content))
    # an explicit id that equals another record's index collides too
    content = '{"text_a": "a"}\n{"text_a": "b", "id": 0}\n'
    with pytest.raises(HeadstatsError, match="share the id '0'"):
        read_records(write(tmp_path, "d.jsonl", content))


# --- GLUE ------------------------------------------------------------------------------------------------


def test_glue_dispatch_and_limit(tmp_path, monkeypatch):
    calls = []

    def fake_read_glue_tsv(path, *, task=None, split=None):
        calls.append((Path(path), task))
        return [Record(str(i), f"Sentence {i}.") for i in range(5)]

    module = types.ModuleType("headstats.inputs.glue")
    module.read_glue_tsv = fake_read_glue_tsv
    monkeypatch.setitem(sys.modules, "headstats.inputs.glue", module)
    path = write(tmp_path, "dev.tsv", "sentence\tlabel\nx\t1\n")
    recs = read_records(path, limit=3)
    assert calls == [(path, None)]
    assert [r.sentence_id for r in recs] == ["0", "1", "2"]


def test_glue_real_reader(tmp_path):
    glue = pytest.importorskip("headstats.inputs.glue", reason="the GLUE reader (headstats.inputs.glue) is missing")
    assert hasattr(glue, "read_glue_tsv")
    folder = tmp_path / "SST-2"
    folder.mkdir()
    path = write(folder, "dev.tsv", "sentence\tlabel\nit 's a charming film . \t1\na dull , lifeless mess . \t0\n")
    recs = read_records(path)
    assert len(recs) == 2 and not recs[0].is_pair
    assert recs[0].label == "1" and recs[1].label == "0"


# --- CoNLL-U ---------------------------------------------------------------------------------------------

SNIPPET = "\n".join([
    "# newdoc id = d1",
    "# sent_id = s1",
    "# text = I don't know, Sam.",
    conllu_line(1, "I", "I", "PRON", "PRP", "_", 4, "nsubj", "_", "_"),
    conllu_line("2-3", "don't", "_", "_", "_", "_", "_", "_", "_", "_"),
    conllu_line(2, "do", "do", "AUX", "VBP", "_", 4, "aux", "_", "_"),
    conllu_line(3, "n't", "not", "PART", "RB", "_", 4, "advmod", "_", "_"),
    conllu_line(4, "know", "know", "VERB", "VB", "_", 0, "root", "_", "SpaceAfter=No"),
    conllu_line("4.1", "know", "know", "VERB", "VB", "_", "_", "_", "4:conj", "_"),
    conllu_line(5, ",", ",", "PUNCT", ",", "_", 6, "punct", "_", "_"),
    conllu_line(6, "Sam", "Sam", "PROPN", "NNP", "_", 4, "vocative", "_", "SpaceAfter=No"),
    conllu_line(7, ".", ".", "PUNCT", ".", "_", 4, "punct", "_", "_"),
    "",
    "# text = The report was read by Ann.",
    conllu_line(1, "The", "the", "DET", "DT", "_", 2, "det", "_", "_"),
    conllu_line(2, "report", "report", "NOUN", "NN", "_", 4, "nsubj:pass", "_", "_"),
    conllu_line(3, "was", "be", "AUX", "VBD", "_", 4, "aux:pass", "_", "_"),
    conllu_line(4, "read", "read", "VERB", "VBN", "_", 0, "root", "_", "_"),
    conllu_line(5, "by", "by", "ADP", "IN", "_", 6, "case", "_", "_"),
    conllu_line(6, "Ann", "Ann", "PROPN", "NNP", "_", 4, "obl:agent", "_", "SpaceAfter=No"),
    conllu_line(7, ".", ".", "PUNCT", ".", "_", 4, "punct", "_", "_"),
    "",
    "# sent_id = s3",
    conllu_line(1, "Eat", "eat", "VERB", "VB", "_", 0, "root", "_", "_"),
    conllu_line(2, "fresh", "fresh", "ADJ", "JJ", "_", 3, "amod", "_", "_"),
    conllu_line(3, "fruit", "fruit", "NOUN", "NN", "_", 1, "obj", "_", "SpaceAfter=No"),
    conllu_line(4, "!", "!", "PUNCT", ".", "_", 1, "punct", "_", "_"),
    "",
])


def test_conllu_heads_offsets_mwt_and_empty_nodes(tmp_path):
    recs = read_records(write(tmp_path, "s.conllu", SNIPPET))
    assert [r.sentence_id for r in recs] == ["s1", "1", "s3"]  # sent_id, else 0-based index
    first = recs[0]
    assert first.text_a == "I don't know, Sam."
    assert first.words_a == (
        Word("I", 0, 1, 3, "nsubj"),
        Word("do", 2, 7, 3, "aux"),  # the words of "don't" share its span
        Word("n't", 2, 7, 3, "advmod"),
        Word("know", 8, 12, -1, "root"),  # the empty node 4.1 is skipped
        Word(",", 12, 13, 5, "punct"),
        Word("Sam", 14, 17, 3, "vocative"),
        Word(".", 17, 18, 3, "punct"),
    )
    assert first.is_parsed and not first.is_pair and first.meta["line"] == 1
    second = recs[1]
    assert [(w.text, w.start, w.end, w.head, w.deprel) for w in second.words_a] == [
        ("The", 0, 3, 1, "det"), ("report", 4, 10, 3, "nsubjpass"), ("was", 11, 14, 3, "auxpass"),
        ("read", 15, 19, -1, "root"), ("by", 20, 22, 5, "case"), ("Ann", 23, 26, 3, "obl"),
        (".", 26, 27, 3, "punct"),
    ]


def test_conllu_without_text_joins_forms_with_space_after(tmp_path):
    recs = read_records(write(tmp_path, "s.conllu", SNIPPET))
    third = recs[2]
    assert third.text_a == "Eat fresh fruit!"
    assert third.words_a[2] == Word("fruit", 10, 15, 0, "dobj")
    assert third.words_a[3] == Word("!", 15, 16, 0, "punct")
    assert third.meta["text_source"] == "forms"


def test_conllu_text_that_does_not_match_falls_back_to_forms(tmp_path):
    content = "\n".join([
        "# sent_id = odd",
        "# text = Completely different words.",
        conllu_line(1, "Hello", "hello", "INTJ", "UH", "_", 0, "root", "_", "SpaceAfter=No"),
        conllu_line(2, "!", "!", "PUNCT", ".", "_", 1, "punct", "_", "_"),
        "",
    ])
    with pytest.warns(UserWarning, match=r"in 1 sentence\(s\) \(first: 'odd'\).*heads and relations are all kept"):
        (rec,) = read_records(write(tmp_path, "odd.conllu", content))
    assert rec.text_a == "Hello!"
    assert rec.words_a == (Word("Hello", 0, 5, -1, "root"), Word("!", 5, 6, 0, "punct"))


def test_conllu_limit(tmp_path):
    recs = read_records(write(tmp_path, "s.conllu", SNIPPET), limit=2)
    assert [r.sentence_id for r in recs] == ["s1", "1"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1\tI\tI\tPRON\tPRP\t_\t2\tnsubj\t_", r"line 4: malformed CoNLL-U, 9 columns where 10"),
        (conllu_line(1, "I", "I", "PRON", "PRP", "_", "x", "nsubj", "_", "_"), r"line 4: .*HEAD 'x' is not an integer"),
        (conllu_line(1, "I", "I", "PRON", "PRP", "_", "_", "nsubj", "_", "_"), r"line 4: .*HEAD '_' is not an integer"),
        (conllu_line(1, "I", "I", "PRON", "PRP", "_", 9, "nsubj", "_", "_"), r"line 4: .*HEAD 9 is out of range"),
        (conllu_line(1, "I", "I", "PRON", "PRP", "_", 1, "nsubj", "_", "_"), r"line 4: .*word 1 is its own head"),
        (conllu_line(3, "I", "I", "PRON", "PRP", "_", 2, "nsubj", "_", "_"), r"line 4: .*word ID 3 where 1"),
        (conllu_line(1, "I", "I", "PRON", "PRP", "_", 2, "_", "_", "_"), r"line 4: .*DEPREL is missing"),
        (conllu_line("x", "I", "I", "PRON", "PRP", "_", 2, "nsubj", "_", "_"), r"line 4: malformed CoNLL-U"),
    ],
)
def test_conllu_malformed_gives_file_and_line(tmp_path, line, message):
    content = "\n".join([
        "# sent_id = ok",
        conllu_line(1, "Fine", "fine", "ADJ", "JJ", "_", 0, "root", "_", "_"),
        "",
        line,
        conllu_line(2, "slept", "sleep", "VERB", "VBD", "_", 0, "root", "_", "_"),
        "",
    ])
    with pytest.raises(HeadstatsError, match=r"bad\.conllu, " + message):
        read_records(write(tmp_path, "bad.conllu", content))


def test_conllu_crlf_and_no_final_blank_line(tmp_path):
    content = "# text = Go!\r\n" + conllu_line(1, "Go", "go", "VERB", "VB", "_", 0, "root", "_", "SpaceAfter=No") + \
        "\r\n" + conllu_line(2, "!", "!", "PUNCT", ".", "_", 1, "punct", "_", "_")
    (rec,) = read_records(write(tmp_path, "g.conllu", content))
    assert rec.text_a == "Go!" and rec.words_a[1] == Word("!", 2, 3, 0, "punct")


def tree_file(tmp_path, rows, name="t.conllu"):
    """A CoNLL-U file with a good first sentence and then sentence 'bad' whose (id, head) rows are given."""
    lines = ["# sent_id = good", conllu_line(1, "Fine", "fine", "ADJ", "JJ", "_", 0, "root", "_", "_"), "",
             "# sent_id = bad"]
    for word_id, head in rows:
        form = f"w{word_id}"
        lines.append(conllu_line(word_id, form, form, "X", "X", "_", head, "root" if head == 0 else "dep", "_", "_"))
    return write(tmp_path, name, "\n".join(lines) + "\n\n")


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        # 1 -> 0 (root); 2 -> 3 -> 5 -> 3: a cycle that never reaches the root
        ([(1, 0), (2, 3), (3, 5), (4, 1), (5, 3)], r"sentence 'bad' in .*t\.conllu \(line 4\) has a head cycle "
                                                   r"\(words 3 -> 5 -> 3\); fix the file or remove the sentence"),
        ([(1, 2), (2, 3), (3, 1)], r"sentence 'bad' in .*t\.conllu \(line 4\) has no root \(no word has HEAD 0\); "
                                   r"fix the file or remove the sentence"),
        ([(1, 0), (2, 1), (3, 0)], r"sentence 'bad' in .*t\.conllu \(line 4\) has 2 roots \(words 1, 3 have HEAD 0\) "
                                   r"where a sentence has one; fix the file or remove the sentence"),
        ([(1, 0), (2, 4)], r"t\.conllu, line 6: malformed CoNLL-U, HEAD 4 is out of range in sentence 'bad': it points "
                           r"outside the sentence, which has 2 words \(0 is the root\)"),
        ([(1, 0), (2, 2)], r"t\.conllu, line 6: malformed CoNLL-U, word 2 is its own head in sentence 'bad'"),
    ],
)
def test_conllu_heads_that_form_no_tree_are_refused(tmp_path, rows, message):
    with pytest.raises(DataError, match=message):
        read_records(tree_file(tmp_path, rows))


def test_conllu_tree_with_multiword_token_and_empty_node_passes(tmp_path):
    # the SNIPPET's first sentence holds a range 2-3 and an empty node 4.1; a deep chain is a tree too
    assert len(read_records(write(tmp_path, "s.conllu", SNIPPET))) == 3
    rows = [(1, 0)] + [(k, k - 1) for k in range(2, 400)]
    (_, chain) = read_records(tree_file(tmp_path, rows, "chain.conllu"))
    assert [w.head for w in chain.words_a] == [-1] + list(range(398))


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("latin.txt", "ok\nCaf\xe9\n".encode("latin-1"), r"latin\.txt, line 2: not UTF-8 text"),
        ("latin.jsonl", '{"text_a": "Caf\xe9"}\n'.encode("latin-1"), r"latin\.jsonl, line 1: not UTF-8 text"),
        ("latin.conllu", "# text = Caf\xe9\n".encode("latin-1"), r"latin\.conllu, line 1: not UTF-8 text"),
        ("gz.txt", b"\x1f\x8b\x08\x00\x00\x00", r"gz\.txt, line 1: not UTF-8 text .*or a binary file\?"),
        ("zip.txt", b"PK\x03\x04\x14\x00\x00\x00", r"zip\.txt, line 1: a NUL byte; this is a binary file"),
        ("bin.jsonl", b'{"text_a": "x"}\n\x00\x00\n', r"bin\.jsonl, line 2: a NUL byte"),
        ("bin.conllu", b"1\tx\x00\n", r"bin\.conllu, line 1: a NUL byte"),
        ("empty.txt", b"", r"no inputs in '.*empty\.txt' \(read as text\); the corpus is empty"),
        ("empty.jsonl", b"", r"no inputs in .*the corpus is empty"),
        ("empty.conllu", b"", r"no inputs in .*the corpus is empty"),
        ("empty.tsv", b"", r"GLUE file '.*empty\.tsv' is empty; give a non-empty file"),
        ("nojson.jsonl", b'{"text_a": "x"}\nnot json\n', r"nojson\.jsonl, line 2: invalid JSON"),
        ("nested.jsonl", b"[" * 100_000 + b"\n", r"nested\.jsonl, line 1: JSON that cannot be read"),
        ("notexta.jsonl", b'{"text": "x"}\n', r"notexta\.jsonl, line 1: missing or empty 'text_a'"),
        ("cols.tsv", b"foo\tbar\nx\ty\n", r"cannot tell which GLUE task '.*cols\.tsv' holds from its header"),
        ("rows.tsv", b"sentence\tlabel\ngood\t1\nno label\n", r"rows\.tsv' has 1 malformed row.*line\(s\) 3"),
        ("data.csv", b"a,b\n", r"cannot tell the format of '.*data\.csv'.*pass format:"),
    ],
)
def test_every_bad_data_file_is_one_data_error(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DataError, match=message):
        read_records(path)


def test_unknown_format_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="unknown input format 'csv'"):
        read_records(write(tmp_path, "a.txt", "One.\n"), format="csv")


# --- the demo corpus -------------------------------------------------------------------------------------


def test_demo_mini_conllu():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recs = read_records(DEMO / "mini.conllu")
    assert [r.sentence_id for r in recs] == [f"mini-{i}" for i in range(1, 7)]
    cat = recs[0]
    assert cat.text_a == "The cat chased the small mouse."
    assert [(w.text, w.head, w.deprel) for w in cat.words_a] == [
        ("The", 1, "det"), ("cat", 2, "nsubj"), ("chased", -1, "root"), ("the", 5, "det"),
        ("small", 5, "amod"), ("mouse", 2, "dobj"), (".", 2, "punct"),
    ]
    for rec in recs:
        assert sum(w.head == -1 for w in rec.words_a) == 1
        for w in rec.words_a:
            span = rec.text_a[w.start:w.end]
            assert span == w.text or w.text in ("do", "n't", "Maria", "'s")


def test_demo_text_files():
    singles = read_records(DEMO / "sentences.txt")
    pairs = read_records(DEMO / "pairs.txt")
    assert len(singles) >= 220 and not any(r.is_pair for r in singles)
    assert len(pairs) >= 110 and all(r.is_pair for r in pairs)
    for rec in singles:
        assert 5 <= len(rec.text_a.split()) <= 25, rec.text_a
    assert len({r.text_a for r in singles}) == len(singles)


# --- UD English EWT (shared data) ------------------------------------------------------------------------


@pytest.mark.shared_data
def test_ewt_dev():
    if not EWT_DEV.exists():
        pytest.skip(f"needs {EWT_DEV} (the shared data folder beside the repository; absent in a fresh clone)")
    recs = read_records(EWT_DEV)
    assert len(recs) == 2001
    assert recs[0].sentence_id == "weblog-blogspot.com_nominations_20041117172713_ENG_20041117_172713-0001"
    assert recs[0].text_a == "From the AP comes this story :"
    assert recs[0].words_a[5] == Word("story", 23, 28, 3, "nsubj")
    assert all(r.sentence_id.split("-")[0] in {"weblog", "newsgroup", "email", "answers", "reviews"} for r in recs)
    assert len({r.sentence_id for r in recs}) == 2001
    n_mwt_parts = 0
    for rec in recs:
        spans = [(w.start, w.end) for w in rec.words_a]
        for w, span in zip(rec.words_a, spans):
            if rec.text_a[w.start:w.end] != w.text:
                assert spans.count(span) >= 2, (rec.sentence_id, w)  # only the parts of a multiword token
                n_mwt_parts += 1
        assert sum(w.head == -1 for w in rec.words_a) == 1
    assert n_mwt_parts > 0
    # a sentence with an empty node (8.1, line 1602 of the file) reads with its 33 words and one root
    elided = next(r for r in recs if r.sentence_id.endswith("aggressivevoicedaily_20060814163400_ENG_20060814_163400-0007"))
    assert len(elided.words_a) == 33 and [w.head for w in elided.words_a].count(-1) == 1
    assert elided.words_a[4] == Word("write", elided.text_a.index("write"), elided.text_a.index("write") + 5, 31, "ccomp")
    relations = {w.deprel for r in recs for w in r.words_a}
    assert {"dobj", "nsubjpass", "poss"} <= relations and not {"obj", "nmod:poss", "ROOT"} & relations


def test_a_registered_format_is_read_by_name_and_by_extension(tmp_path):
    from headstats.inputs.readers import INPUT_FORMATS, list_formats, register_format

    def read_csv(path, *, limit=None):
        lines = Path(path).read_text().splitlines()[:limit]
        return [Record(str(i), line.split(",")[0], line.split(",")[1]) for i, line in enumerate(lines)]

    register_format("csvpairs", read_csv, extensions=[".csv"])
    try:
        path = tmp_path / "pairs.csv"
        path.write_text("The cat sat.,A dog ran.\nIt rained.,It poured.\n")
        assert "csvpairs" in list_formats()
        by_extension = read_records(path)
        assert [(r.text_a, r.text_b) for r in by_extension] == [("The cat sat.", "A dog ran."), ("It rained.", "It poured.")]
        assert read_records(path, format="csvpairs", limit=1) == by_extension[:1]
        with pytest.raises(ValueError, match="already selects format 'csvpairs'"):
            register_format("other", read_csv, extensions=["CSV"])
    finally:
        INPUT_FORMATS.unregister("csvpairs")
    with pytest.raises(DataError, match="did you mean 'conllu'"):
        read_records(path, format="conll")


@pytest.mark.parametrize("misc", ["_", "SpaceAfter=No", "Entity=(e1-person)|SpaceAfter=No", "SpaceAfter=Yes|Foo=No"])
def test_the_fast_word_line_path_equals_conllus_parser(misc):
    """Ordinary word lines skip conllu's parser; what they give must equal what conllu's parser gives."""
    from conllu.parser import DEFAULT_FIELDS, parse_line

    from headstats.inputs.conllu import _parse_token_line

    line = f"3\tcats\tcat\tNOUN\tNNS\tNumber=Plur\t2\tobj\t2:obj\t{misc}"
    fast = _parse_token_line(7, line, "x.conllu")
    token = parse_line(line, fields=DEFAULT_FIELDS)
    assert (fast.kind, fast.first, fast.last, fast.form, fast.head, fast.deprel) == (
        "word", token["id"], token["id"], token["form"], token["head"], token["deprel"])
    assert fast.space_after == ((token["misc"] or {}).get("SpaceAfter") != "No")
