"""The fine-tuning tests' data: a tiny GLUE folder in the tiny model's vocabulary, and a small recipe."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from headstats.model.recipe import FinetuneRecipe

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


def small_recipe(**kw) -> FinetuneRecipe:
    base = dict(task="sst2", epochs=1, batch_size=8, max_length=16, train_rows=24, learning_rate=1e-3, seed=0)
    base.update(kw)
    return FinetuneRecipe(**base)
