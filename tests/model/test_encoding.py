"""Encoding records: special positions, segments, word-to-piece alignment by offsets, arcs, long and empty inputs."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from headstats.model.encoding import Arc, align_words, encode_record, encode_records
from headstats.inputs.records import Record, Word


from conftest import space_words as words  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir, tmp_path_factory):
    """The tiny BERT's uncased WordPiece vocabulary as a fast tokenizer, built from its vocab.txt.

    (Built from vocab.txt rather than loaded from the tiny model folder: under transformers 5,
    ``BertTokenizerFast(vocab_file=...)`` in conftest ignores the file and saves a 5-token vocabulary.)
    """
    from transformers import BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny_vocab")
    shutil.copy(tiny_model_dir / "vocab.txt", folder / "vocab.txt")
    tok = BertTokenizerFast.from_pretrained(folder, do_lower_case=True)
    assert tok.is_fast and "unhappy" not in tok.get_vocab() and len(tok) > 100
    return tok


@pytest.fixture(scope="module")
def vocab(tiny_model_dir):
    return {t: i for i, t in enumerate((tiny_model_dir / "vocab.txt").read_text().splitlines())}


def test_pair_layout(tokenizer, vocab):
    enc = encode_record(Record("p", "the cat sat", "a dog ran"), tokenizer, index=3)
    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]", "a", "dog", "ran", "[SEP]"]
    assert enc.input_ids.tolist() == [vocab[t] for t in tokens]
    assert enc.input_ids[0] == tokenizer.cls_token_id
    assert (enc.index, enc.sentence_id, enc.length, enc.is_pair, enc.truncated) == (3, "p", 9, True, False)
    assert enc.special.tolist() == [True, False, False, False, True, False, False, False, True]
    assert enc.cls.tolist() == [True] + [False] * 8
    assert enc.sep.tolist() == [False] * 4 + [True] + [False] * 3 + [True]
    # [CLS] and the first [SEP] in A, the last [SEP] in B (METHODS 1.1, block)
    assert enc.segment.tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert enc.token_type_ids.tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert enc.word_pieces == [] and enc.arcs == []


def test_single_layout(tokenizer):
    enc = encode_record(Record("s", "The cat sat."), tokenizer, index=0)
    assert tokenizer.convert_ids_to_tokens(enc.input_ids.tolist()) == ["[CLS]", "the", "cat", "sat", ".", "[SEP]"]
    assert not enc.is_pair
    assert enc.special.tolist() == [True, False, False, False, False, True]
    assert enc.segment.tolist() == [0] * 6
    assert enc.token_type_ids.tolist() == [0] * 6


def test_split_word_owns_all_its_pieces(tokenizer):
    text = "The UNHAPPY cat sat"
    enc = encode_record(Record("s", text, words_a=words(text, [2, 2, 3, -1], ["det", "amod", "nsubj", "ROOT"])),
                        tokenizer, index=0)
    assert tokenizer.convert_ids_to_tokens(enc.input_ids.tolist()) == \
        ["[CLS]", "the", "un", "##happy", "cat", "sat", "[SEP]"]
    assert enc.word_pieces == [(1,), (2, 3), (4,), (5,)]
    assert enc.arcs == [Arc((1,), (4,), "det"), Arc((2, 3), (4,), "amod"), Arc((4,), (5,), "nsubj")]


def test_repeated_word_aligned_by_offsets(tokenizer):
    text = "the cat saw the dog"
    parsed = words(text, [1, 2, -1, 4, 2], ["det", "nsubj", "ROOT", "det", "dobj"])
    enc = encode_record(Record("s", text, words_a=parsed), tokenizer, index=0)
    # the second "the" is piece 4, not piece 1 (first occurrence)
    assert enc.word_pieces == [(1,), (2,), (3,), (4,), (5,)]
    assert enc.arcs == [
        Arc((1,), (2,), "det"), Arc((2,), (3,), "nsubj"), Arc((4,), (5,), "det"), Arc((5,), (3,), "dobj"),
    ]


def test_align_words_direct(tokenizer):
    encoding = tokenizer("the cat saw the dog", "the dog", return_offsets_mapping=True)
    offsets = np.asarray(encoding["offset_mapping"])
    seq = encoding.sequence_ids()
    side_b = (Word("the", 0, 3, 1, "det"), Word("dog", 4, 7, -1, "ROOT"))
    # side B's "the" has the same offsets as side A's first "the"; only pieces of side 1 count
    assert align_words(side_b, offsets, seq, side=1) == [(7,), (8,)]
    assert align_words(side_b, offsets, seq, side=0) == [(1,), (2,)]


def test_pair_arcs_use_their_own_side(tokenizer):
    a, b = "the cat sat", "a dog ran"
    record = Record("p", a, b, words_a=words(a, [1, 2, -1], ["det", "nsubj", "ROOT"]),
                    words_b=words(b, [1, 2, -1], ["det", "nsubj", "ROOT"]))
    enc = encode_record(record, tokenizer, index=0)
    assert enc.word_pieces == [(1,), (2,), (3,), (5,), (6,), (7,)]
    assert enc.arcs == [Arc((1,), (2,), "det"), Arc((2,), (3,), "nsubj"),
                        Arc((5,), (6,), "det"), Arc((6,), (7,), "nsubj")]


def test_too_long_skip(tokenizer):
    record = Record("p", "the cat sat", "a dog ran")  # 9 pieces
    assert encode_record(record, tokenizer, index=0, max_length=8, too_long="skip") is None
    assert encode_record(record, tokenizer, index=0, max_length=9, too_long="skip").length == 9
    result = encode_records([record, Record("s", "the cat"), record], tokenizer, max_length=8)
    assert dict(result.skipped) == {"too_long": 2}
    assert [(e.index, e.sentence_id, e.length) for e in result.inputs] == [(1, "s", 4)]


def test_too_long_truncate_drops_cut_arcs(tokenizer):
    text = "the cat saw the dog"  # [CLS] the cat saw the dog [SEP] = 7 pieces
    parsed = words(text, [1, 2, -1, 4, 2], ["det", "nsubj", "ROOT", "det", "dobj"])
    result = encode_records([Record("s", text, words_a=parsed)], tokenizer, max_length=5, too_long="truncate")
    (enc,) = result.inputs
    assert enc.truncated and enc.length == 5
    assert tokenizer.convert_ids_to_tokens(enc.input_ids.tolist()) == ["[CLS]", "the", "cat", "saw", "[SEP]"]
    assert enc.special.tolist() == [True, False, False, False, True]
    assert enc.word_pieces == [(1,), (2,), (3,), (), ()]
    # the -> dog and dog -> saw lost an end
    assert enc.arcs == [Arc((1,), (2,), "det"), Arc((2,), (3,), "nsubj")]
    assert result.notes["arcs_dropped_truncation"] == 2
    assert result.notes["truncated"] == 1
    assert result.notes["words_without_pieces"] == 0
    assert dict(result.skipped) == {}


def test_truncate_pair_longest_first(tokenizer):
    record = Record("p", "the cat sat on the mat", "a dog")  # 6 + 2 + 3 = 11 pieces
    (enc,) = encode_records([record], tokenizer, max_length=8, too_long="truncate").inputs
    assert tokenizer.convert_ids_to_tokens(enc.input_ids.tolist()) == \
        ["[CLS]", "the", "cat", "sat", "[SEP]", "a", "dog", "[SEP]"]
    assert enc.segment.tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    assert enc.sep.tolist() == [False, False, False, False, True, False, False, True]


def test_empty_records_and_bad_option(tokenizer):
    records = [Record("e0", ""), Record("e1", "   "), Record("e2", " ", " "), Record("ok", "the cat")]
    result = encode_records(records, tokenizer)
    assert dict(result.skipped) == {"empty": 3}
    assert [e.sentence_id for e in result.inputs] == ["ok"]
    assert result.inputs[0].index == 3
    with pytest.raises(ValueError, match="'skip' or 'truncate'"):
        encode_records(records, tokenizer, too_long="cut")


def test_word_without_pieces_is_counted(tokenizer):
    # a parse whose last word lies outside the text (a misaligned parse): its arc is dropped and counted
    parsed = (Word("the", 0, 3, 1, "det"), Word("cat", 4, 7, -1, "ROOT"), Word("x", 20, 21, 1, "amod"))
    result = encode_records([Record("s", "the cat", words_a=parsed)], tokenizer)
    assert result.inputs[0].arcs == [Arc((1,), (2,), "det")]
    assert result.notes["words_without_pieces"] == 1
    assert result.notes["arcs_dropped_no_pieces"] == 1


# --- literal special tokens in the text ------------------------------------------------------------------


def test_literal_special_tokens_are_text(tokenizer):
    a, b = "the cat [SEP] sat", "[CLS] a dog [PAD]"
    # what the tokenizer does on its own: the literal [SEP] and [CLS] become special ids
    raw = tokenizer(a, b)["input_ids"]
    assert raw.count(tokenizer.sep_token_id) == 3 and raw.count(tokenizer.cls_token_id) == 2
    record = Record("p", a, b, words_a=words(a, [1, 3, 3, -1], ["det", "nsubj", "dep", "ROOT"]),
                    words_b=words(b, [2, 2, -1, 2], ["dep", "det", "ROOT", "dep"]))
    enc = encode_record(record, tokenizer, index=0)
    ids = enc.input_ids.tolist()
    assert ids.count(tokenizer.cls_token_id) == 1 and ids.count(tokenizer.sep_token_id) == 2
    assert ids.count(tokenizer.pad_token_id) == 0
    # "[" and "]" are not in the tiny vocabulary
    assert tokenizer.convert_ids_to_tokens(ids) == [
        "[CLS]", "the", "cat", "[UNK]", "s", "##e", "##p", "[UNK]", "sat", "[SEP]",
        "[UNK]", "c", "##l", "##s", "[UNK]", "a", "dog", "[UNK]", "p", "##a", "##d", "[UNK]", "[SEP]",
    ]
    assert np.flatnonzero(enc.special).tolist() == [0, 9, 22]
    assert np.flatnonzero(enc.sep).tolist() == [9, 22] and np.flatnonzero(enc.cls).tolist() == [0]
    assert enc.segment.tolist() == [0] * 10 + [1] * 13
    # the literal tokens are words with all their pieces, and arcs use them
    assert enc.word_pieces == [(1,), (2,), (3, 4, 5, 6, 7), (8,), (10, 11, 12, 13, 14), (15,), (16,),
                               (17, 18, 19, 20, 21)]
    assert enc.arcs[2] == Arc((3, 4, 5, 6, 7), (8,), "dep")
    assert enc.arcs[3] == Arc((10, 11, 12, 13, 14), (16,), "dep")


@pytest.fixture(scope="module")
def roberta_tokenizer(tmp_path_factory):
    """A byte-level BPE tokenizer of the RoBERTa kind (<s> A </s></s> B </s>), trained on a few sentences."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    folder = tmp_path_factory.mktemp("tiny_roberta_tokenizer")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(["the cat sat on the mat", "a dog ran in the house"] * 5, vocab_size=300,
                            min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))
    return RobertaTokenizerFast.from_pretrained(folder)


def test_literal_special_tokens_are_text_for_roberta(roberta_tokenizer):
    tok = roberta_tokenizer
    a, b = "the cat </s> sat", "<s> a dog <mask>"
    raw = tok(a, b)["input_ids"]
    assert raw.count(tok.sep_token_id) == 4 and raw.count(tok.cls_token_id) == 2
    record = Record("p", a, b, words_a=words(a, [1, 3, 3, -1], ["det", "nsubj", "dep", "ROOT"]),
                    words_b=words(b, [2, 2, -1, 2], ["dep", "det", "ROOT", "dep"]))
    enc = encode_record(record, tok, index=0)
    ids = enc.input_ids.tolist()
    assert ids.count(tok.cls_token_id) == 1 and ids.count(tok.sep_token_id) == 3
    assert ids.count(tok.mask_token_id) == 0
    pieces = tok.convert_ids_to_tokens(ids)
    assert np.flatnonzero(enc.special).tolist() == [i for i, p in enumerate(pieces) if p in ("<s>", "</s>")]
    assert pieces[0] == "<s>" and pieces[-1] == "</s>"
    # every word owns exactly the pieces that spell it, on its own side
    spelled = ["".join(pieces[i] for i in word).replace("\u0120", "") for word in enc.word_pieces]
    assert spelled == ["the", "cat", "</s>", "sat", "<s>", "a", "dog", "<mask>"]
    first_b = np.flatnonzero(enc.sep)[1] + 1
    assert all(i < first_b for word in enc.word_pieces[:4] for i in word)
    assert all(i >= first_b for word in enc.word_pieces[4:] for i in word)
    assert len(enc.arcs) == 6


def test_old_transformers_without_split_special_tokens_is_a_model_error(tokenizer):
    from headstats.errors import ModelError

    def old_tokenizer(*args, **kwargs):
        if "split_special_tokens" in kwargs:
            raise TypeError("_batch_encode_plus() got an unexpected keyword argument 'split_special_tokens'")
        return tokenizer(*args, **kwargs)

    with pytest.raises(ModelError, match=r"upgrade it: pip install -U 'transformers>=4.42'"):
        encode_record(Record("s", "the cat"), old_tokenizer, index=0)


# --- inputs with no visible character, or no piece -------------------------------------------------------


def test_invisible_inputs_are_skipped_as_empty(tokenizer, roberta_tokenizer):
    records = [
        Record("zw", "\u200b\u200c\u200d"),
        Record("soft", "\u00ad \u2060\ufeff"),
        Record("pair", "the cat", "\u200b"),
        Record("ok", "the cat"),
        Record("fffd", "\ufffd"),  # visible, but BERT's normaliser deletes it: no piece
    ]
    result = encode_records(records, tokenizer)
    assert dict(result.skipped) == {"empty": 3, "no_pieces": 1}
    assert [e.sentence_id for e in result.inputs] == ["ok"]
    # a byte-level BPE spells U+FFFD in bytes: it is scored there
    result = encode_records(records, roberta_tokenizer)
    assert dict(result.skipped) == {"empty": 3}
    assert [e.sentence_id for e in result.inputs] == ["ok", "fffd"]


def test_align_words_is_the_overlap_rule_in_order_and_out_of_order():
    """A word's pieces are those whose span overlaps it (start < word end, end > word start): found by two
    binary searches when the spans are in reading order, by the rule itself when they are not."""
    from headstats.inputs.records import Word

    def rule(words, offsets, seq, side):
        on = np.array([s == side for s in seq]) & (offsets[:, 1] > offsets[:, 0])
        pos = np.flatnonzero(on)
        return [tuple(int(p) for p in pos[(offsets[pos, 0] < w.end) & (offsets[pos, 1] > w.start)]) for w in words]

    seq = [None, 0, 0, 0, 0, 0, None]
    words = [Word("ab", 0, 2, -1, ""), Word("cde", 3, 6, -1, ""), Word("f", 6, 7, -1, ""), Word("x", 9, 10, -1, "")]
    in_order = np.array([[0, 0], [0, 2], [3, 4], [4, 6], [6, 7], [7, 7], [0, 0]])
    assert align_words(words, in_order, seq, 0) == rule(words, in_order, seq, 0) == [(1,), (2, 3), (4,), ()]
    out_of_order = np.array([[0, 0], [3, 4], [0, 2], [4, 6], [6, 7], [7, 7], [0, 0]])
    assert align_words(words, out_of_order, seq, 0) == rule(words, out_of_order, seq, 0) == [(2,), (1, 3), (4,), ()]
