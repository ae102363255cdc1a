"""A seeded fine-tuning recipe: what :mod:`headstats.model.finetune` trains, and what its cache key is made of."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from headstats.fields import Float, Int, Seed, StrictModel


class FinetuneRecipe(StrictModel):
    """A seeded fine-tuning recipe: a sequence-classification head trained on one GLUE task."""

    base: str = Field("default", min_length=1)
    task: str = Field(min_length=1)
    epochs: Float = Field(1.0, gt=0, le=1000)
    learning_rate: Float = Field(3e-5, gt=0, le=1)
    batch_size: Int = Field(16, ge=1)
    max_length: Int = Field(64, ge=8, le=512)
    train_rows: Int | None = Field(2000, ge=1)
    train_split: Literal["train", "dev"] | None = None
    eval_rows: Int | None = Field(None, ge=1)
    weight_decay: Float = Field(0.01, ge=0)
    warmup_ratio: Float = Field(0.1, ge=0, lt=1)
    seed: Seed = 0
