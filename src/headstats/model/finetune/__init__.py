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

The package's modules: :mod:`~headstats.model.finetune.data` (the rows trained and measured on),
:mod:`~headstats.model.finetune.train` (the loop and the folder), :mod:`~headstats.model.finetune.cache` (the
checkpoints kept under the cache root, and the rows to leave out of an analysis) and
:mod:`~headstats.model.finetune.progress` (the per-step callback and the time estimate).
"""

from __future__ import annotations

from headstats.model.finetune.cache import (
    analysis_exclusions,
    cached_finetune,
    checkpoint_folder,
    finetune_cache_key,
    finetune_recipe,
    finetune_train_ids,
    is_complete,
    read_manifest,
)
from headstats.model.finetune.data import MIN_HELDOUT_SHARE, label_ids, training_plan
from headstats.model.finetune.progress import (
    SECONDS_OVERHEAD,
    SECONDS_PER_STEP,
    TenPercentLog,
    TrainingCallback,
    TrainingStep,
    clock,
    training_callback,
    training_estimate,
)
from headstats.model.finetune.train import (
    COMPLETE_MARKER,
    FINETUNE_FORMAT,
    MANIFEST_NAME,
    METRICS_NAME,
    classification_metrics,
    finetune,
    predict,
)

__all__ = [
    "COMPLETE_MARKER", "FINETUNE_FORMAT", "MANIFEST_NAME", "METRICS_NAME", "MIN_HELDOUT_SHARE", "SECONDS_OVERHEAD",
    "SECONDS_PER_STEP", "TenPercentLog", "TrainingCallback", "TrainingStep", "analysis_exclusions",
    "cached_finetune", "checkpoint_folder", "classification_metrics", "clock", "finetune", "finetune_cache_key",
    "finetune_recipe", "finetune_train_ids", "is_complete", "label_ids", "predict", "read_manifest",
    "training_callback", "training_estimate", "training_plan",
]
