"""validate means run: the plan it prints (fine-tunings with steps and time, data sets with counts), an earlier
run's output folder as a note, and run's own refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from headstats.config.protocol import load_protocol
from headstats.errors import OutputError
from headstats.model.finetune import SECONDS_OVERHEAD, SECONDS_PER_STEP, training_estimate
from headstats.model.recipe import FinetuneRecipe
from headstats.config.protocol import DatasetSpec
from headstats.study.preview import dataset_line, run_plan, validate_run

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def glue(tmp_path) -> Path:
    root = tmp_path / "glue"
    (root / "SST-2").mkdir(parents=True)
    (root / "SST-2" / "train.tsv").write_text("sentence\tlabel\n" + "a good film .\t1\n" * 50)
    (root / "SST-2" / "dev.tsv").write_text("sentence\tlabel\n" + "a bad film .\t0\n" * 12)
    (root / "QNLI").mkdir()
    (root / "QNLI" / "dev.tsv").write_text("index\tquestion\tsentence\tlabel\n" + "".join(
        f"{i}\twho ?\tthe dog ran .\tentailment\n" for i in range(20)))
    return root


def write(tmp_path: Path, raw: dict) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_plan_names_fine_tunings_models_and_counted_inputs(tmp_path, glue, tiny_model_dir):
    raw = {"name": "p", "data_root": str(glue), "models": [
        {"name": "base", "path": str(tiny_model_dir)},
        {"name": "sst2-ft", "finetune": {"base": str(tiny_model_dir), "task": "sst2", "train_rows": 40}},
        {"name": "qnli-ft", "finetune": {"base": str(tiny_model_dir), "task": "qnli", "train_rows": None}}],
        "datasets": [{"name": "single", "path": str(REPO / "data" / "demo" / "sentences.txt"), "limit": 30},
                     {"name": "pairs", "path": str(REPO / "data" / "demo" / "pairs.txt")},
                     {"name": "ud", "path": str(REPO / "data" / "demo" / "mini.conllu")},
                     {"name": "sst2", "glue": {"task": "sst2", "n": 5}},
                     {"name": "qnli", "glue": {"task": "qnli"}}]}
    protocol = load_protocol(write(tmp_path, raw))
    lines = run_plan(protocol, cache_dir=tmp_path / "cache")
    assert lines[0].startswith("fine-tunes 2 model(s) first (about ")
    # 40 rows in batches of 16: 3 steps; QNLI trains on 80 % of its 20 dev rows: 16 rows, 1 step
    assert lines[1].startswith(f"  sst2-ft: {tiny_model_dir} on sst2, 3 steps (batch 16, lr 0.0001), about ")
    assert lines[2].startswith(f"  qnli-ft: {tiny_model_dir} on qnli, 1 steps (batch 16, lr 0.0001), about ")
    assert lines[3] == f"loads 1 model(s): base ({tiny_model_dir})"
    pairs = sum(1 for line in (REPO / "data" / "demo" / "pairs.txt").read_text().splitlines() if line.strip())
    counted = {line.split(":")[0].strip(): line.split(": ", 1)[1] for line in lines[5:]}
    assert counted["single"].startswith("30 inputs from ")
    assert counted["pairs"].startswith(f"{pairs} pairs from ")
    sentences = (REPO / "data" / "demo" / "mini.conllu").read_text().count("# sent_id")
    assert counted["ud"].startswith(f"{sentences} inputs (gold parses) from ")
    assert counted["sst2"] == "5 inputs of GLUE sst2 dev (12 in the file)"
    assert counted["qnli"] == "20 inputs of GLUE qnli dev less the rows the fine-tuned models trained on (20 in the file)"


def test_training_estimate_counts_steps_and_scales_time(glue, tiny_model_dir):
    config = json.loads((tiny_model_dir / "config.json").read_text())
    size = config["num_hidden_layers"] * config["hidden_size"] ** 2
    steps, seconds = training_estimate(FinetuneRecipe(base=str(tiny_model_dir), task="sst2", train_rows=None,
                                                      epochs=2, batch_size=8), data_root=glue)
    assert steps == 2 * math.ceil(50 / 8)
    per_step = SECONDS_PER_STEP * 8 / 16 * size / (6 * 384**2)
    assert seconds == pytest.approx(SECONDS_OVERHEAD + steps * per_step + 12 * per_step / 8 / 3)


def test_existing_run_folder_validates_with_a_note(tmp_path, tiny_model_dir):
    from headstats.study.storage import write_manifest

    raw = {"name": "p", "models": [str(tiny_model_dir)],
           "datasets": [{"name": "d", "path": str(REPO / "data" / "demo" / "sentences.txt")}],
           "output": str(tmp_path / "runs" / "p")}
    protocol = load_protocol(write(tmp_path, raw))
    assert validate_run(protocol).notes == []
    out = tmp_path / "runs" / "p"
    out.mkdir(parents=True)
    (out / "tests.csv").write_text("x\n")
    write_manifest(out, {})  # as a run writes it: every file with its size and sha256
    found = validate_run(protocol)
    assert found.out == out.resolve()
    assert found.notes == [f"{out.resolve()} holds an earlier run: run needs --overwrite to replace it, or another --out"]
    assert validate_run(protocol, overwrite=True).notes == []
    (out / "mine.txt").write_text("not headstats'")  # run --overwrite would refuse it: so does validate
    with pytest.raises(OutputError):
        validate_run(protocol)


def test_a_gap_file_is_words_without_a_parse(tmp_path):
    """GAP's reader splits words and gives no arcs: validate must not call it parsed (issue 34)."""
    from conftest import GAP

    path = tmp_path / "g.tsv"
    path.write_text(GAP)
    line = dataset_line(DatasetSpec(name="gap", path=str(path), format="gap"), None)
    assert line == f"1 inputs (words, no parse) from {path}"
