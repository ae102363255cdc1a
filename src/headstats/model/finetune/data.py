"""The rows fine-tuning trains and measures on: a seeded sample of the task's train split, or of its dev split
where a task has no train split here (the rest of dev is then held out, at least :data:`MIN_HELDOUT_SHARE` of
it, and the manifest records the ids trained on so that analyses leave them out).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from headstats.errors import HeadstatsError
from headstats.inputs.glue import HF_GLUE, GlueTask, available_splits, glue_file, glue_root, load_glue
from headstats.inputs.records import Record
from headstats.model.identity import sha256_file
from headstats.model.recipe import FinetuneRecipe

#: Share of dev that must stay held out when a task trains on part of dev.
MIN_HELDOUT_SHARE = 0.2


def training_plan(
    recipe: FinetuneRecipe, gtask: GlueTask, data_root: str | Path | None
) -> tuple[list[Record], list[Record], dict[str, Any]]:
    """Training and evaluation records, and how they were chosen (for the manifest)."""
    root = glue_root(data_root)
    rng = np.random.default_rng(recipe.seed)
    splits = available_splits(gtask.name, root)
    train_split = recipe.train_split
    if train_split is None:
        train_split = "train" if "train" in splits else "dev"
    if train_split not in ("train", "dev"):
        raise HeadstatsError(f"train_split must be 'train' or 'dev', not {train_split!r}")
    if train_split == "train" and "train" not in splits:
        raise HeadstatsError(
            f"{gtask.folder} has no train split under {root}; leave train_split unset (trains on part of dev) "
            "or give a data root with the train file"
        )

    if train_split == "train":
        pool = load_glue(gtask.name, split="train", root=root)
        pool = [r for r in pool if r.label is not None]
        if recipe.train_rows is not None and recipe.train_rows < len(pool):
            keep = np.sort(rng.choice(len(pool), size=recipe.train_rows, replace=False))
            train = [pool[i] for i in keep]
        else:
            train = pool
        dev = load_glue(gtask.name, split="dev", root=root)
        evaluation = dev[: recipe.eval_rows] if recipe.eval_rows else dev
        source = "train"
    else:
        dev = load_glue(gtask.name, split="dev", root=root)
        n_train = recipe.train_rows if recipe.train_rows is not None else int(len(dev) * (1 - MIN_HELDOUT_SHARE))
        if len(dev) - n_train < max(1, math.ceil(MIN_HELDOUT_SHARE * len(dev))):
            raise HeadstatsError(
                f"train_rows={n_train} would leave less than {MIN_HELDOUT_SHARE:.0%} of {gtask.name} dev "
                f"({len(dev)} rows) held out; ask for at most {int(len(dev) * (1 - MIN_HELDOUT_SHARE))}"
            )
        order = rng.permutation(len(dev))
        train_idx = np.sort(order[:n_train])
        held_idx = np.sort(order[n_train:])
        train = [dev[i] for i in train_idx]
        held = [dev[i] for i in held_idx]
        evaluation = held[: recipe.eval_rows] if recipe.eval_rows else held
        source = "dev_holdout"
    if not train:
        raise HeadstatsError(f"no labelled training rows for {gtask.name}; check the data root")
    if not evaluation or any(r.label is None for r in evaluation):
        raise HeadstatsError(f"the {gtask.name} evaluation rows have no labels; check the dev file")

    files: dict[str, Any] = {}
    if root is not None:
        for split in sorted({train_split, "dev"}):
            path = glue_file(gtask.name, split, root)
            files[split] = {"path": str(path.resolve()), "sha256": sha256_file(path)}
    plan = {
        "data_source": "files" if root is not None else f"datasets:{HF_GLUE}",
        "data_root": str(Path(root).resolve()) if root is not None else None,
        "data_files": files,
        "train_source": source,
        "train_split": train_split,
        "eval_split": "dev",
        "eval_note": (
            "all dev rows" if source == "train" and not recipe.eval_rows
            else "first eval_rows dev rows" if source == "train"
            else "dev rows not used for training"
        ),
    }
    return train, evaluation, plan


def label_ids(records: Sequence[Record], gtask: GlueTask) -> np.ndarray:
    index = {label: i for i, label in enumerate(gtask.labels)}
    bad = sorted({r.label for r in records if r.label not in index}, key=str)
    if bad:
        raise HeadstatsError(
            f"labels {bad[:5]} are not labels of GLUE {gtask.name} ({', '.join(gtask.labels)}); check the task"
        )
    return np.array([index[r.label] for r in records], dtype=np.int64)
