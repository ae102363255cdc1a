"""Loading models: provenance, eager attention, clear errors, and non-BERT architectures (DistilBERT, RoBERTa)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest

from headstats.errors import HeadstatsError
from headstats.inputs.records import Record
from headstats.models import load_model, resolve_model_path, tokenizer_fingerprint

ROBERTA_CORPUS = ["the cat sat on the mat", "a dog ran in the house", "unhappy children read old books"]


from conftest import space_words as words  # noqa: E402


def test_provenance_of_tiny_bert(tiny_model, tiny_model_dir):
    prov = tiny_model.provenance
    assert (tiny_model.n_layers, tiny_model.n_heads) == (2, 2)
    assert prov["n_layers"] == 2 and prov["n_heads"] == 2
    assert prov["model_type"] == "bert"
    assert prov["architecture"] == "BertModel"
    assert prov["path"] == str(tiny_model_dir) and prov["hub_id"] is None
    expected = hashlib.sha256((Path(tiny_model_dir) / "model.safetensors").read_bytes()).hexdigest()
    assert prov["weights_sha256"] == {"model.safetensors": expected}
    assert tiny_model.model.config._attn_implementation == "eager"
    assert not tiny_model.model.training


def test_vocab_fingerprint_stable_and_vocab_sensitive(tiny_model, tiny_model_dir, tmp_path):
    again = load_model(str(tiny_model_dir))
    assert again.provenance["vocab_sha256"] == tiny_model.provenance["vocab_sha256"]
    assert tokenizer_fingerprint(again.tokenizer) == tiny_model.provenance["vocab_sha256"]
    # the same weights with a tokenizer that knows one more token
    other = tmp_path / "other_vocab"
    shutil.copytree(tiny_model_dir, other)
    tokenizer = again.tokenizer
    tokenizer.add_tokens(["zebra"])
    tokenizer.save_pretrained(other)
    changed = load_model(str(other))
    assert "zebra" in changed.tokenizer.get_vocab()
    assert changed.provenance["vocab_sha256"] != tiny_model.provenance["vocab_sha256"]
    assert changed.provenance["weights_sha256"] == tiny_model.provenance["weights_sha256"]


def test_directory_without_weights(tiny_model_dir, tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    for p in Path(tiny_model_dir).iterdir():
        if p.suffix != ".safetensors":
            shutil.copy(p, bare / p.name)
    with pytest.raises(HeadstatsError, match="no weight files"):
        load_model(str(bare))


def test_directory_without_config(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(HeadstatsError, match="no config.json"):
        resolve_model_path(str(tmp_path))


def test_missing_local_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(HeadstatsError, match="does not exist"):
        load_model("./nope/model")


def test_hub_id_not_on_disk_offline(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads the variable at import; set its flag too so that no request is tried
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.chdir(tmp_path)
    assert resolve_model_path("headstats-test/not-a-model") == ("headstats-test/not-a-model", False)
    with pytest.raises(HeadstatsError, match="not on disk"):
        load_model("headstats-test/not-a-model")


def test_default_resolves_to_a_model_folder():
    path, is_local = resolve_model_path("default")
    assert is_local
    assert (Path(path) / "config.json").is_file()


@pytest.mark.slow
def test_default_model_loads():
    loaded = load_model("default")
    # all-MiniLM-L6-v2: a BertModel, 6 layers x 12 heads
    assert (loaded.provenance["model_type"], loaded.n_layers, loaded.n_heads) == ("bert", 6, 12)


# ------------------------------------------------------------------------------------------------------
# non-BERT architectures
# ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_distilbert_dir(tiny_model_dir, tmp_path_factory):
    import torch
    from transformers import AutoTokenizer, DistilBertConfig, DistilBertModel

    folder = tmp_path_factory.mktemp("tiny_distilbert")
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    config = DistilBertConfig(
        vocab_size=len(tokenizer), n_layers=2, n_heads=2, dim=16, hidden_dim=32, max_position_embeddings=64
    )
    torch.manual_seed(0)
    DistilBertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _records() -> list[Record]:
    return [
        Record("s0", "the cat sat", words_a=words("the cat sat", [1, 2, -1], ["det", "nsubj", "ROOT"])),
        Record("s1", "a dog chased the cat", words_a=words("a dog chased the cat", [1, 2, -1, 4, 2],
                                                            ["det", "nsubj", "ROOT", "det", "dobj"])),
        Record("p0", "the cat sat", "a dog ran"),
    ]


def test_distilbert_scores(tiny_distilbert_dir):
    from headstats.pipeline import score_records

    loaded = load_model(str(tiny_distilbert_dir))
    assert loaded.provenance["model_type"] == "distilbert"
    assert (loaded.n_layers, loaded.n_heads) == (2, 2)
    assert loaded.model.config._attn_implementation == "eager"
    run = score_records(loaded, _records(), dataset="d", roles=["local", "block", "syntactic:nsubj"], batch_size=2)
    assert run.counts["n_scored"] == 3
    local = run.scores[run.scores.role == "local"]["score"].to_numpy()
    assert local.shape == (3 * 2 * 2,)
    assert np.isfinite(local).all() and (local > 0).all()
    # block only on the pair, nsubj only on the two parsed singles
    assert run.counts["participation"] == {"local": 3, "block": 1, "syntactic:nsubj": 2}


@pytest.fixture(scope="module")
def tiny_roberta_dir(tmp_path_factory):
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

    folder = tmp_path_factory.mktemp("tiny_roberta")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(ROBERTA_CORPUS * 5, vocab_size=300, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))
    tokenizer = RobertaTokenizerFast.from_pretrained(folder)
    tokenizer.save_pretrained(folder)
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=66, type_vocab_size=1, pad_token_id=1)
    torch.manual_seed(0)
    RobertaModel(config).save_pretrained(folder)
    return folder


def test_roberta_layout_and_scores(tiny_roberta_dir):
    from headstats.encoding import encode_record
    from headstats.pipeline import score_records

    loaded = load_model(str(tiny_roberta_dir))
    assert loaded.provenance["model_type"] == "roberta"
    tok = loaded.tokenizer
    record = Record("p", "the cat sat", "a dog ran", words_a=words("the cat sat", [1, 2, -1], ["det", "nsubj", "ROOT"]),
                    words_b=words("a dog ran", [1, 2, -1], ["det", "nsubj", "ROOT"]))
    enc = encode_record(record, tok, index=0)
    pieces = tok.convert_ids_to_tokens(enc.input_ids.tolist())
    # <s> A </s> </s> B </s>
    assert pieces[0] == "<s>" and pieces[-1] == "</s>"
    sep_positions = [i for i, p in enumerate(pieces) if p == "</s>"]
    first_b = sep_positions[1] + 1
    n = len(pieces)
    assert sep_positions[:2] == [sep_positions[0], sep_positions[0] + 1] and sep_positions[2] == n - 1
    # special tokens are found by id, so <s>/</s> count as [CLS]/[SEP]
    assert enc.cls.tolist() == [i == 0 for i in range(n)]
    assert enc.sep.tolist() == [i in sep_positions for i in range(n)]
    assert enc.special.tolist() == [i == 0 or i in sep_positions for i in range(n)]
    # <s> and both </s> between the sides belong to A (they come before B's first piece), the last to B
    assert enc.segment.tolist() == [0] * first_b + [1] * (n - first_b)
    assert enc.token_type_ids.tolist() == [0] * n
    # each word owns exactly the byte-level pieces that spell it ("dog" may be split), on its own side
    texts = ["the", "cat", "sat", "a", "dog", "ran"]
    spelled = ["".join(pieces[i] for i in word).replace("Ġ", "") for word in enc.word_pieces]
    assert spelled == texts
    assert all(i < first_b for word in enc.word_pieces[:3] for i in word)
    assert all(first_b <= i < n - 1 for word in enc.word_pieces[3:] for i in word)
    assert [a.relation for a in enc.arcs] == ["det", "nsubj", "det", "nsubj"]
    assert enc.arcs[1] == type(enc.arcs[1])(enc.word_pieces[1], enc.word_pieces[2], "nsubj")
    run = score_records(loaded, [record, Record("s", "the cat sat on the mat")], dataset="d",
                        roles=["local", "delimiter_cls", "block", "syntactic"])
    finite = run.scores.dropna(subset=["score"])
    assert len(finite) == 2 * 2 * 2 * 2 + 2 * 2 * 1 + 2 * 2 * 1  # local + cls on both, block and syntactic on the pair
    assert (finite["score"] > 0).all()


def test_hub_id_fails_before_any_download_when_the_hub_is_unreachable(monkeypatch):
    import headstats.hub as hub
    import headstats.models as models

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens there
    assert hub.hub_reachable(timeout=1.0) is False
    # the check comes before transformers' download (with its minute of retries) is tried
    with pytest.raises(HeadstatsError, match="not in the Hugging Face cache"):
        models.load_model("headstats-test/not-a-model")
