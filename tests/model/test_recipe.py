"""The fine-tuning recipe schema: defaults, strict types, and the limits that keep a run meaningful."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from headstats.model.recipe import FinetuneRecipe


def test_defaults_are_the_documented_recipe():
    recipe = FinetuneRecipe(task="sst2")
    assert (recipe.base, recipe.epochs, recipe.learning_rate, recipe.batch_size) == ("default", 1.0, 3e-5, 16)
    assert (recipe.max_length, recipe.train_rows, recipe.seed, recipe.warmup_ratio) == (64, 2000, 0, 0.1)


@pytest.mark.parametrize("field, value", [
    ("seed", True), ("seed", 1.5), ("seed", "3"), ("seed", -1), ("seed", 2**63),
    ("epochs", float("nan")), ("epochs", 0), ("learning_rate", float("inf")), ("batch_size", 0),
    ("max_length", 4), ("warmup_ratio", 1.0), ("train_split", "test"),
])
def test_bad_values_are_refused(field, value):
    with pytest.raises(ValidationError):
        FinetuneRecipe(task="sst2", **{field: value})


def test_unknown_keys_are_refused():
    with pytest.raises(ValidationError, match="extra"):
        FinetuneRecipe(task="sst2", epoch=2)
