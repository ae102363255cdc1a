"""One way to find punctuation pieces and one tokenizer-compatibility rule, on tokenizers built here: a
RoBERTa-like byte-level BPE (``Ġ.``), a SentencePiece-like one (``▁,``) and the tiny BERT's WordPiece (``.``)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from headstats.errors import HeadstatsError, IncompatibleResultsError
from conftest import copy_model, refused_model
from headstats.model.loading import load_model
from headstats.model.tokenizers import (PUNCTUATION, check_same_tokenizer, fingerprint_of, punctuation_ids,
                                        tokenizer_fingerprint)

SRC = Path(__file__).resolve().parents[2] / "src" / "headstats"
#: Punctuation both glued to a word ("sat.") and after a space ("ran ,"), so both forms enter the vocabulary.
CORPUS = ["the cat sat. the dog ran , home .", "a mouse , a house. the end ."] * 20


@pytest.fixture(scope="module")
def roberta_like(tmp_path_factory):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    folder = tmp_path_factory.mktemp("roberta_like")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS, vocab_size=300, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))
    return RobertaTokenizerFast.from_pretrained(folder)


@pytest.fixture(scope="module")
def sentencepiece_like():
    from tokenizers import SentencePieceBPETokenizer
    from transformers import PreTrainedTokenizerFast

    sp = SentencePieceBPETokenizer()
    sp.train_from_iterator(CORPUS, vocab_size=120, min_frequency=1, special_tokens=["<unk>", "<pad>"])
    return PreTrainedTokenizerFast(tokenizer_object=sp, unk_token="<unk>", pad_token="<pad>")


def expected_ids(tokenizer, forms):
    vocab = tokenizer.get_vocab()
    return tuple(sorted(vocab[f] for f in forms if f in vocab))


@pytest.mark.parametrize("kind, marker", [("roberta_like", "\u0120"), ("sentencepiece_like", "\u2581")])
def test_punctuation_with_a_word_start_marker(kind, marker, request):
    tokenizer = request.getfixturevalue(kind)
    vocab = tokenizer.get_vocab()
    assert f"{marker}," in vocab or f"{marker}." in vocab  # " ," and "," are different pieces
    ids = punctuation_ids(tokenizer)
    assert ids == expected_ids(tokenizer, [".", ",", f"{marker}.", f"{marker},"])
    # what a text's "." and " ," become is punctuation, whichever form the tokenizer chose
    pieces = tokenizer("the dog ran , home. the end .")["input_ids"]
    marks = [i for i in pieces if tokenizer.convert_ids_to_tokens(i).lstrip(marker) in PUNCTUATION]
    assert len(marks) == 3 and set(marks) <= set(ids)
    if kind == "roberta_like":
        assert {".", "\u0120.", "\u0120,"} <= set(vocab) and len(ids) >= 3


def test_punctuation_of_wordpiece(tiny_model):
    vocab = tiny_model.tokenizer.get_vocab()
    assert punctuation_ids(tiny_model.tokenizer) == tuple(sorted({vocab["."], vocab[","]}))


def test_every_analysis_finds_punctuation_here():
    # The drift this catches: gradients matched only the bare "." while surface matched "Ġ." and "▁." too, so on
    # RoBERTa "punct" meant two sets. No module but this one reads a vocabulary to find punctuation.
    import headstats.analyses.gradients.collect as gradients
    import headstats.analyses.surface.collect as surface
    import headstats.model.tokenizers as tokenizers

    assert surface.punctuation_ids is gradients.punctuation_ids is tokenizers.punctuation_ids
    readers = []
    for path in sorted(SRC.rglob("*.py")):
        if path.parent.name == "model":
            continue  # the model layer: loading reads vocabularies for fingerprints and checks
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in {"get_vocab", "vocab", "convert_tokens_to_ids"}:
                readers.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert not readers, f"find punctuation with headstats.model.tokenizers.punctuation_ids, not at {readers}"


# ------------------------------------------------------------------------------------ one tokenizer check

def test_same_tokenizer_passes_and_returns_the_fingerprint(tiny_model):
    fp = tokenizer_fingerprint(tiny_model.tokenizer)
    assert check_same_tokenizer(tiny_model, tiny_model.tokenizer, fp, {"vocab_sha256": fp}) == fp
    assert check_same_tokenizer() is None and check_same_tokenizer(None, {}) is None  # nothing known: no check
    assert fingerprint_of({"vocab_sha256": fp}) == fp and fingerprint_of(tiny_model) == fp


def test_different_tokenizers_are_refused_in_one_line(tiny_model, roberta_like):
    with pytest.raises(IncompatibleResultsError) as err:
        check_same_tokenizer(tiny_model, roberta_like, names=["bert", "roberta"])
    message = str(err.value)
    assert isinstance(err.value, HeadstatsError) and "\n" not in message
    assert message.startswith("cannot compare models 'bert' and 'roberta': they have different tokenizers")
    assert tokenizer_fingerprint(roberta_like)[:12] in message and "fine-tuned from it" in message
    # an unknown fingerprint (an old MeasureArray without provenance) is left out, a known one still counts
    with pytest.raises(IncompatibleResultsError):
        check_same_tokenizer(tiny_model, None, roberta_like)
    with pytest.raises(TypeError, match="cannot find a tokenizer"):
        fingerprint_of(3.5)


def test_the_tokenizer_check_is_written_once():
    # The drift this catches: the runner, the before/after tables, the comparison preflight and hs.compare each
    # compared fingerprints with their own rule and message. Only model/tokenizers.py compares them now.
    compares = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "tokenizers.py":
            continue
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
                source = ast.get_source_segment(text, node) or ""
                # a model's identity (weights and tokenizer together: Provenance.same_model) is another idea
                if ("fingerprint" in source or "vocab_sha256" in source) and "weights" not in source:
                    compares.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert not compares, f"use headstats.model.tokenizers.check_same_tokenizer at {compares}"


def test_vocab_fingerprint_stable_and_vocab_sensitive(tiny_model, tiny_model_dir, tmp_path):
    again = load_model(str(tiny_model_dir))
    assert again.provenance["vocab_sha256"] == tiny_model.provenance["vocab_sha256"]
    assert tokenizer_fingerprint(again.tokenizer) == tiny_model.provenance["vocab_sha256"]
    # the same weights with a tokenizer of the same size in which one token is another word
    # (a tokenizer with one more token would not fit the embeddings, see test_vocabulary_larger_than_embeddings)
    other = tmp_path / "other_vocab"
    shutil.copytree(tiny_model_dir, other)
    (other / "tokenizer.json").unlink()  # read the vocabulary from vocab.txt
    vocab = (other / "vocab.txt").read_text().splitlines()
    vocab[vocab.index("book")] = "zebra"
    (other / "vocab.txt").write_text("\n".join(vocab) + "\n")
    changed = load_model(str(other))
    assert "zebra" in changed.tokenizer.get_vocab() and "book" not in changed.tokenizer.get_vocab()
    assert len(changed.tokenizer) == len(tiny_model.tokenizer)
    assert changed.provenance["vocab_sha256"] != tiny_model.provenance["vocab_sha256"]
    assert changed.provenance["weights_sha256"] == tiny_model.provenance["weights_sha256"]


def test_tokenizer_files_without_a_vocabulary(tiny_model_dir, tmp_path, no_weight_loading):
    folder = copy_model(tiny_model_dir, tmp_path, keep={"config.json", "model.safetensors"})
    (folder / "vocab.txt").write_text("")  # a file is there, but it holds no token
    refused_model(folder, "holds only its 5 special tokens", "no vocabulary was read", "tokenizer.save_pretrained(folder)")


@pytest.mark.parametrize("content", [b"{not json", b'{"model": {"type": "NoSuchModel"}}', b'{"a": 1}'])
def test_unreadable_tokenizer_json(tiny_model_dir, tmp_path, no_weight_loading, content):
    folder = copy_model(tiny_model_dir, tmp_path, keep={"config.json", "model.safetensors"})
    (folder / "tokenizer.json").write_bytes(content)
    refused_model(folder, "the tokenizer of model", "cannot be read", "tokenizer.save_pretrained(folder)")


def test_vocabulary_larger_than_embeddings(tiny_model_dir, tmp_path, no_weight_loading):
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    folder = tmp_path / "small_embeddings"
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(folder)
    assert len(tokenizer) == 125
    refused_model(folder, f"has {len(tokenizer)} tokens", "only 50 rows", "resize_token_embeddings")


def test_tokenizer_with_an_added_token_but_the_old_embeddings(tiny_model_dir, tmp_path, no_weight_loading):
    from transformers import AutoTokenizer

    folder = copy_model(tiny_model_dir, tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.add_tokens(["zebra"])
    tokenizer.save_pretrained(folder)
    refused_model(folder, "has 126 tokens", "only 125 rows")


def test_segment_ids_the_model_has_no_embedding_for(tiny_model_dir, tmp_path, no_weight_loading):
    # a BERT tokenizer (segment ids 0 and 1 in a pair) with a RoBERTa encoder (one segment type)
    import torch
    from transformers import RobertaConfig, RobertaModel

    folder = copy_model(tiny_model_dir, tmp_path, keep={"vocab.txt", "tokenizer.json", "tokenizer_config.json"})
    torch.manual_seed(0)
    RobertaModel(RobertaConfig(vocab_size=125, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=32, type_vocab_size=1)).save_pretrained(folder)
    refused_model(folder, "segment ids up to 1", "1 segment type(s)", "type_vocab_size")
