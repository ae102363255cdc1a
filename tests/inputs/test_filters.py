"""Tests of headstats.inputs.filters: empty (invisible) inputs and the word-count bound on inputs too long."""

from __future__ import annotations

import random
import shutil

import pytest

from headstats.errors import DataError
from headstats.inputs.filters import (
    PARSE_PREFIX,
    check_usable,
    count_words,
    has_visible_text,
    is_empty_record,
    nothing_to_score,
    skipped_counts,
    split_empty,
    split_too_long,
    split_unusable,
)
from headstats.inputs.records import Record

INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", " ", "\t", "\u00a0", "\u3000", "\u2028",
             "\u0301", "\u3164", "\x0c", "\u200e"]


# --- visible text ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("char", INVISIBLE)
def test_invisible_characters_are_not_visible(char):
    assert not has_visible_text(char)
    assert not has_visible_text(char * 3 + " " + char)


@pytest.mark.parametrize("text", ["a", "\u00e9", "\u4e2d", "!", "\u20ac", "7", "\u200ba\u200b", "\ufffd", "\u00a8"])
def test_visible_characters(text):
    assert has_visible_text(text)


def test_empty_record_is_any_side_without_visible_text():
    assert not has_visible_text(None) and not has_visible_text("")
    assert is_empty_record(Record("0", "\u200b\u00ad"))
    assert is_empty_record(Record("1", "The cat.", "\ufeff "))  # a pair with one invisible side
    assert is_empty_record(Record("2", " \u2060", "The cat."))
    assert not is_empty_record(Record("3", "The cat.", "A dog."))
    assert not is_empty_record(Record("4", "\u200bcat"))


# --- counting words --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("The cat sat.", 3),
        ("a \u200b b\tc\n\rd", 4),  # a zero-width "word" yields no piece and does not count
        ("one, two; three", 3),  # punctuation stays in its word: a lower bound only
        ("x\x0cy x\x85y", 2),  # form feed and NEL are no separators: BERT deletes them, joining x and y
        ("caf\u00e9 na\u00efve", 2),
        ("\ufffd \u00a8 \u3164", 0),  # deleted by BERT; a space and a mark after NFKD; a Hangul filler
        ("a\u00a0b", 1),  # no-break space: not split on (not every tokenizer splits there)
        ("", 0),
        (None, 0),
    ],
)
def test_count_words(text, n):
    assert count_words(text) == n


def test_count_words_stops_early():
    assert count_words("w " * 1000, stop_after=5) == 6
    assert count_words("w " * 3, stop_after=5) == 3


# --- hand-computed filters -------------------------------------------------------------------------------

RECORDS = [
    Record("0", "the cat sat"),  # 3 words
    Record("1", "a b c d e f g"),  # 7 words
    Record("2", "a b c", "d e"),  # 3 + 2 words
    Record("3", "\u200b \u00ad"),  # empty
    Record("4", "x", "\ufeff"),  # empty side B
    Record("5", "one, two; three"),  # 3 words
    Record("6", "w1 w2 w3 w4 w5", "v1 v2 v3 v4"),  # 5 + 4 words
]
# max_length 6 with 2 special tokens for a single input and 3 for a pair: 4 words fit a single input, 3 a pair


def test_split_empty():
    kept, skipped = split_empty(RECORDS)
    assert [r.sentence_id for r in kept] == ["0", "1", "2", "5", "6"]
    assert skipped == [("3", "empty"), ("4", "empty")]


def test_split_too_long_skip():
    kept, skipped = split_too_long(RECORDS, max_length=6, too_long="skip", n_special=2, n_special_pair=3)
    # 7 > 4; 5 > 3; 9 > 3; the empty records have 0 and 1 words and are left to split_empty
    assert [r.sentence_id for r in kept] == ["0", "3", "4", "5"]
    assert skipped == [("1", "too_long"), ("2", "too_long"), ("6", "too_long")]
    assert all(PARSE_PREFIX not in r.meta for r in kept)


def test_special_token_counts_come_from_the_arguments():
    # without special tokens 6 words fit: only the 7-word single and the 9-word pair cannot
    kept, skipped = split_too_long(RECORDS, max_length=6, too_long="skip")
    assert skipped == [("1", "too_long"), ("6", "too_long")]
    # RoBERTa adds 4 to a pair: 2 words fit, so the 3-word record 0 (single, 2 added) stays, pair 2 goes
    kept, skipped = split_too_long(RECORDS, max_length=6, too_long="skip", n_special=2, n_special_pair=4)
    assert skipped == [("1", "too_long"), ("2", "too_long"), ("6", "too_long")]


def test_split_too_long_truncate_marks_parse_prefixes():
    kept, skipped = split_too_long(RECORDS, max_length=6, too_long="truncate", n_special=2, n_special_pair=3)
    assert skipped == []
    assert [r.sentence_id for r in kept] == [r.sentence_id for r in RECORDS]
    prefixes = {r.sentence_id: r.meta.get(PARSE_PREFIX) for r in kept}
    # "a b c d| e f g": 4 words end at 7; "w1 w2 w3| w4 w5" and "v1 v2 v3| v4": 3 words end at 8
    assert prefixes == {"0": None, "1": (7, None), "2": None, "3": None, "4": None, "5": None, "6": (8, 8)}
    assert kept[1].text_a == "a b c d e f g"  # the model still sees the whole text
    assert kept[1].text_a[:7] == "a b c d"
    assert kept[0] is RECORDS[0]


def test_split_unusable_in_file_order_and_counts():
    kept, skipped = split_unusable(RECORDS, max_length=6, too_long="skip", n_special=2, n_special_pair=3)
    assert [r.sentence_id for r in kept] == ["0", "5"]
    assert skipped == [("1", "too_long"), ("2", "too_long"), ("3", "empty"), ("4", "empty"), ("6", "too_long")]
    assert skipped_counts(skipped) == {"too_long": 3, "empty": 2}
    assert skipped_counts([]) == {}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"too_long": "cut"}, "'skip' or 'truncate'"),
        ({"max_length": 0}, "max_length must be a positive whole number"),
        ({"max_length": 1.5}, "max_length must be a positive whole number"),
        ({"n_special": -1}, "n_special must be a whole number >= 0"),
        ({"n_special_pair": True}, "n_special_pair must be a whole number >= 0"),
    ],
)
def test_bad_options(kwargs, message):
    options = {"max_length": 6, "too_long": "skip"} | kwargs
    with pytest.raises(ValueError, match=message):
        split_too_long(RECORDS, **options)
    with pytest.raises(ValueError, match=message):
        split_unusable(RECORDS, **options)


def test_check_usable():
    check_usable([Record("0", "\u200b"), Record("1", "A cat.")], "x.txt")
    check_usable([], "x.txt")  # no records at all is the readers' own error
    with pytest.raises(DataError, match=r"no usable inputs in x\.txt: all 2 record\(s\) are empty"):
        check_usable([Record("0", "\u200b"), Record("1", " \u00ad", "A cat.")], "x.txt")


def test_a_megabyte_input_is_skipped_or_cut_without_reading_it_all():
    huge = Record("big", "word " * 200_001)  # 1,000,005 characters: more than spaCy's nlp.max_length
    kept, skipped = split_too_long([huge, RECORDS[0]], max_length=128, too_long="skip", n_special=2)
    assert skipped == [("big", "too_long")] and [r.sentence_id for r in kept] == ["0"]
    (cut, _), _ = split_too_long([huge, RECORDS[0]], max_length=128, too_long="truncate", n_special=2)
    assert cut.meta[PARSE_PREFIX] == (126 * 5 - 1, None)  # 126 words of 4 letters and a space


# --- the bound holds for real tokenizers -----------------------------------------------------------------

POOL = (
    list("abcdefghijklmnopqrstuvwxyz") + list("ABCXYZ0123456789") + list(".,;:!?'\"()[]{}-/#@&%$")
    + ["[SEP]", "[CLS]", "<s>", "</s>", "[MASK]", "##", "\u00e9", "\u00c5", "e\u0301", "\u00df", "\u4e2d\u6587",
       "\U0001f600", "\u20ac", "\ufffd", "\u00a8", "\u00b4", "\u0301", "\u200b", "\u00ad", "\ufeff", "\u2060",
       "\u3164", "\x0c", "\x1f", "\x85", "\x00", "\u00a0", "\u3000", "\u2028", "\u202f", "\ufb01", "\u2163",
       "\u0661", "\u05d0", "\u0e01", "\u1cf2"]
)
SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", "\r\n"]


def random_text(rng: random.Random) -> str:
    words = ["".join(rng.choice(POOL) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(0, 12))]
    out = ""
    for word in words:
        out += word + rng.choice(SEPARATORS)
    return out


@pytest.fixture(scope="module")
def tokenizers(tiny_model_dir, tmp_path_factory):
    """Fast tokenizers of three kinds: the tiny uncased WordPiece, the default model's, a byte-level BPE."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import AutoTokenizer, BertTokenizerFast, RobertaTokenizerFast

    from headstats.model.sources import default_model_path

    vocab = tmp_path_factory.mktemp("tiny_vocab")
    shutil.copy(tiny_model_dir / "vocab.txt", vocab / "vocab.txt")
    bpe_dir = tmp_path_factory.mktemp("tiny_bpe")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(["the cat sat on the mat", "a dog ran in the house"] * 5, vocab_size=300,
                            min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(bpe_dir))
    return {
        "tiny_bert": BertTokenizerFast.from_pretrained(vocab, do_lower_case=True),
        "minilm": AutoTokenizer.from_pretrained(default_model_path()),
        "roberta": RobertaTokenizerFast.from_pretrained(bpe_dir),
    }


def test_words_never_outnumber_pieces(tokenizers):
    rng = random.Random(0)
    texts = [random_text(rng) for _ in range(400)]
    for name, tok in tokenizers.items():
        for text in texts:
            pieces = tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]
            assert count_words(text) <= len(pieces), (name, text)


def test_skipped_inputs_cannot_fit_and_kept_prefixes_cover_every_piece_seen(tokenizers):
    from headstats.model.encoding import encode_records

    rng = random.Random(1)
    records = [Record(str(k), random_text(rng) + "x", random_text(rng) + "y" if k % 2 else None) for k in range(300)]
    for name, tok in tokenizers.items():
        n_single, n_pair = tok.num_special_tokens_to_add(pair=False), tok.num_special_tokens_to_add(pair=True)
        kept, skipped = split_too_long(records, max_length=10, too_long="skip", n_special=n_single,
                                       n_special_pair=n_pair)
        assert skipped, name  # the test has long inputs
        result = encode_records([r for r in records if (r.sentence_id, "too_long") in skipped], tok, max_length=10)
        assert result.inputs == [], name  # the encoder skips every one of them too
        cut, _ = split_too_long(records, max_length=10, too_long="truncate", n_special=n_single,
                                n_special_pair=n_pair)
        assert any(PARSE_PREFIX in r.meta for r in cut), name
        for record in cut:
            if PARSE_PREFIX not in record.meta:
                continue
            enc = tok(record.text_a, record.text_b, truncation="longest_first", max_length=10,
                      return_offsets_mapping=True, split_special_tokens=True)
            for side, end in enumerate(record.meta[PARSE_PREFIX]):
                if end is None:
                    continue
                ends = [e for (s, e), seq in zip(enc["offset_mapping"], enc.sequence_ids()) if seq == side]
                assert max(ends) <= end, (name, record)


@pytest.mark.parametrize("skipped, message", [
    ({}, "data set 'd' has no input; give at least one sentence or pair"),
    ({"empty": 2}, "no input of data set 'd' could be scored ({'empty': 2}); give inputs with visible text"),
    ({"too_long": 1}, "({'too_long': 1}); raise scoring.max_length or set scoring.too_long: truncate"),
    ({"empty": 1, "too_long": 1}, "raise scoring.max_length"),
])
def test_nothing_to_score_names_the_fix_that_fits_why(skipped, message):
    error = nothing_to_score("d", skipped)
    assert isinstance(error, DataError) and message in str(error) and "\n" not in str(error)
