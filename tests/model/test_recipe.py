"""The fine-tuning recipe schema: defaults, strict types, and the limits that keep a run meaningful."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from headstats.model.recipe import RECIPE, FinetuneRecipe, task_recipe


def test_defaults_are_the_documented_recipe():
    recipe = FinetuneRecipe(task="qnli")
    assert (recipe.base, recipe.epochs, recipe.learning_rate, recipe.batch_size) == ("default", 1.0, 1e-4, 16)
    assert (recipe.max_length, recipe.train_rows, recipe.seed, recipe.warmup_ratio) == (128, 2000, 0, 0.1)


def test_tasks_take_their_own_departures_and_given_fields_win():
    assert FinetuneRecipe(task="SST-2").max_length == 64  # task names as get_task takes them
    mrpc = FinetuneRecipe(task="mrpc")
    assert (mrpc.epochs, mrpc.train_rows, mrpc.max_length) == (2.0, None, 128)
    assert FinetuneRecipe(task="mrpc", train_rows=100, epochs=1).train_rows == 100
    assert FinetuneRecipe(task="sst2", max_length=32).max_length == 32
    assert task_recipe("no-such-task") == RECIPE  # refused later, by the data checks, with the known tasks


def test_cli_defaults_and_the_shipped_protocols_build_the_same_recipe():
    """`headstats finetune --task T` and the protocols' fine-tuning of T: one recipe, one cache key."""
    from pathlib import Path

    from headstats.config.protocol import load_protocol
    from headstats.model.recipe import FinetuneRecipe

    root = Path(__file__).resolve().parents[2] / "protocols"
    for name in ("glue_finetune_compare.yaml", "glue_finetune_seeds.yaml"):
        protocol = load_protocol(root / name)
        recipes = [m.finetune for m in protocol.models if m.finetune is not None]
        assert recipes
        for recipe in recipes:
            assert FinetuneRecipe(base=recipe.base, task=recipe.task, seed=recipe.seed) == recipe


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
