"""Fine-tuning a tiny random BERT: files, manifest, metrics, versions, seed determinism."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headstats.model.finetune import (
    COMPLETE_MARKER,
    analysis_exclusions,
    classification_metrics,
    finetune,
    is_complete,
)
from finetune.conftest import small_recipe as recipe


def test_finetune_writes_checkpoint_metrics_and_manifest(tiny_model_dir, tiny_glue, tmp_path):
    out = finetune(recipe(base=str(tiny_model_dir)), out_dir=tmp_path / "ft", data_root=tiny_glue, progress=False)
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "metrics.json", "finetune_manifest.json", COMPLETE_MARKER} <= names
    assert is_complete(out)
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]  # no temporary folder left

    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n_train"] == 24 and metrics["n_eval"] == 12 and metrics["steps"] == 3
    assert 0 <= metrics["accuracy"] <= 1 and 0 <= metrics["majority_baseline"] <= 1
    assert {"f1", "mcc", "wall_time_s"} <= set(metrics)

    manifest = json.loads((out / "finetune_manifest.json").read_text())
    assert manifest["recipe"]["train_rows"] == 24 and manifest["train_source"] == "train"
    assert manifest["base_model"]["weights_sha256"]
    assert set(manifest["data_files"]) == {"train", "dev"}
    assert len(manifest["data_files"]["train"]["sha256"]) == 64
    assert len(manifest["trained_on"]["ids"]) == 24 and manifest["trained_on"]["split"] == "train"
    # one version source: the installed metadata, as a run's manifest and the report record them
    from importlib import metadata

    import headstats
    from headstats.provenance import package_versions

    assert manifest["versions"]["headstats"] == metadata.version("headstats") == headstats.__version__
    assert {k: manifest["versions"][k] for k in package_versions()} == package_versions()
    # analysing SST-2 dev excludes nothing: the model never saw dev
    assert analysis_exclusions(out, "sst2", "dev") == set()

    from headstats.model.loading import load_model

    loaded = load_model(str(out), head="classifier")
    assert loaded.model.config.num_labels == 2 and loaded.model.config.id2label[1] == "1"


def test_same_seed_same_weights_other_seed_differs(tiny_model_dir, tiny_glue, tmp_path):
    from safetensors.torch import load_file

    runs = [finetune(recipe(base=str(tiny_model_dir), seed=s), out_dir=tmp_path / f"ft{i}", data_root=tiny_glue,
                     progress=False) for i, s in enumerate((3, 3, 4))]
    w = [load_file(str(r / "model.safetensors")) for r in runs]
    assert w[0].keys() == w[1].keys()
    assert all((w[0][k] == w[1][k]).all() for k in w[0])
    assert any(not (w[0][k] == w[2][k]).all() for k in w[0])


def test_classification_metrics_by_hand():
    m = classification_metrics(np.array([1, 1, 0, 0]), np.array([1, 0, 0, 0]), majority_class=1, num_labels=2)
    assert m["accuracy"] == 0.75 and m["majority_baseline"] == 0.5
    assert m["f1"] == pytest.approx(2 / 3)  # tp=1, fp=0, fn=1
    assert m["mcc"] == pytest.approx((1 * 2 - 0) / np.sqrt(1 * 2 * 3 * 2))
