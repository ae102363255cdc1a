"""A checkpoint's files: missing, empty, truncated or garbage weight files and missing tokenizer files are
refused in one line before any weight is loaded."""

from __future__ import annotations

import pytest

from conftest import TOKENIZER_AND_CONFIG, copy_model, refused_model
from headstats.errors import ModelError
from headstats.model.sources import check_model_source


def test_folder_without_tokenizer_files(tiny_model_dir, tmp_path, no_weight_loading):
    # transformers 5 loads such a folder with an empty tokenizer: 5 special tokens, every word [UNK]
    folder = copy_model(tiny_model_dir, tmp_path, keep={"config.json", "model.safetensors"})
    refused_model(folder, "has no tokenizer files", "tokenizer.json", "vocab.txt", "vocab.json + merges.txt",
             "spiece.model", "sentencepiece.bpe.model", "tokenizer.save_pretrained(folder)")


def test_truncated_safetensors(tiny_model_dir, tmp_path, no_weight_loading):
    folder = copy_model(tiny_model_dir, tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    refused_model(folder, "weights file model.safetensors", "is corrupt or truncated", "re-download or re-save")


@pytest.mark.parametrize("content", [b"not a safetensors file at all, just text" * 10, b"\x08" + b"\x00" * 7 + b"{}"])
def test_garbage_safetensors(tiny_model_dir, tmp_path, no_weight_loading, content):
    folder = copy_model(tiny_model_dir, tmp_path)
    (folder / "model.safetensors").write_bytes(content)
    refused_model(folder, "weights file model.safetensors", "is corrupt or truncated", "re-download or re-save")


def test_empty_weights_file(tiny_model_dir, tmp_path, no_weight_loading):
    folder = copy_model(tiny_model_dir, tmp_path)
    (folder / "model.safetensors").write_bytes(b"")
    refused_model(folder, "weights file model.safetensors", "is empty", "re-download or re-save")


def test_truncated_pickle_weights(tiny_model_dir, tmp_path, no_weight_loading):
    import torch

    folder = copy_model(tiny_model_dir, tmp_path, keep=TOKENIZER_AND_CONFIG)
    torch.save({"x": torch.zeros(64)}, folder / "pytorch_model.bin")
    data = (folder / "pytorch_model.bin").read_bytes()
    (folder / "pytorch_model.bin").write_bytes(data[: len(data) // 2])
    refused_model(folder, "weights file pytorch_model.bin", "is corrupt or truncated")


def test_weights_that_transformers_does_not_load(tiny_model_dir, tmp_path, no_weight_loading):
    folder = copy_model(tiny_model_dir, tmp_path)
    (folder / "model.safetensors").rename(folder / "weights.safetensors")
    refused_model(folder, "no weights that transformers loads", "found weights.safetensors", "model.safetensors",
             "save_pretrained(folder)")


def test_sharded_weights_with_a_missing_shard(tiny_model_dir, tmp_path):
    from transformers import AutoModel

    folder = copy_model(tiny_model_dir, tmp_path, keep=TOKENIZER_AND_CONFIG)
    AutoModel.from_pretrained(tiny_model_dir).save_pretrained(folder, max_shard_size="10KB")
    shards = sorted(folder.glob("model-*.safetensors"))
    assert len(shards) > 1 and (folder / "model.safetensors.index.json").is_file()
    check_model_source(str(folder))
    shards[-1].unlink()
    with pytest.raises(ModelError, match=f"lists shards that are not in the folder \\({shards[-1].name}\\)"):
        check_model_source(str(folder))
