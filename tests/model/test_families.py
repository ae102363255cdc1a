"""The supported families and config.json: decoders, other architectures and configs that make no model are
refused in one line before any weight is loaded."""

from __future__ import annotations

import json

import pytest

from conftest import copy_model, refused_model
from headstats.errors import ModelError
from headstats.model.families import SUPPORTED_MODEL_TYPES, check_model_config


def test_supported_families_are_the_bert_family_encoders():
    expected = {"bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra", "albert"}
    assert set(SUPPORTED_MODEL_TYPES) == expected


def test_gpt2_is_refused_from_its_config(tiny_model_dir, tmp_path, no_weight_loading):
    import torch
    from transformers import GPT2Config, GPT2Model

    folder = copy_model(tiny_model_dir, tmp_path, keep={"vocab.txt", "tokenizer.json", "tokenizer_config.json"})
    torch.manual_seed(0)
    GPT2Model(GPT2Config(vocab_size=125, n_embd=16, n_layer=2, n_head=2, n_positions=64,
                         bos_token_id=2, eos_token_id=3)).save_pretrained(folder)
    refused_model(folder, "is a 'gpt2' model", "bidirectional encoders", "bert, roberta, xlm-roberta, camembert, "
             "distilbert, electra, albert")


def test_decoder_config_is_refused(tiny_model_dir, tmp_path, no_weight_loading):
    folder = copy_model(tiny_model_dir, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"is_decoder": True}))
    refused_model(folder, "configured as a decoder", "is_decoder: true", "causal")


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
    folder = copy_model(tiny_model_dir, tmp_path)
    (folder / "config.json").write_bytes(content)
    refused_model(folder, *words_in_message)


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
    folder = copy_model(tiny_model_dir, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | settings))
    refused_model(folder, *words_in_message, "save_pretrained(folder)")


def test_config_json_that_cannot_be_read(tiny_model_dir, tmp_path, no_weight_loading):
    folder = copy_model(tiny_model_dir, tmp_path)
    (folder / "config.json").unlink()
    (folder / "config.json").mkdir()  # unreadable even for root (chmod is not)
    refused_model(folder, "config.json of model", "cannot be read", "permissions")
