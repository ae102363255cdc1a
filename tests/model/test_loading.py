"""Loading models: the head asked for, eager attention, the families that load and score, errors that only
loading can find (weights of another model, unsafe pickles, shapes that do not fit), and the device checked first."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from headstats.errors import HeadstatsError, ModelError
from headstats.inputs.records import Record
from headstats.model.families import SUPPORTED_MODEL_TYPES
from headstats.model.loading import load_model
from headstats.model.sources import check_model_source

ROBERTA_CORPUS = ["the cat sat on the mat", "a dog ran in the house", "unhappy children read old books"]


from conftest import TOKENIZER_AND_CONFIG, TINY_WORDS, copy_model  # noqa: E402
from conftest import space_words as words  # noqa: E402


ROBERTA_CORPUS = ["the cat sat on the mat", "a dog ran in the house", "unhappy children read old books"]


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


def test_corrupt_safetensors_found_at_load_time_too(tiny_model_dir, tmp_path, monkeypatch):
    # a hub model's files are checked only when transformers loads them: its SafetensorError becomes one line
    import headstats.model.sources as sources

    folder = copy_model(tiny_model_dir, tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    monkeypatch.setattr(sources, "check_weight_files", lambda folder, spec: None)
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
    folder = copy_model(tiny_model_dir, tmp_path)
    shutil.copy(other / "model.safetensors", folder / "model.safetensors")
    check_model_source(str(folder))  # well-formed files: only loading can tell
    with pytest.raises(ModelError, match="do not belong to its config.json: .* would be random"):
        load_model(str(folder))


def test_weights_whose_shapes_do_not_fit_the_config(tiny_model_dir, tmp_path):
    folder = copy_model(tiny_model_dir, tmp_path)
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
    folder = copy_model(tiny_model_dir, tmp_path, keep=TOKENIZER_AND_CONFIG)
    torch.save({"embeddings.word_embeddings.weight": _Malicious(sentinel)}, folder / "pytorch_model.bin")
    check_model_source(str(folder))  # a well-formed torch file: only torch's safe loader can judge it
    with pytest.raises(ModelError) as info:
        load_model(str(folder))
    message = str(info.value)
    assert "weights file pytorch_model.bin" in message
    assert "is a pickle that torch refuses to load safely" in message and "convert it to safetensors" in message
    assert "\n" not in message
    assert not sentinel.exists()


def test_cached_hub_model_loads_offline(tiny_model_dir, hf_cache):
    hf_cache("org/tiny-bert", Path(tiny_model_dir))
    loaded = load_model("org/tiny-bert")
    expected = hashlib.sha256((Path(tiny_model_dir) / "model.safetensors").read_bytes()).hexdigest()
    assert loaded.provenance["hub_id"] == "org/tiny-bert" and loaded.provenance["path"] is None
    assert loaded.provenance["weights_sha256"] == {"model.safetensors": expected}
    assert (loaded.n_layers, loaded.n_heads) == (2, 2)


def test_load_model_checks_the_device_before_loading(tiny_model_dir, monkeypatch, no_weight_loading):
    import transformers

    def forbidden(*args, **kwargs):
        raise AssertionError("the tokenizer was loaded")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", forbidden)
    with pytest.raises(ModelError, match="unknown device 'quantum'"):
        load_model(str(tiny_model_dir), device="quantum")


def test_describe_model_gives_the_provenance_load_model_records(tiny_model_dir):
    from headstats.model.loading import describe_model, load_model

    provenance, longest = describe_model(str(tiny_model_dir), dtype="bfloat16")
    loaded = load_model(str(tiny_model_dir), dtype="bfloat16")
    assert provenance == loaded.provenance and longest == loaded.max_input_length == 256
    assert provenance["dtype"] == "bfloat16" and provenance["device_type"] == "cpu"
    assert next(loaded.model.parameters()).dtype.is_floating_point and str(next(loaded.model.parameters()).dtype) == "torch.bfloat16"


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
    # loaded again at each call (no cache in the model layer): the same vocabulary
    assert tokenizer is not load_tokenizer(str(tiny_model_dir))
    assert tokenizer.get_vocab() == load_tokenizer(str(tiny_model_dir)).get_vocab()
    assert tokenizer.convert_tokens_to_ids("cat") == 8  # [PAD] [UNK] [CLS] [SEP] [MASK] the a an cat
    assert provenance_tokenizer({}) is None
