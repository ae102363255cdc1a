"""Where a model comes from: a spec resolved to the default model, a folder or a hub id, and one clear
ModelError for a bad spec, folder or revision, found without loading weights."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import refused_model
from headstats.errors import HeadstatsError
from headstats.model.loading import load_model
from headstats.model.sources import check_model_source, resolve_model_path


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


def test_the_tiny_model_passes_the_source_check_without_loading_weights(tiny_model_dir, no_weight_loading):
    assert check_model_source(str(tiny_model_dir)) is None
    assert check_model_source("default") is None


def test_model_path_that_is_a_file(tiny_model_dir, no_weight_loading):
    refused_model(Path(tiny_model_dir) / "config.json", "is a file", "give the directory that holds config.json")


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
    refused_model(spec, *words_in_message)


def test_bad_revision_of_a_hub_id(no_weight_loading, hf_cache):
    refused_model("org/model", "revision 'my branch' is not a branch, tag or commit name", revision="my branch")


def test_cached_hub_model_is_checked_from_its_config(tiny_model_dir, tmp_path, hf_cache, no_weight_loading):
    import torch
    from transformers import GPT2Config, GPT2Model

    gpt2 = tmp_path / "gpt2"
    torch.manual_seed(0)
    GPT2Model(GPT2Config(vocab_size=125, n_embd=16, n_layer=2, n_head=2, n_positions=64)).save_pretrained(gpt2)
    hf_cache("org/tiny-gpt2", gpt2)
    hf_cache("org/tiny-bert", Path(tiny_model_dir))
    check_model_source("org/tiny-bert")
    refused_model("org/tiny-gpt2", "'org/tiny-gpt2' is a 'gpt2' model")
    check_model_source("org/not-cached")  # a valid id that only loading (or the hub) can judge
