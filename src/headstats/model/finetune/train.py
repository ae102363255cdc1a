"""The training loop: the base model with a new, seeded classification head, AdamW with linear warm-up and
decay, the evaluation on held-out rows, and the checkpoint folder written atomically (see
:mod:`headstats.model.finetune` for what a folder holds)."""

from __future__ import annotations

import hashlib
import json
import math
import platform
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from headstats.errors import HeadstatsError
from headstats.folders import WRITTEN_BY, check_output_folder, claim_output, output_listing
from headstats.inputs.glue import GlueTask, get_task
from headstats.inputs.records import Record
from headstats.model.finetune.data import label_ids, training_plan
from headstats.model.finetune.progress import TrainingCallback, TrainingStep, training_callback
from headstats.model.recipe import FinetuneRecipe
from headstats.model.sources import resolve_model_path
from headstats.model.tokenizers import tokenizer_fingerprint
from headstats.provenance import package_versions

#: Bumped when the training loop changes in a way that changes weights; part of the cache key.
FINETUNE_FORMAT = 1
COMPLETE_MARKER = "COMPLETE"
MANIFEST_NAME = "finetune_manifest.json"
METRICS_NAME = "metrics.json"
EVAL_BATCH_SIZE = 64


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


def _versions() -> dict[str, str | None]:
    """The installed versions of the packages that shape the weights (:func:`headstats.provenance.package_versions`,
    the one source of a run's manifest and the report too), the platform and torch's thread count (the loop is
    bit for bit reproducible on one machine and thread count)."""
    import torch

    return {**package_versions(), "platform": platform.platform(), "torch_threads": str(torch.get_num_threads())}


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
    train, evaluation, plan = training_plan(recipe, gtask, data_root)
    y_train, y_eval = label_ids(train, gtask), label_ids(evaluation, gtask)
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
