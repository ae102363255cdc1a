"""Loading models: provenance, eager attention, the supported families, and one clear ModelError for each
broken or unsupported model (found without loading weights wherever that is possible)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from headstats.errors import HeadstatsError, ModelError
from headstats.inputs.records import Record
from headstats.model.loading import (
    SUPPORTED_MODEL_TYPES,
    check_device,
    check_model_config,
    check_model_source,
    load_model,
    resolve_model_path,
    tokenizer_fingerprint,
)

ROBERTA_CORPUS = ["the cat sat on the mat", "a dog ran in the house", "unhappy children read old books"]


from conftest import TINY_WORDS  # noqa: E402
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
    from headstats.study.scoring import score_records

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
    from headstats.model.encoding import encode_record
    from headstats.study.scoring import score_records

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
    import headstats.model.loading as models

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens there
    assert hub.hub_reachable(timeout=1.0) is False
    # the check comes before transformers' download (with its minute of retries) is tried
    with pytest.raises(HeadstatsError, match="not in the Hugging Face cache"):
        models.load_model("headstats-test/not-a-model")


# ------------------------------------------------------------------------------------------------------
# every supported family scores a pair (segment ids fit each family's embeddings)
# ------------------------------------------------------------------------------------------------------
def _unigram_vocab(specials: list[str]) -> list[tuple[str, float]]:
    """A sentencepiece-style (Unigram) vocabulary: whole words with the '▁' prefix, then single characters."""
    whole = [w for w in TINY_WORDS if not w.startswith("##")]
    chars = [(c, -5.0) for c in "abcdefghijklmnopqrstuvwxyz.,?!'"]
    return [(s, 0.0) for s in specials] + [("▁" + w, -1.0) for w in whole] + chars


def build_tiny_family(folder: Path, model_type: str, bert_dir: Path) -> Path:
    """A random 2 x 2 encoder of ``model_type`` with a tokenizer of its family, saved to ``folder``."""
    import torch
    import transformers as tf

    folder.mkdir(parents=True)
    small = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)
    if model_type in ("bert", "electra", "distilbert"):
        tokenizer = tf.AutoTokenizer.from_pretrained(bert_dir)
    elif model_type == "albert":
        tokenizer = tf.AlbertTokenizer(vocab=_unigram_vocab(["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]))
    elif model_type == "roberta":
        from tokenizers import ByteLevelBPETokenizer

        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(ROBERTA_CORPUS * 5, vocab_size=300, min_frequency=1,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        bpe.save_model(str(folder))
        tokenizer = tf.RobertaTokenizer.from_pretrained(folder)
    else:
        cls = {"xlm-roberta": tf.XLMRobertaTokenizer, "camembert": tf.CamembertTokenizer}[model_type]
        tokenizer = cls(vocab=_unigram_vocab(["<s>", "<pad>", "</s>", "<unk>"]) + [("<mask>", 0.0)])
    tokenizer.save_pretrained(folder)
    n = len(tokenizer)
    if model_type == "distilbert":
        config = tf.DistilBertConfig(vocab_size=n, n_layers=2, n_heads=2, dim=16, hidden_dim=32)
    elif model_type in ("electra", "albert"):
        config = tf.AutoConfig.for_model(model_type, vocab_size=n, embedding_size=8, **small)
    elif model_type == "bert":
        config = tf.BertConfig(vocab_size=n, **small)
    else:  # the RoBERTa family: one segment type, positions after the padding index
        config = tf.AutoConfig.for_model(model_type, vocab_size=n, type_vocab_size=1, pad_token_id=1,
                                         max_position_embeddings=130, **small)
    torch.manual_seed(0)
    tf.AutoModel.from_config(config).save_pretrained(folder)
    return folder


def test_supported_families_are_the_bert_family_encoders():
    expected = {"bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra", "albert"}
    assert set(SUPPORTED_MODEL_TYPES) == expected


@pytest.mark.parametrize("model_type", SUPPORTED_MODEL_TYPES)
def test_each_supported_family_loads_and_scores_a_pair(model_type, tiny_model_dir, tmp_path):
    from headstats.study.scoring import score_records

    folder = build_tiny_family(tmp_path / model_type, model_type, tiny_model_dir)
    check_model_source(str(folder))
    loaded = load_model(str(folder))
    assert loaded.provenance["model_type"] == model_type
    assert (loaded.n_layers, loaded.n_heads) == (2, 2)
    pair = Record("p", "the cat sat", "a dog ran", words_a=words("the cat sat", [1, 2, -1], ["det", "nsubj", "ROOT"]),
                  words_b=words("a dog ran", [1, 2, -1], ["det", "nsubj", "ROOT"]))
    run = score_records(loaded, [pair], dataset="d", roles=["local", "block", "delimiter_cls"])
    assert run.counts["n_scored"] == 1
    scores = run.scores["score"].to_numpy()
    assert scores.shape == (3 * 2 * 2,)  # 3 roles x 2 layers x 2 heads, all taking part
    assert np.isfinite(scores).all() and (scores > 0).all()


# ------------------------------------------------------------------------------------------------------
# broken or unsupported models: one ModelError, found without loading weights where possible
# ------------------------------------------------------------------------------------------------------
@pytest.fixture
def no_weight_loading(monkeypatch):
    """Make any loading of model weights (transformers or torch) fail the test."""
    import torch
    import transformers

    def forbidden(*args, **kwargs):
        raise AssertionError("weights were loaded")

    monkeypatch.setattr(transformers.PreTrainedModel, "from_pretrained", classmethod(forbidden))
    monkeypatch.setattr(torch, "load", forbidden)
    import safetensors.torch

    monkeypatch.setattr(safetensors.torch, "load_file", forbidden)


def _copy(tiny_model_dir: Path, tmp_path: Path, name: str = "model", keep=None) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for p in Path(tiny_model_dir).iterdir():
        if keep is None or p.name in keep:
            shutil.copy(p, folder / p.name)
    return folder


TOKENIZER_AND_CONFIG = {"config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json"}


def _refused(spec, *words_in_message, **kwargs) -> str:
    """check_model_source(spec) and load_model(spec) both raise one ModelError with the given words."""
    messages = []
    for call in (check_model_source, load_model):
        with pytest.raises(ModelError) as info:
            call(str(spec), **kwargs)
        messages.append(str(info.value))
    for message in messages:
        assert "\n" not in message
        for word in words_in_message:
            assert word in message, (word, message)
    return messages[0]


def test_the_tiny_model_passes_the_source_check_without_loading_weights(tiny_model_dir, no_weight_loading):
    assert check_model_source(str(tiny_model_dir)) is None
    assert check_model_source("default") is None


def test_folder_without_tokenizer_files(tiny_model_dir, tmp_path, no_weight_loading):
    # transformers 5 loads such a folder with an empty tokenizer: 5 special tokens, every word [UNK]
    folder = _copy(tiny_model_dir, tmp_path, keep={"config.json", "model.safetensors"})
    _refused(folder, "has no tokenizer files", "tokenizer.json", "vocab.txt", "vocab.json + merges.txt",
             "spiece.model", "sentencepiece.bpe.model", "tokenizer.save_pretrained(folder)")


def test_tokenizer_files_without_a_vocabulary(tiny_model_dir, tmp_path, no_weight_loading):
    folder = _copy(tiny_model_dir, tmp_path, keep={"config.json", "model.safetensors"})
    (folder / "vocab.txt").write_text("")  # a file is there, but it holds no token
    _refused(folder, "holds only its 5 special tokens", "no vocabulary was read", "tokenizer.save_pretrained(folder)")


@pytest.mark.parametrize("content", [b"{not json", b'{"model": {"type": "NoSuchModel"}}', b'{"a": 1}'])
def test_unreadable_tokenizer_json(tiny_model_dir, tmp_path, no_weight_loading, content):
    folder = _copy(tiny_model_dir, tmp_path, keep={"config.json", "model.safetensors"})
    (folder / "tokenizer.json").write_bytes(content)
    _refused(folder, "the tokenizer of model", "cannot be read", "tokenizer.save_pretrained(folder)")


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
    _refused(folder, f"has {len(tokenizer)} tokens", "only 50 rows", "resize_token_embeddings")


def test_tokenizer_with_an_added_token_but_the_old_embeddings(tiny_model_dir, tmp_path, no_weight_loading):
    from transformers import AutoTokenizer

    folder = _copy(tiny_model_dir, tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.add_tokens(["zebra"])
    tokenizer.save_pretrained(folder)
    _refused(folder, "has 126 tokens", "only 125 rows")


def test_segment_ids_the_model_has_no_embedding_for(tiny_model_dir, tmp_path, no_weight_loading):
    # a BERT tokenizer (segment ids 0 and 1 in a pair) with a RoBERTa encoder (one segment type)
    import torch
    from transformers import RobertaConfig, RobertaModel

    folder = _copy(tiny_model_dir, tmp_path, keep={"vocab.txt", "tokenizer.json", "tokenizer_config.json"})
    torch.manual_seed(0)
    RobertaModel(RobertaConfig(vocab_size=125, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=32, type_vocab_size=1)).save_pretrained(folder)
    _refused(folder, "segment ids up to 1", "1 segment type(s)", "type_vocab_size")


def test_gpt2_is_refused_from_its_config(tiny_model_dir, tmp_path, no_weight_loading):
    import torch
    from transformers import GPT2Config, GPT2Model

    folder = _copy(tiny_model_dir, tmp_path, keep={"vocab.txt", "tokenizer.json", "tokenizer_config.json"})
    torch.manual_seed(0)
    GPT2Model(GPT2Config(vocab_size=125, n_embd=16, n_layer=2, n_head=2, n_positions=64,
                         bos_token_id=2, eos_token_id=3)).save_pretrained(folder)
    _refused(folder, "is a 'gpt2' model", "bidirectional encoders", "bert, roberta, xlm-roberta, camembert, "
             "distilbert, electra, albert")


def test_decoder_config_is_refused(tiny_model_dir, tmp_path, no_weight_loading):
    folder = _copy(tiny_model_dir, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"is_decoder": True}))
    _refused(folder, "configured as a decoder", "is_decoder: true", "causal")


def test_model_config_check_on_loaded_configs():
    # what load_model checks on the loaded model's config (a hub model's config may arrive only with it)
    from transformers import BertConfig, ElectraConfig, GPT2Config

    check_model_config(BertConfig().to_dict(), "m")
    check_model_config(ElectraConfig().to_dict(), "m")
    with pytest.raises(ModelError, match="is a 'gpt2' model"):
        check_model_config(GPT2Config().to_dict(), "m")  # GPT2Config has no is_decoder at all
    with pytest.raises(ModelError, match="configured as a decoder"):
        check_model_config(BertConfig(is_decoder=True).to_dict(), "m")
    with pytest.raises(ModelError, match="has no model_type"):
        check_model_config({"hidden_size": 16}, "m")


def test_truncated_safetensors(tiny_model_dir, tmp_path, no_weight_loading):
    folder = _copy(tiny_model_dir, tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    _refused(folder, "weights file model.safetensors", "is corrupt or truncated", "re-download or re-save")


@pytest.mark.parametrize("content", [b"not a safetensors file at all, just text" * 10, b"\x08" + b"\x00" * 7 + b"{}"])
def test_garbage_safetensors(tiny_model_dir, tmp_path, no_weight_loading, content):
    folder = _copy(tiny_model_dir, tmp_path)
    (folder / "model.safetensors").write_bytes(content)
    _refused(folder, "weights file model.safetensors", "is corrupt or truncated", "re-download or re-save")


def test_empty_weights_file(tiny_model_dir, tmp_path, no_weight_loading):
    folder = _copy(tiny_model_dir, tmp_path)
    (folder / "model.safetensors").write_bytes(b"")
    _refused(folder, "weights file model.safetensors", "is empty", "re-download or re-save")


def test_corrupt_safetensors_found_at_load_time_too(tiny_model_dir, tmp_path, monkeypatch):
    # a hub model's files are checked only when transformers loads them: its SafetensorError becomes one line
    import headstats.model.loading as models

    folder = _copy(tiny_model_dir, tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    monkeypatch.setattr(models, "_check_weight_files", lambda folder, spec: None)
    with pytest.raises(ModelError, match="weights file model.safetensors of model .* is corrupt or truncated"):
        load_model(str(folder))


def test_weights_of_another_architecture(tiny_model_dir, tmp_path):
    # GPT-2 weights under a BERT config.json: transformers would initialise the whole encoder at random
    import torch
    from transformers import GPT2Config, GPT2Model

    other = tmp_path / "gpt2"
    torch.manual_seed(0)
    GPT2Model(GPT2Config(vocab_size=125, n_embd=16, n_layer=2, n_head=2, n_positions=64,
                         bos_token_id=2, eos_token_id=3)).save_pretrained(other)
    folder = _copy(tiny_model_dir, tmp_path)
    shutil.copy(other / "model.safetensors", folder / "model.safetensors")
    check_model_source(str(folder))  # well-formed files: only loading can tell
    with pytest.raises(ModelError, match="do not belong to its config.json: .* would be random"):
        load_model(str(folder))


def test_weights_whose_shapes_do_not_fit_the_config(tiny_model_dir, tmp_path):
    folder = _copy(tiny_model_dir, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"hidden_size": 32, "intermediate_size": 64}))
    with pytest.raises(ModelError, match=r"do not fit its config.json \(tensor shapes differ\)"):
        load_model(str(folder))


class _Malicious:
    """Unpickling this would create the file ``path`` (a harmless stand-in for running any code)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_malicious_pickle_is_refused_and_never_run(tiny_model_dir, tmp_path):
    import torch

    sentinel = tmp_path / "pickle_code_ran"
    folder = _copy(tiny_model_dir, tmp_path, keep=TOKENIZER_AND_CONFIG)
    torch.save({"embeddings.word_embeddings.weight": _Malicious(sentinel)}, folder / "pytorch_model.bin")
    check_model_source(str(folder))  # a well-formed torch file: only torch's safe loader can judge it
    with pytest.raises(ModelError) as info:
        load_model(str(folder))
    message = str(info.value)
    assert "weights file pytorch_model.bin" in message
    assert "is a pickle that torch refuses to load safely" in message and "convert it to safetensors" in message
    assert "\n" not in message
    assert not sentinel.exists()


def test_truncated_pickle_weights(tiny_model_dir, tmp_path, no_weight_loading):
    import torch

    folder = _copy(tiny_model_dir, tmp_path, keep=TOKENIZER_AND_CONFIG)
    torch.save({"x": torch.zeros(64)}, folder / "pytorch_model.bin")
    data = (folder / "pytorch_model.bin").read_bytes()
    (folder / "pytorch_model.bin").write_bytes(data[: len(data) // 2])
    _refused(folder, "weights file pytorch_model.bin", "is corrupt or truncated")


def test_sharded_weights_with_a_missing_shard(tiny_model_dir, tmp_path):
    from transformers import AutoModel

    folder = _copy(tiny_model_dir, tmp_path, keep=TOKENIZER_AND_CONFIG)
    AutoModel.from_pretrained(tiny_model_dir).save_pretrained(folder, max_shard_size="10KB")
    shards = sorted(folder.glob("model-*.safetensors"))
    assert len(shards) > 1 and (folder / "model.safetensors.index.json").is_file()
    check_model_source(str(folder))
    shards[-1].unlink()
    with pytest.raises(ModelError, match=f"lists shards that are not in the folder \\({shards[-1].name}\\)"):
        check_model_source(str(folder))


def test_weights_that_transformers_does_not_load(tiny_model_dir, tmp_path, no_weight_loading):
    folder = _copy(tiny_model_dir, tmp_path)
    (folder / "model.safetensors").rename(folder / "weights.safetensors")
    _refused(folder, "no weights that transformers loads", "found weights.safetensors", "model.safetensors",
             "save_pretrained(folder)")


@pytest.mark.parametrize(
    ("content", "words_in_message"),
    [
        (b"{not json", ["config.json of model", "is not valid JSON", "save_pretrained(folder)"]),
        (b"\xff\xfe\x00garbage", ["config.json of model", "is not valid JSON"]),
        (b"[1, 2]", ["holds a JSON list, not an object of settings"]),
        (b'{"hidden_size": 16}', ["has no model_type"]),
    ],
)
def test_bad_config_json(tiny_model_dir, tmp_path, no_weight_loading, content, words_in_message):
    folder = _copy(tiny_model_dir, tmp_path)
    (folder / "config.json").write_bytes(content)
    _refused(folder, *words_in_message)


@pytest.mark.parametrize(
    ("settings", "words_in_message"),
    [
        ({"hidden_size": "sixteen"}, ["has a setting that transformers refuses", "'hidden_size'", "expected int"]),
        ({"vocab_size": None}, ["has a setting that transformers refuses", "'vocab_size'"]),
        ({"num_hidden_layers": 0}, ["has sizes that make no model (num_hidden_layers=0;"]),
        ({"num_attention_heads": 0, "vocab_size": -5}, ["(vocab_size=-5, num_attention_heads=0;"]),
        ({"num_attention_heads": 3}, ["has hidden_size 16, which its 3 attention heads do not divide"]),
        ({"type_vocab_size": 0}, ["type_vocab_size=0"]),
    ],
)
def test_config_settings_that_make_no_model(tiny_model_dir, tmp_path, no_weight_loading, settings, words_in_message):
    folder = _copy(tiny_model_dir, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | settings))
    _refused(folder, *words_in_message, "save_pretrained(folder)")


def test_config_json_that_cannot_be_read(tiny_model_dir, tmp_path, no_weight_loading):
    folder = _copy(tiny_model_dir, tmp_path)
    (folder / "config.json").unlink()
    (folder / "config.json").mkdir()  # unreadable even for root (chmod is not)
    _refused(folder, "config.json of model", "cannot be read", "permissions")


def test_model_path_that_is_a_file(tiny_model_dir, no_weight_loading):
    _refused(Path(tiny_model_dir) / "config.json", "is a file", "give the directory that holds config.json")


@pytest.mark.parametrize(
    ("spec", "words_in_message"),
    [
        ("", ["is empty", "'default'"]),
        ("  ", ["is empty"]),
        ("bad\x00name", ["contains a NUL character"]),
        ("x" * 5000, ["is 5000 characters long (at most 4096)"]),
        ("a" * 300, ["not a local folder and not a valid Hugging Face hub id"]),  # too long for either
        ("my model", ["not a local folder and not a valid Hugging Face hub id"]),
        ("./nope/model", ["does not exist", "check the path"]),
    ],
)
def test_bad_model_specs(spec, words_in_message, tmp_path, monkeypatch, no_weight_loading):
    monkeypatch.chdir(tmp_path)
    _refused(spec, *words_in_message)


def test_bad_revision_of_a_hub_id(no_weight_loading, hf_cache):
    _refused("org/model", "revision 'my branch' is not a branch, tag or commit name", revision="my branch")


def test_cached_hub_model_is_checked_from_its_config(tiny_model_dir, tmp_path, hf_cache, no_weight_loading):
    import torch
    from transformers import GPT2Config, GPT2Model

    gpt2 = tmp_path / "gpt2"
    torch.manual_seed(0)
    GPT2Model(GPT2Config(vocab_size=125, n_embd=16, n_layer=2, n_head=2, n_positions=64)).save_pretrained(gpt2)
    hf_cache("org/tiny-gpt2", gpt2)
    hf_cache("org/tiny-bert", Path(tiny_model_dir))
    check_model_source("org/tiny-bert")
    _refused("org/tiny-gpt2", "'org/tiny-gpt2' is a 'gpt2' model")
    check_model_source("org/not-cached")  # a valid id that only loading (or the hub) can judge


def test_cached_hub_model_loads_offline(tiny_model_dir, hf_cache):
    hf_cache("org/tiny-bert", Path(tiny_model_dir))
    loaded = load_model("org/tiny-bert")
    expected = hashlib.sha256((Path(tiny_model_dir) / "model.safetensors").read_bytes()).hexdigest()
    assert loaded.provenance["hub_id"] == "org/tiny-bert" and loaded.provenance["path"] is None
    assert loaded.provenance["weights_sha256"] == {"model.safetensors": expected}
    assert (loaded.n_layers, loaded.n_heads) == (2, 2)


# ------------------------------------------------------------------------------------------------------
# devices
# ------------------------------------------------------------------------------------------------------
def test_cpu_is_a_device():
    assert check_device("cpu") is None


@pytest.mark.parametrize("device", ["quantum", "", "cuda:x"])
def test_unknown_device(device):
    with pytest.raises(ModelError, match=r"unknown device .*; use 'cpu', 'cuda', 'cuda:N', 'mps' or 'auto'"):
        check_device(device)


def test_device_missing_on_this_machine():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    for device in ("cuda", "cuda:1"):
        with pytest.raises(ModelError, match=f"device '{device}' is not available on this machine; use one of: cpu"):
            check_device(device)


def test_load_model_checks_the_device_before_loading(tiny_model_dir, monkeypatch, no_weight_loading):
    import transformers

    def forbidden(*args, **kwargs):
        raise AssertionError("the tokenizer was loaded")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", forbidden)
    with pytest.raises(ModelError, match="unknown device 'quantum'"):
        load_model(str(tiny_model_dir), device="quantum")


# ------------------------------------------------------------------ issue 12: describe without weights, dtype, device


def test_describe_model_gives_the_provenance_load_model_records(tiny_model_dir):
    from headstats.model.loading import describe_model, load_model

    provenance, longest = describe_model(str(tiny_model_dir), dtype="bfloat16")
    loaded = load_model(str(tiny_model_dir), dtype="bfloat16")
    assert provenance == loaded.provenance and longest == loaded.max_input_length == 256
    assert provenance["dtype"] == "bfloat16" and provenance["device_type"] == "cpu"
    assert next(loaded.model.parameters()).dtype.is_floating_point and str(next(loaded.model.parameters()).dtype) == "torch.bfloat16"


def test_dtype_and_device_are_refused_before_loading():
    import torch

    from headstats.errors import ModelError
    from headstats.model.loading import check_device, check_dtype, resolve_device

    with pytest.raises(ModelError, match="unknown dtype 'float64'"):
        check_dtype("float64")
    with pytest.raises(ModelError, match="float16' needs a GPU"):
        check_dtype("float16", "cpu")
    check_dtype("bfloat16", "cpu")
    assert resolve_device("cpu") == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ModelError, match="not available on this machine"):
            check_device("cuda")
        assert resolve_device("auto") in ("cpu", "mps")
    check_device("auto")


def test_bfloat16_scores_agree_with_float32_within_the_stated_tolerance():
    """bfloat16 (8 bits of mantissa) against float32 on the default model: per-head mean scores within 3 %
    (measured: 1.5 % at most, 0.1 % typically), per-input scores within 10 % or 0.1 (measured: 4 %)."""
    from headstats.inputs.readers import read_records
    from headstats.model.loading import load_model
    from headstats.study.scoring import score_records

    records = read_records(str(Path(__file__).resolve().parents[2] / "data" / "demo" / "sentences.txt"), limit=24)
    roles = ["local", "delimiter", "delimiter_cls", "delimiter_sep"]
    full, half = (score_records(load_model("default", dtype=dt), records, dataset="d", roles=roles).array.values
                  for dt in ("float32", "bfloat16"))
    assert full.dtype == half.dtype == np.float32 and full.shape == half.shape
    np.testing.assert_allclose(np.nanmean(half, 0), np.nanmean(full, 0), rtol=0.03, atol=1e-3)
    np.testing.assert_allclose(half, full, rtol=0.10, atol=0.1)
    assert not np.array_equal(half, full)  # it did run in another precision


def test_load_model_loads_the_head_asked_for_and_refuses_an_untrained_masked_lm_head(tmp_path, tiny_model_dir):
    """``head=`` is how every analysis gets a model with a head: the masked-LM head of a checkpoint saved with
    it (its logits those of transformers' own class), the classifier (``head="classifier"``), and a
    one-line refusal of a checkpoint without masked-LM weights (a random head gives no meaningful loss)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from conftest import build_tiny_bert
    from headstats.model.loading import load_model, load_tokenizer, provenance_tokenizer

    folder = build_tiny_bert(tmp_path / "mlm")
    torch.manual_seed(1)
    BertForMaskedLM(BertConfig.from_pretrained(folder)).save_pretrained(folder)
    loaded = load_model(str(folder), head="masked_lm")
    assert type(loaded.model).__name__ == "BertForMaskedLM" and loaded.provenance["architecture"] == "BertForMaskedLM"
    reference = BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    ids = torch.tensor([[2, 7, 8, 3]])
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(input_ids=ids).logits, reference(input_ids=ids).logits)
    assert type(load_model(str(tiny_model_dir), head="classifier").model).__name__ == "BertForSequenceClassification"
    with pytest.raises(ModelError, match=r"has no trained masked_lm head: its weights lack cls\.") as info:
        load_model(str(tiny_model_dir), head="masked_lm")
    assert "\n" not in str(info.value)
    with pytest.raises(ModelError, match="unknown model head 'lm'; choose among encoder, classifier, masked_lm, task"):
        load_model(str(tiny_model_dir), head="lm")
    # head="task": the head the checkpoint was saved with, else the bare encoder and why there is no task loss
    task = load_model(str(folder), head="task")
    assert task.head == "masked_lm" and type(task.model).__name__ == "BertForMaskedLM"
    bare = load_model(str(tiny_model_dir), head="task")
    assert bare.head == "encoder" and type(bare.model).__name__ == "BertModel"
    assert bare.head_note.startswith("the model has neither a fine-tuned classifier head nor a masked-LM head")
    untrained = build_tiny_bert(tmp_path / "untrained")  # a config naming a masked-LM head, without its weights
    config = json.loads((untrained / "config.json").read_text())
    (untrained / "config.json").write_text(json.dumps({**config, "architectures": ["BertForMaskedLM"]}))
    fallback = load_model(str(untrained), head="task")
    assert fallback.head == "encoder" and type(fallback.model).__name__ == "BertModel"
    assert fallback.head_note.startswith("the checkpoint names a masked_lm head but its weights lack cls.")
    tokenizer = provenance_tokenizer({"path": str(tiny_model_dir)})
    assert tokenizer is load_tokenizer(str(tiny_model_dir)) and tokenizer.convert_tokens_to_ids("cat") == 8  # [PAD] [UNK] [CLS] [SEP] [MASK] the a an cat
    assert provenance_tokenizer({}) is None
