"""The rows fine-tuning trains and measures on: a task without a train split trains on part of dev."""

from __future__ import annotations

import json

import pytest

from headstats.errors import HeadstatsError
from headstats.model.finetune import (
    analysis_exclusions,
    finetune,
    finetune_train_ids,
)
from finetune.conftest import small_recipe as recipe


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
