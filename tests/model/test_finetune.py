"""Fine-tuning a tiny random BERT: files, manifest, metrics, dev-holdout, cache reuse, seed determinism."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from headstats.errors import HeadstatsError
from headstats.model.finetune import (
    COMPLETE_MARKER,
    analysis_exclusions,
    cached_finetune,
    classification_metrics,
    finetune,
    finetune_cache_key,
    finetune_command,
    finetune_train_ids,
    is_complete,
)
from headstats.config.protocol import FinetuneRecipe

WORDS_POS = ["good", "happy", "new", "big"]
WORDS_NEG = ["bad", "old", "small", "red"]


@pytest.fixture
def tiny_glue(tmp_path) -> Path:
    """SST-2 with train and dev, QNLI with dev only (as in the shared data), in the tiny vocabulary."""
    rng = np.random.default_rng(0)
    root = tmp_path / "glue"

    def sst_rows(n):
        rows = []
        for _ in range(n):
            label = int(rng.integers(2))
            word = rng.choice(WORDS_POS if label else WORDS_NEG)
            rows.append(f"the cat is very {word} .\t{label}\n")
        return "sentence\tlabel\n" + "".join(rows)

    (root / "SST-2").mkdir(parents=True)
    (root / "SST-2" / "train.tsv").write_text(sst_rows(40))
    (root / "SST-2" / "dev.tsv").write_text(sst_rows(12))
    (root / "QNLI").mkdir()
    (root / "QNLI" / "dev.tsv").write_text("index\tquestion\tsentence\tlabel\n" + "".join(
        f"{i}\tthe dog ran ?\tthe dog ran quickly .\t{'entailment' if i % 2 else 'not_entailment'}\n"
        for i in range(20)))
    return root


def recipe(**kw) -> FinetuneRecipe:
    base = dict(task="sst2", epochs=1, batch_size=8, max_length=16, train_rows=24, learning_rate=1e-3, seed=0)
    base.update(kw)
    return FinetuneRecipe(**base)


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
    assert {"torch", "transformers", "headstats"} <= set(manifest["versions"])
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


def test_task_without_train_split_trains_on_part_of_dev(tiny_model_dir, tiny_glue, tmp_path):
    out = finetune(recipe(base=str(tiny_model_dir), task="qnli", train_rows=12), out_dir=tmp_path / "q",
                   data_root=tiny_glue, progress=False)
    manifest = json.loads((out / "finetune_manifest.json").read_text())
    assert manifest["train_source"] == "dev_holdout" and "no train split" in manifest["note"]
    trained = finetune_train_ids(out)
    assert trained["split"] == "dev" and len(trained["ids"]) == 12
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n_eval"] == 8
    excluded = analysis_exclusions(out, "qnli", "dev")
    assert excluded == set(trained["ids"])
    assert analysis_exclusions(out, "qnli", "test") == set()
    from headstats.inputs.glue import load_glue

    held = load_glue("qnli", root=tiny_glue, exclude_ids=excluded)
    assert len(held) == 8 and not {r.sentence_id for r in held} & excluded
    with pytest.raises(HeadstatsError, match="held out"):
        finetune(recipe(base=str(tiny_model_dir), task="qnli", train_rows=19), out_dir=tmp_path / "q2",
                 data_root=tiny_glue, progress=False)


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


def test_command_and_errors(tiny_model_dir, tiny_glue, tmp_path):
    folder, metrics = finetune_command(str(tiny_model_dir), "SST-2", tmp_path / "cmd", epochs=0.5, lr=1e-3,
                                       batch_size=8, max_length=16, train_rows=16, seed=1, data_root=tiny_glue,
                                       progress=False)
    assert metrics["steps"] == 1 and is_complete(folder)
    with pytest.raises(HeadstatsError, match="exists"):
        finetune_command(str(tiny_model_dir), "sst2", tmp_path / "cmd", data_root=tiny_glue, progress=False)
    with pytest.raises(HeadstatsError, match="invalid fine-tuning option"):
        finetune_command(str(tiny_model_dir), "sst2", tmp_path / "x", batch_size=0, data_root=tiny_glue)
    with pytest.raises(HeadstatsError, match="regression"):
        finetune(recipe(base=str(tiny_model_dir), task="stsb"), out_dir=tmp_path / "s", data_root=tiny_glue)


def test_classification_metrics_by_hand():
    m = classification_metrics(np.array([1, 1, 0, 0]), np.array([1, 0, 0, 0]), majority_class=1, num_labels=2)
    assert m["accuracy"] == 0.75 and m["majority_baseline"] == 0.5
    assert m["f1"] == pytest.approx(2 / 3)  # tp=1, fp=0, fn=1
    assert m["mcc"] == pytest.approx((1 * 2 - 0) / np.sqrt(1 * 2 * 3 * 2))


# ------------------------------------------------------------------------------------------- progress


def test_progress_callback_sees_every_step_with_loss_and_time(tiny_model_dir, tiny_glue, tmp_path):
    from headstats.model.finetune import TrainingStep

    seen: list[TrainingStep] = []
    # 24 rows, batch 8, 2 epochs: 6 steps
    finetune(recipe(base=str(tiny_model_dir), epochs=2), out_dir=tmp_path / "ft", data_root=tiny_glue,
             progress=seen.append)
    assert [s.step for s in seen] == [1, 2, 3, 4, 5, 6] and {s.total for s in seen} == {6}
    assert all(np.isfinite(s.loss) and s.loss > 0 for s in seen)
    assert all(b.elapsed_s >= a.elapsed_s for a, b in zip(seen, seen[1:]))
    metrics = json.loads((tmp_path / "ft" / "metrics.json").read_text())
    assert seen[-1].loss == pytest.approx(metrics["final_loss"])  # the same smoothed loss (last 20 steps)
    assert seen[-1].remaining_s == 0


def test_ten_percent_log_writes_a_line_at_each_tenth():
    from headstats.model.finetune import TenPercentLog, TrainingStep, clock

    lines: list[str] = []
    log = TenPercentLog(lines.append, "fine-tuning sst2-ft")
    for step in range(1, 26):  # 25 steps: tenths are crossed at steps 3, 5, 8, 10, 13, 15, 18, 20, 23, 25
        log(TrainingStep(step, 25, loss=1.0 / step, elapsed_s=2.0 * step))
    assert [int(line.split("step ")[1].split("/")[0]) for line in lines] == [3, 5, 8, 10, 13, 15, 18, 20, 23, 25]
    assert lines[0] == "fine-tuning sst2-ft: step 3/25 (12%), loss 0.333, 0:06 elapsed, about 0:44 left"
    assert lines[-1].endswith("(100%), loss 0.040, 0:50 elapsed, about 0:00 left")
    few: list[str] = []
    short = TenPercentLog(few.append)
    for step in (1, 2, 3):
        short(TrainingStep(step, 3, loss=0.5, elapsed_s=1.0))
    assert len(few) == 3  # fewer than ten steps: a line each
    assert clock(3725) == "1:02:05" and clock(59.6) == "1:00"


def test_command_and_protocol_make_one_checkpoint_under_the_cache_root(tiny_model_dir, tiny_glue, tmp_path):
    """`headstats finetune --task sst2` and a protocol's `finetune: {task: sst2}`: the same recipe, the same
    cache key, one checkpoint under $HEADSTATS_CACHE_DIR/checkpoints that the run reuses unchanged."""
    import os

    from headstats.config.protocol import load_protocol
    from headstats.model.identity import sha256_file
    from headstats.study.models import build_models

    root = Path(os.environ["HEADSTATS_CACHE_DIR"])
    small = {"train_rows": 24, "max_length": 16, "batch_size": 8}  # both sides: the same small overrides
    folder, _ = finetune_command(str(tiny_model_dir), "sst2", None, batch_size=8, max_length=16, train_rows=24,
                                 data_root=tiny_glue, progress=False)
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
