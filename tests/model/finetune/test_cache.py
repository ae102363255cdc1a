"""Checkpoints under the cache root: reuse, rebuild, one recipe and one folder for the command and a protocol."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headstats.errors import HeadstatsError
from headstats.model.finetune import (
    COMPLETE_MARKER,
    cached_finetune,
    finetune,
    finetune_cache_key,
    finetune_recipe,
    is_complete,
)
from headstats.model.recipe import FinetuneRecipe
from finetune.conftest import small_recipe as recipe


def test_cache_reuses_complete_and_rebuilds_incomplete(tiny_model_dir, tiny_glue, tmp_path):
    r = recipe(base=str(tiny_model_dir))
    first = cached_finetune(r, cache_dir=tmp_path / "cache", data_root=tiny_glue, progress=False)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    again = cached_finetune(r, cache_dir=tmp_path / "cache", data_root=tiny_glue, progress=False)
    assert again == first and (again / "model.safetensors").stat().st_mtime_ns == stamp
    assert json.loads((first / "finetune_manifest.json").read_text())["cache_key"] == finetune_cache_key(
        r, data_root=tiny_glue)
    # another recipe, another folder
    other = cached_finetune(recipe(base=str(tiny_model_dir), seed=9), cache_dir=tmp_path / "cache",
                            data_root=tiny_glue, progress=False)
    assert other != first
    # a folder without its COMPLETE marker is rebuilt
    (first / COMPLETE_MARKER).unlink()
    rebuilt = cached_finetune(r, cache_dir=tmp_path / "cache", data_root=tiny_glue, progress=False)
    assert rebuilt == first and is_complete(rebuilt)
    # a checkpoint whose weights changed since headstats wrote them (a shared cache) is refused in one line
    weights = rebuilt / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(HeadstatsError, match=r"not as headstats wrote it \(model.safetensors\)") as refused:
        cached_finetune(r, cache_dir=tmp_path / "cache", data_root=tiny_glue, progress=False)
    assert "\n" not in str(refused.value) and weights.read_bytes() == bytes(data)


def test_finetune_recipe_writes_the_folder_once_and_refuses_a_task_it_cannot_train(tiny_model_dir, tiny_glue,
                                                                                   tmp_path):
    r = recipe(base=str(tiny_model_dir), task="SST-2", epochs=0.5, learning_rate=1e-3, batch_size=8,
               max_length=16, train_rows=16, seed=1)
    folder, metrics = finetune_recipe(r, tmp_path / "cmd", tiny_glue, progress=False)
    assert metrics["steps"] == 1 and is_complete(folder)
    with pytest.raises(HeadstatsError, match="exists"):
        finetune_recipe(r, tmp_path / "cmd", tiny_glue, progress=False)
    with pytest.raises(HeadstatsError, match="regression"):
        finetune(recipe(base=str(tiny_model_dir), task="stsb"), out_dir=tmp_path / "s", data_root=tiny_glue)


def test_command_and_protocol_make_one_checkpoint_under_the_cache_root(tiny_model_dir, tiny_glue, tmp_path):
    """`headstats finetune --task sst2` and a protocol's `finetune: {task: sst2}`: the same recipe, the same
    cache key, one checkpoint under $HEADSTATS_CACHE_DIR/checkpoints that the run reuses unchanged."""
    import os

    from headstats.config.protocol import load_protocol
    from headstats.model.identity import sha256_file
    from headstats.study.models import build_models

    root = Path(os.environ["HEADSTATS_CACHE_DIR"])
    small = {"train_rows": 24, "max_length": 16, "batch_size": 8}  # both sides: the same small overrides
    folder, _ = finetune_recipe(FinetuneRecipe(base=str(tiny_model_dir), task="sst2", **small), None, tiny_glue,
                                progress=False)
    assert folder.parent == root / "checkpoints" and is_complete(folder)
    weights = sha256_file(folder / "model.safetensors")
    (tmp_path / "p.yaml").write_text(json.dumps({
        "name": "p", "data_root": str(tiny_glue), "datasets": [{"name": "s", "glue": {"task": "sst2"}}],
        "models": [{"name": "ft", "finetune": {"base": str(tiny_model_dir), "task": "sst2", **small}}]}))
    sources, finetuned = build_models(load_protocol(tmp_path / "p.yaml"), log=lambda line: None)
    assert sources["ft"] == str(folder)
    assert sha256_file(Path(sources["ft"]) / "model.safetensors") == weights
    manifest = json.loads((folder / "finetune_manifest.json").read_text())
    assert finetuned["ft"]["recipe"] == manifest["recipe"]


def test_the_finetune_command_with_no_options_is_the_protocols_recipe(tiny_model_dir, tiny_glue, tmp_path):
    """`headstats finetune --task sst2` with every recipe option left out, and a protocol's
    `finetune: {base, task: sst2}`: one recipe (model/recipe.py), one checkpoint, the same weights' sha256,
    under the one cache root."""
    import os

    from typer.testing import CliRunner

    from headstats.cli.main import app
    from headstats.config.protocol import load_protocol
    from headstats.model.identity import sha256_file
    from headstats.model.recipe import task_recipe
    from headstats.study.models import build_models

    root = Path(os.environ["HEADSTATS_CACHE_DIR"])
    result = CliRunner().invoke(app, ["finetune", "--model", str(tiny_model_dir), "--task", "sst2",
                                      "--data-root", str(tiny_glue), "--quiet"])
    assert result.exit_code == 0, result.output
    folder = Path(result.output.split("checkpoint: ")[1].split(" (")[0].strip())
    assert folder.parent == root / "checkpoints" and is_complete(folder)
    manifest = json.loads((folder / "finetune_manifest.json").read_text())
    recipe = task_recipe("sst2")
    assert (manifest["recipe"]["learning_rate"], manifest["recipe"]["max_length"]) == (recipe["learning_rate"], 64)
    (tmp_path / "p.yaml").write_text(json.dumps({
        "name": "p", "data_root": str(tiny_glue), "datasets": [{"name": "s", "glue": {"task": "sst2"}}],
        "models": [{"name": "ft", "finetune": {"base": str(tiny_model_dir), "task": "sst2"}}]}))
    sources, finetuned = build_models(load_protocol(tmp_path / "p.yaml"), log=lambda line: None)
    assert sources["ft"] == str(folder) and finetuned["ft"]["recipe"] == manifest["recipe"]  # reused, not retrained
    # trained afresh from the protocol, in another cache root: the same weights, byte for byte
    again, _ = build_models(load_protocol(tmp_path / "p.yaml"), log=lambda line: None, cache_dir=tmp_path / "other")
    assert Path(again["ft"]).parent == tmp_path / "other" / "checkpoints"
    assert Path(again["ft"]).name == folder.name  # the same cache key
    assert sha256_file(Path(again["ft"]) / "model.safetensors") == sha256_file(folder / "model.safetensors")
