"""Fine-tune a BERT-family encoder on a GLUE task with a seeded, recorded recipe, and cache the result.

The paper compares pretrained BERT with versions fine-tuned on MRPC, QQP, SST-2 and QNLI. When no
fine-tuned version of a model exists (the embedded default model has none), headstats makes one: a
sequence-classification head (``AutoModelForSequenceClassification``) trained with a plain, seeded torch
loop (AdamW, linear warm-up then linear decay, gradient clipping at 1.0, dropout as the model's config
says). The same recipe, base weights and data give the same weights, bit for bit, on the same machine and
thread count.

Training rows come from the task's ``train`` split. Where a task has no local train split (QNLI here:
only dev and test could be had), the recipe trains on a seeded part of ``dev`` and measures on the rest;
the manifest records which dev ids were used (``trained_on``) so that the analysis leaves them out (see
:func:`analysis_exclusions`): attention is analysed on inputs the model was not trained on.

A finished checkpoint folder holds::

    config.json, model.safetensors, tokenizer files   (load with headstats.model.loading.load_model(folder))
    metrics.json            dev accuracy (and F1 / MCC where GLUE reports it), majority-class baseline,
                            rows, wall time
    finetune_manifest.json  recipe, base model provenance, data files and their sha256, the ids trained on,
                            versions, cache key
    COMPLETE                written last; a folder without it is not a checkpoint

Folders are written under a temporary name and renamed into place, so a crash never leaves a half
checkpoint where a finished one is expected.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from pydantic import ValidationError

from headstats.errors import HeadstatsError
from headstats.folders import (
    CHECKPOINTS,
    WRITTEN_BY,
    check_output_folder,
    claim_output,
    default_cache_root,
    output_listing,
)
from headstats.inputs.glue import (
    HF_GLUE,
    GlueTask,
    available_splits,
    get_task,
    glue_file,
    glue_root,
    load_glue,
    tsv_rows,
)
from headstats.inputs.records import Record
from headstats.model.identity import sha256_file
from headstats.model.sources import resolve_model_path
from headstats.model.tokenizers import tokenizer_fingerprint
from headstats.model.recipe import FinetuneRecipe

#: Bumped when the training loop changes in a way that changes weights; part of the cache key.
FINETUNE_FORMAT = 1
COMPLETE_MARKER = "COMPLETE"
MANIFEST_NAME = "finetune_manifest.json"
METRICS_NAME = "metrics.json"
#: Share of dev that must stay held out when a task trains on part of dev.
MIN_HELDOUT_SHARE = 0.2
EVAL_BATCH_SIZE = 64


# ------------------------------------------------------------------------------------------------ data


def _training_plan(
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


def _label_ids(records: Sequence[Record], gtask: GlueTask) -> np.ndarray:
    index = {label: i for i, label in enumerate(gtask.labels)}
    bad = sorted({r.label for r in records if r.label not in index}, key=str)
    if bad:
        raise HeadstatsError(
            f"labels {bad[:5]} are not labels of GLUE {gtask.name} ({', '.join(gtask.labels)}); check the task"
        )
    return np.array([index[r.label] for r in records], dtype=np.int64)


# ---------------------------------------------------------------------------------------------- model


def _base_provenance(spec: str, tokenizer: Any, model: Any) -> dict[str, Any]:
    path, is_local = resolve_model_path(spec)
    from headstats.model.identity import weight_hashes  # the same hashes load_model records

    return {
        "model": spec,
        "path": path if is_local else None,
        "hub_id": None if is_local else spec,
        "model_type": model.config.model_type,
        "weights_sha256": weight_hashes(path, is_local, None),
        "tokenizer_class": type(tokenizer).__name__,
        "vocab_sha256": tokenizer_fingerprint(tokenizer),
    }


def _load_for_classification(spec: str, gtask: GlueTask, seed: int) -> tuple[Any, Any]:
    """The base model with a new classification head (seeded), through every check of ``load_model``."""
    import torch
    from transformers.utils import logging as hf_logging

    from headstats.model.loading import load_model

    torch.manual_seed(seed)  # the new classification head is initialised from this seed
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "newly initialized: classifier.*" is expected here
    try:
        loaded = load_model(spec, head="classifier", model_kwargs={
            "num_labels": gtask.num_labels,
            "id2label": dict(enumerate(gtask.labels)),
            "label2id": {label: i for i, label in enumerate(gtask.labels)},
        })
    finally:
        hf_logging.set_verbosity(verbosity)
    return loaded.tokenizer, loaded.model


def _tokenize(tokenizer: Any, records: Sequence[Record], max_length: int) -> dict[str, Any]:
    a = [r.text_a for r in records]
    b = [r.text_b for r in records] if records[0].text_b is not None else None
    return tokenizer(a, b, truncation=True, max_length=max_length, padding=True, return_tensors="pt")


def _batches(n: int, batch_size: int, total_steps: int, rng: np.random.Generator):
    """Index batches over shuffled epochs (a fresh seeded permutation per epoch), ``total_steps`` of them."""
    order = np.empty(0, dtype=np.int64)
    for _ in range(total_steps):
        if order.size < batch_size:
            order = np.concatenate([order, rng.permutation(n)])
        yield order[:batch_size]
        order = order[batch_size:]


def _train(model: Any, tokenizer: Any, train: Sequence[Record], labels: np.ndarray, recipe: FinetuneRecipe,
           *, progress: TrainingCallback) -> dict[str, Any]:
    import torch

    torch.manual_seed(recipe.seed)
    rng = np.random.default_rng(recipe.seed + 1)
    steps_per_epoch = math.ceil(len(train) / recipe.batch_size)
    total_steps = max(1, math.ceil(recipe.epochs * steps_per_epoch))
    warmup = int(recipe.warmup_ratio * total_steps)
    no_decay = ("bias", "LayerNorm.weight", "layer_norm.weight", "LayerNorm.bias")
    groups = [
        {"params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)],
         "weight_decay": recipe.weight_decay},
        {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=recipe.learning_rate)

    def schedule(step: int) -> float:  # linear warm-up, then linear decay to 0
        if step < warmup:
            return (step + 1) / (warmup + 1)
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    model.train()
    losses = []
    started = time.perf_counter()
    for step, idx in enumerate(_batches(len(train), recipe.batch_size, total_steps, rng), start=1):
        batch = _tokenize(tokenizer, [train[i] for i in idx], recipe.max_length)
        out = model(**batch, labels=torch.from_numpy(labels[idx]))
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(out.loss.detach()))
        progress(TrainingStep(step, total_steps, float(np.mean(losses[-20:])), time.perf_counter() - started))
    model.eval()
    return {"steps": total_steps, "steps_per_epoch": steps_per_epoch, "warmup_steps": warmup,
            "final_loss": float(np.mean(losses[-20:])), "first_loss": float(np.mean(losses[:20]))}


def predict(model: Any, tokenizer: Any, records: Sequence[Record], *, max_length: int,
            batch_size: int = EVAL_BATCH_SIZE) -> np.ndarray:
    """Predicted class ids, in record order (batched by length, without gradients)."""
    import torch

    lengths = [len(r.text_a) + len(r.text_b or "") for r in records]
    order = np.argsort(lengths, kind="stable")
    preds = np.empty(len(records), dtype=np.int64)
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(records), batch_size):
            idx = order[start : start + batch_size]
            batch = _tokenize(tokenizer, [records[i] for i in idx], max_length)
            preds[idx] = model(**batch).logits.argmax(-1).numpy()
    return preds


def classification_metrics(y_true: np.ndarray, y_pred: np.ndarray, *, majority_class: int,
                           num_labels: int) -> dict[str, float]:
    """Accuracy, macro F1, F1 of class 1 (binary), Matthews correlation, and the majority-class baseline.

    ``majority_baseline`` is the accuracy of always predicting ``majority_class`` (the most frequent
    training label) on these rows.
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    out = {"accuracy": float(np.mean(y_true == y_pred)),
           "majority_baseline": float(np.mean(y_true == majority_class))}
    f1s = []
    for c in range(num_labels):
        tp = np.sum((y_pred == c) & (y_true == c))
        fp = np.sum((y_pred == c) & (y_true != c))
        fn = np.sum((y_pred != c) & (y_true == c))
        f1s.append(float(2 * tp / (2 * tp + fp + fn)) if tp + fp + fn else 0.0)
    out["f1_macro"] = float(np.mean(f1s))
    if num_labels == 2:
        out["f1"] = f1s[1]
        tp, tn = np.sum((y_pred == 1) & (y_true == 1)), np.sum((y_pred == 0) & (y_true == 0))
        fp, fn = np.sum((y_pred == 1) & (y_true == 0)), np.sum((y_pred == 0) & (y_true == 1))
        denom = math.sqrt(float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))
        out["mcc"] = float((tp * tn - fp * fn) / denom) if denom else 0.0
    return out


# ------------------------------------------------------------------------------------------- progress


@dataclass(frozen=True)
class TrainingStep:
    """One optimisation step of fine-tuning, as a progress callback sees it.

    Attributes
    ----------
    step : int
        Steps done, from 1 to ``total``.
    total : int
        Steps of the whole training.
    loss : float
        Mean training loss of the last 20 steps (a smoothed curve, not one noisy batch).
    elapsed_s : float
        Seconds since the first step started.
    """

    step: int
    total: int
    loss: float
    elapsed_s: float

    @property
    def fraction(self) -> float:
        """Share of the steps done, in (0, 1]."""
        return self.step / self.total

    @property
    def remaining_s(self) -> float:
        """Seconds left at the mean pace so far: ``elapsed_s / step * (total - step)``."""
        return self.elapsed_s / self.step * (self.total - self.step)


#: Called after every optimisation step; the CLI draws a bar with it, a study writes log lines.
TrainingCallback = Callable[[TrainingStep], None]


def clock(seconds: float) -> str:
    """``seconds`` as ``m:ss`` or ``h:mm:ss``."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class TenPercentLog:
    """A :data:`TrainingCallback` that writes one line at each tenth of the steps (10 %, 20 %, ..., 100 %).

    With fewer than ten steps it writes one line per step. A line reads, for example,
    ``fine-tuning sst2-ft: step 150/1500 (10%), loss 0.642, 1:32 elapsed, about 13:48 left``.

    Parameters
    ----------
    log : callable
        Takes one line of text (a study's run log, ``print``...).
    label : str
        What is being trained, at the start of each line.
    """

    def __init__(self, log: Callable[[str], None], label: str = "fine-tuning") -> None:
        self.log = log
        self.label = label
        self._next_tenth = 1

    def __call__(self, step: TrainingStep) -> None:
        tenth = step.step * 10 // step.total
        if tenth < self._next_tenth:
            return
        self._next_tenth = tenth + 1
        self.log(f"{self.label}: step {step.step}/{step.total} ({step.fraction:.0%}), loss {step.loss:.3f}, "
                 f"{clock(step.elapsed_s)} elapsed, about {clock(step.remaining_s)} left")


def _stderr_line(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def training_callback(progress: TrainingCallback | bool | None, label: str = "fine-tuning") -> TrainingCallback:
    """The callback for a ``progress`` argument: a callable as given, True a line every 10 % on stderr
    (:class:`TenPercentLog`), False or None nothing."""
    if callable(progress):
        return progress
    if progress:
        return TenPercentLog(_stderr_line, label)
    return lambda step: None


# ------------------------------------------------------------------------------------------ estimate

#: Seconds per optimisation step of the embedded default model (6 layers, hidden size 384) on a batch of 16
#: inputs, on 2 idle CPU cores (measured: MRPC, 460 steps of up to 128 pieces, about 5 minutes). Inputs are
#: padded to the longest of their batch, so the time per step hardly follows ``max_length``.
SECONDS_PER_STEP = 0.65
#: Seconds to load the base model and write the checkpoint.
SECONDS_OVERHEAD = 10.0
_DEFAULT_SIZE = 6 * 384**2


def training_estimate(recipe: FinetuneRecipe, *, data_root: str | Path | None = None) -> tuple[int, float | None]:
    """``(steps, seconds)`` that fine-tuning ``recipe`` will take, before it starts: the steps exactly (from
    the training rows, counted in the files), the time roughly, scaled from :data:`SECONDS_PER_STEP` by the
    batch's pieces and the base model's size (``layers x hidden^2`` from its config). On a loaded machine,
    or with another number of cores, it takes longer or shorter; the seconds are None when the rows or the
    base model's size cannot be known without reading more (the ``datasets`` library, a hub model not cached).
    """
    gtask = get_task(recipe.task)
    root = glue_root(data_root)
    rows, n_eval = recipe.train_rows, recipe.eval_rows
    if root is not None:
        splits = available_splits(gtask.name, root)
        split = recipe.train_split or ("train" if "train" in splits else "dev")
        dev = tsv_rows(glue_file(gtask.name, "dev", root)) if "dev" in splits else 0
        if split in splits:
            have = tsv_rows(glue_file(gtask.name, split, root))
            if split == "dev":
                have = int(have * (1 - MIN_HELDOUT_SHARE)) if rows is None else min(rows, have)
                dev -= have
            rows = have if rows is None else min(rows, have)
        n_eval = min(n_eval or dev, dev)
    if rows is None:
        return 0, None
    steps = max(1, math.ceil(recipe.epochs * math.ceil(rows / recipe.batch_size)))
    size = _model_size(recipe.base)
    if size is None:
        return steps, None
    per_step = SECONDS_PER_STEP * recipe.batch_size / 16 * size / _DEFAULT_SIZE
    # evaluation: forward passes only, about a third of a training step's work per input
    return steps, SECONDS_OVERHEAD + steps * per_step + (n_eval or 0) * per_step / recipe.batch_size / 3


def _model_size(spec: str) -> int | None:
    """``layers x hidden^2`` of a model from its config.json (local, or in the hub cache), else None."""
    from headstats.hub import cached_hub_file

    try:
        path, is_local = resolve_model_path(spec)
        config = Path(path) / "config.json" if is_local else cached_hub_file(path, "config.json")
        data = json.loads(Path(config).read_text(encoding="utf-8")) if config else {}
    except (HeadstatsError, OSError, ValueError):
        return None
    layers, hidden = data.get("num_hidden_layers"), data.get("hidden_size")
    return int(layers) * int(hidden) ** 2 if isinstance(layers, int) and isinstance(hidden, int) else None


# ------------------------------------------------------------------------------------------ finetune


def _versions() -> dict[str, str]:
    import torch
    import transformers

    import headstats

    return {"headstats": headstats.__version__, "torch": torch.__version__,
            "transformers": transformers.__version__, "numpy": np.__version__,
            "python": sys.version.split()[0], "platform": platform.platform(),
            "torch_threads": str(torch.get_num_threads())}


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def finetune(
    recipe: FinetuneRecipe,
    *,
    out_dir: str | Path,
    data_root: str | Path | None = None,
    progress: TrainingCallback | bool = True,
    overwrite: bool = False,
    cache_key: str | None = None,
) -> Path:
    """Fine-tune ``recipe.base`` on ``recipe.task`` and write a checkpoint folder.

    Parameters
    ----------
    recipe : FinetuneRecipe
        Base model, task, epochs (may be fractional), learning rate, batch size, maximum length (longer
        inputs are truncated for training and evaluation), training rows (a seeded sample of the train
        split; None for all), ``train_split`` (None: ``train`` where it exists, else part of ``dev``),
        ``eval_rows`` (None: all evaluation rows), weight decay, warm-up ratio, seed.
    out_dir : str or Path
        The checkpoint folder to create; it must not exist unless ``overwrite``.
    data_root : str or Path, optional
        GLUE data folder; default ``$HEADSTATS_GLUE_ROOT``, else the ``datasets`` library (online).
    progress : callable or bool
        Called with a :class:`TrainingStep` after every step (the CLI draws a bar with steps, loss and time
        left; a study writes a log line every 10 %, :class:`TenPercentLog`); True writes a line every 10 % to
        stderr; False nothing.
    overwrite : bool
        Replace an existing folder (only once the new one is complete).
    cache_key : str, optional
        Recorded in the manifest (set by :func:`cached_finetune`).

    Returns
    -------
    Path
        ``out_dir``, holding the model, tokenizer, ``metrics.json``, ``finetune_manifest.json`` and
        ``COMPLETE``.
    """
    out_dir = Path(out_dir)
    out_dir = check_output_folder(out_dir, overwrite=overwrite)
    gtask = get_task(recipe.task)
    if not gtask.labels:
        raise HeadstatsError(f"GLUE {gtask.name} is a regression task; headstats fine-tunes classification tasks only")
    recipe = recipe.model_copy(update={"task": gtask.name})
    started = time.perf_counter()
    train, evaluation, plan = _training_plan(recipe, gtask, data_root)
    y_train, y_eval = _label_ids(train, gtask), _label_ids(evaluation, gtask)
    tokenizer, model = _load_for_classification(recipe.base, gtask, recipe.seed)
    provenance = _base_provenance(recipe.base, tokenizer, model)
    loaded_s = time.perf_counter()
    training = _train(model, tokenizer, train, y_train, recipe,
                      progress=training_callback(progress, f"fine-tuning {gtask.name}"))
    trained_s = time.perf_counter()
    preds = predict(model, tokenizer, evaluation, max_length=recipe.max_length)
    evaluated_s = time.perf_counter()

    counts = np.bincount(y_train, minlength=gtask.num_labels)
    metrics = {
        "task": gtask.name,
        "glue_metric": gtask.metric,
        **classification_metrics(y_eval, preds, majority_class=int(counts.argmax()), num_labels=gtask.num_labels),
        "majority_class": gtask.labels[int(counts.argmax())],
        "n_train": len(train),
        "n_eval": len(evaluation),
        "eval_split": plan["eval_split"],
        "eval_rows": plan["eval_note"],
        "train_label_counts": {gtask.labels[i]: int(c) for i, c in enumerate(counts)},
        "eval_label_counts": dict(Counter(r.label for r in evaluation)),
        **training,
        "wall_time_s": {"load": round(loaded_s - started, 2), "train": round(trained_s - loaded_s, 2),
                        "eval": round(evaluated_s - trained_s, 2), "total": round(evaluated_s - started, 2)},
    }
    train_ids = [r.sentence_id for r in train]
    manifest = {
        "kind": "headstats finetune",
        "format": FINETUNE_FORMAT,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "recipe": recipe.model_dump(mode="json"),
        "task": gtask.name,
        "labels": list(gtask.labels),
        "base_model": provenance,
        **plan,
        "trained_on": {
            "task": gtask.name,
            "split": plan["train_split"],
            "n": len(train_ids),
            "ids_sha256": hashlib.sha256("\n".join(train_ids).encode()).hexdigest(),
            "ids": train_ids,
        },
        # the same, keyed "task:split" (canonical task name, as headstats.inputs.glue.get_task gives it)
        "train_ids_by_split": {f"{gtask.name}:{plan['train_split']}": train_ids},
        "note": (
            f"{gtask.folder} has no train split here: trained on {len(train)} seeded dev rows, measured on "
            f"the other {len(evaluation)}; analyses of {gtask.name} dev must leave the trained ids out"
            if plan["train_source"] == "dev_holdout" else
            f"trained on {len(train)} rows of {gtask.folder} train; measured on {gtask.folder} dev"
        ),
        "metrics": {k: metrics[k] for k in ("accuracy", "majority_baseline", "f1", "mcc") if k in metrics},
        "cache_key": cache_key,
        "versions": _versions(),
        "wall_time_s": metrics["wall_time_s"]["total"],
    }

    with claim_output(out_dir, overwrite=overwrite) as claim:
        tmp = claim.staging
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        _write_json(tmp / METRICS_NAME, metrics)
        (tmp / COMPLETE_MARKER).write_text(f"{manifest['created']}\n", encoding="utf-8")
        _write_json(tmp / MANIFEST_NAME, {"written_by": WRITTEN_BY, **manifest,
                                          **output_listing(tmp, manifest_name=MANIFEST_NAME)})
        claim.publish()
    return out_dir


# --------------------------------------------------------------------------------------------- cache


def is_complete(folder: str | Path) -> bool:
    """True when ``folder`` is a finished checkpoint (its ``COMPLETE`` marker exists)."""
    folder = Path(folder)
    return (folder / COMPLETE_MARKER).is_file() and (folder / MANIFEST_NAME).is_file()


def finetune_cache_key(recipe: FinetuneRecipe, *, data_root: str | Path | None = None) -> str:
    """sha256 of the recipe (canonical JSON), the base model's weight hashes, the data files' sha256 and
    :data:`FINETUNE_FORMAT`. A change of any of them makes a new checkpoint."""
    gtask = get_task(recipe.task)
    recipe = recipe.model_copy(update={"task": gtask.name})
    path, is_local = resolve_model_path(recipe.base)
    from headstats.model.identity import weight_hashes

    weights = weight_hashes(path, is_local, None) if is_local else {"hub_id": recipe.base}
    root = glue_root(data_root)
    data: dict[str, str] = {}
    if root is not None:
        for split in available_splits(gtask.name, root):
            if split in ("train", "dev"):
                data[split] = sha256_file(glue_file(gtask.name, split, root))
    else:
        data["datasets"] = HF_GLUE
    payload = {"recipe": recipe.model_dump(mode="json"), "base_weights": weights, "data": data,
               "format": FINETUNE_FORMAT}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", Path(text).name if os.sep in text else text).strip("-")[:40] or "model"


def checkpoint_folder(recipe: FinetuneRecipe, *, cache_dir: str | Path, data_root: str | Path | None = None) -> Path:
    """Where :func:`cached_finetune` keeps the checkpoint of ``recipe``:
    ``<cache_dir>/checkpoints/<task>-<base>-<key[:16]>`` (the key: :func:`finetune_cache_key`)."""
    key = finetune_cache_key(recipe, data_root=data_root)
    return Path(cache_dir) / CHECKPOINTS / f"{get_task(recipe.task).name}-{_slug(recipe.base)}-{key[:16]}"


def cached_finetune(
    recipe: FinetuneRecipe,
    *,
    cache_dir: str | Path | None = None,
    data_root: str | Path | None = None,
    progress: TrainingCallback | bool = True,
) -> Path:
    """The checkpoint of ``recipe``: reused from the cache when complete, else trained and cached.

    The folder is :func:`checkpoint_folder` under ``cache_dir``, the cache root (default: headstats' one
    root, :func:`headstats.folders.default_cache_root`, where the state cache lives too). A folder without its
    ``COMPLETE`` marker is discarded and rebuilt. A complete one is used only when every file still has the size
    and sha256 its manifest recorded when it was written (a cache on a shared file system may be written by
    others): else the run stops with one line saying which file changed.
    """
    cache_dir = default_cache_root() if cache_dir is None else cache_dir
    key = finetune_cache_key(recipe, data_root=data_root)
    folder = checkpoint_folder(recipe, cache_dir=cache_dir, data_root=data_root)
    if is_complete(folder):
        _check_unchanged(folder)
        os.utime(folder / COMPLETE_MARKER)  # its last use, for `headstats cache prune`
        return folder
    return finetune(recipe, out_dir=folder, data_root=data_root, progress=progress, overwrite=True, cache_key=key)


def _check_unchanged(folder: Path) -> None:
    """Refuse a cached checkpoint whose files are not those recorded (size and sha256) when it was written."""
    from headstats.folders import changed_outputs, manifest_of

    manifest = manifest_of(folder)
    changed = changed_outputs(folder, manifest) if manifest is not None else ["finetune_manifest.json"]
    recorded = isinstance((manifest or {}).get("output_sha256"), dict)
    if changed or not recorded:
        shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "") \
            if changed else "its manifest records no checksums"
        raise HeadstatsError(f"the cached checkpoint {str(folder)!r} is not as headstats wrote it ({shown}); it is "
                             "not used: delete that folder (headstats never deletes a changed one) and run again")


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The ``finetune_manifest.json`` of a checkpoint folder."""
    path = Path(folder) / MANIFEST_NAME
    if not path.is_file():
        raise HeadstatsError(f"{str(folder)!r} has no {MANIFEST_NAME}; is it a checkpoint made by headstats finetune?")
    return json.loads(path.read_text(encoding="utf-8"))


def finetune_train_ids(folder: str | Path) -> dict[str, Any]:
    """``{"task", "split", "ids"}``: the rows a headstats checkpoint was trained on."""
    trained = read_manifest(folder)["trained_on"]
    return {"task": trained["task"], "split": trained["split"], "ids": list(trained["ids"])}


def analysis_exclusions(folder: str | Path | None, task: str, split: str) -> set[str]:
    """Sentence ids of ``task``/``split`` that the checkpoint in ``folder`` was trained on (empty if none).

    Pass the union over the compared models as ``exclude_ids`` to :func:`headstats.inputs.glue.load_glue`
    when ``GlueSource.exclude_finetune_rows`` is set. Folders that are not headstats checkpoints give an
    empty set.
    """
    if folder is None or not (Path(folder) / MANIFEST_NAME).is_file():
        return set()
    trained = finetune_train_ids(folder)
    if trained["task"] != get_task(task).name:
        return set()
    split = "dev" if split in ("validation", "dev") else split
    return set(trained["ids"]) if trained["split"] == split else set()


# ---------------------------------------------------------------------------------------------- CLI


def finetune_command(
    model: str = "default",
    task: str = "sst2",
    out: str | Path | None = None,
    epochs: float | None = None,
    lr: float | None = None,
    batch_size: int | None = None,
    max_length: int | None = None,
    train_rows: int | None | str = "recipe",
    seed: int | None = None,
    data_root: str | Path | None = None,
    *,
    cache_dir: str | Path | None = None,
    overwrite: bool = False,
    progress: TrainingCallback | bool = True,
) -> tuple[Path, dict[str, Any]]:
    """What ``headstats finetune`` does: build the recipe, train, and return ``(folder, metrics)``.

    Options left at None (``train_rows`` at ``"recipe"``; None there means every row) take the task's values of
    headstats' one recipe (:func:`headstats.model.recipe.task_recipe`), as a protocol's ``finetune:`` entry
    does, so both make the same checkpoint. With ``out`` the checkpoint is written there; without it, it goes
    to (or is reused from) ``<cache root>/checkpoints``, where a protocol's run looks for it.
    """
    recipe = build_recipe(model, task, epochs=epochs, learning_rate=lr, batch_size=batch_size,
                          max_length=max_length, train_rows=train_rows, seed=seed)
    return finetune_recipe(recipe, out, data_root, cache_dir=cache_dir, overwrite=overwrite, progress=progress)


def finetune_recipe(recipe: FinetuneRecipe, out: str | Path | None = None, data_root: str | Path | None = None, *,
                    cache_dir: str | Path | None = None, overwrite: bool = False,
                    progress: TrainingCallback | bool = True) -> tuple[Path, dict[str, Any]]:
    """Train ``recipe`` into ``out``, or (without ``out``) reuse or build its checkpoint under
    ``<cache_dir>/checkpoints`` as a protocol's run does; returns ``(folder, metrics)``."""
    if out is None:
        folder = cached_finetune(recipe, cache_dir=cache_dir, data_root=data_root, progress=progress)
    else:
        folder = finetune(recipe, out_dir=out, data_root=data_root, progress=progress, overwrite=overwrite)
    return folder, json.loads((folder / METRICS_NAME).read_text(encoding="utf-8"))


def build_recipe(model: str, task: str, *, train_rows: int | None | str = "recipe", **given: Any) -> FinetuneRecipe:
    """The :class:`FinetuneRecipe` of ``headstats finetune``'s options: those given (not None) over the task's
    recipe; ``train_rows`` ``"recipe"`` takes the recipe's, None every row. A bad value is one line."""
    values = {k: v for k, v in given.items() if v is not None}
    if train_rows != "recipe":
        values["train_rows"] = train_rows
    try:
        return FinetuneRecipe(base=model, task=task, **values)
    except ValidationError as exc:  # one line for the CLI
        first = exc.errors()[0]
        raise HeadstatsError(f"invalid fine-tuning option {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
