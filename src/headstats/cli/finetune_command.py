"""``headstats finetune``: headstats' one fine-tuning recipe from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from headstats.cli.app import _OVERWRITE_HELP, command
from headstats.cli.errors import _errors
from headstats.cli.progress import _console, _quiet_libraries, _training_progress


#: FinetuneRecipe field -> the finetune command's option, for one-line messages.
_FINETUNE_OPTIONS = {"epochs": "--epochs", "learning_rate": "--lr", "batch_size": "--batch-size",
                     "max_length": "--max-length", "train_rows": "--train-rows", "seed": "--seed",
                     "base": "--model", "task": "--task"}


def _recipe_help(text: str, field: str) -> str:
    """An option's help with the recipe's default (:data:`headstats.model.recipe.RECIPE`) and the tasks that
    depart from it."""
    from headstats.model.recipe import RECIPE, TASK_RECIPES

    default = RECIPE[field]
    shown = "all" if default is None else f"{default:g}" if isinstance(default, float) else str(default)
    tasks = ", ".join(f"{t} {'all' if v[field] is None else format(v[field], 'g')}"
                      for t, v in TASK_RECIPES.items() if field in v)
    return f"{text} (default: the recipe's {shown}" + (f"; {tasks})" if tasks else ")")


@command()
def finetune(
    model: str = typer.Option("default", "--model", help="base model: 'default', a directory or a hub id"),
    task: str = typer.Option(..., "--task", help="GLUE task: sst2, mrpc, qqp, qnli, rte, cola, ..."),
    out: Optional[Path] = typer.Option(None, "--out", help="checkpoint folder (default: reuse or build in the cache)"),
    epochs: Optional[float] = typer.Option(None, "--epochs", help=_recipe_help("passes over the training rows (may "
                                           "be fractional)", "epochs")),
    lr: Optional[float] = typer.Option(None, "--lr", help=_recipe_help("peak learning rate (linear warm-up, then "
                                       "linear decay)", "learning_rate")),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help=_recipe_help("training rows per step",
                                                                                     "batch_size")),
    max_length: Optional[int] = typer.Option(None, "--max-length", help=_recipe_help(
        "longer inputs are truncated to this many pieces", "max_length")),
    train_rows: Optional[int] = typer.Option(None, "--train-rows", help=_recipe_help(
        "training rows (seeded sample); 0 = all", "train_rows")),
    seed: Optional[int] = typer.Option(None, "--seed", help=_recipe_help(
        "seed of the sample, the new head and the batch order", "seed")),
    data_root: Optional[Path] = typer.Option(None, "--data-root", envvar="HEADSTATS_GLUE_ROOT",
                                             help="GLUE folder (<root>/SST-2/train.tsv, ...)"),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="cache root: checkpoints go to its "
                                             "checkpoints/ folder, where a protocol's run finds them (default: "
                                             "$HEADSTATS_CACHE_DIR, $XDG_CACHE_HOME/headstats or ~/.cache/headstats)"),
    overwrite: bool = typer.Option(False, "--overwrite/--no-overwrite", help=_OVERWRITE_HELP),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar or log lines"),
) -> None:
    """Fine-tune a sequence-classification head on a GLUE task with headstats' one seeded recipe.

    It is the recipe a protocol's finetune: entry uses (options left out take it), so both make the same
    checkpoint, kept under the cache root's checkpoints/ unless --out is given.
    """
    with _errors(out, quiet) as command:
        from pydantic import ValidationError

        from headstats.config.protocol import printable
        from headstats.engine.cache import resolve_cache_root
        from headstats.errors import ProtocolError
        from headstats.model.recipe import FinetuneRecipe
        from headstats.study.preflight import check_finetune

        given = {"epochs": epochs, "learning_rate": lr, "batch_size": batch_size, "max_length": max_length,
                 "seed": seed, "train_rows": None if train_rows is None else (train_rows or "all")}
        try:  # options not given take the task's values of the one recipe, as a protocol's finetune: does
            recipe = FinetuneRecipe(base=model, task=task, **{k: (None if v == "all" else v)
                                                              for k, v in given.items() if v is not None})
        except ValidationError as exc:
            first = exc.errors()[0]
            option = _FINETUNE_OPTIONS.get(str(first["loc"][0]), str(first["loc"][0]))
            raise ProtocolError(f"invalid {option} {printable(first.get('input'))}: "
                                f"{printable(first['msg'].removeprefix('Value error, '))}") from None
        check_finetune(recipe, data_root=data_root)
        _quiet_libraries()
        from headstats.model.finetune import finetune_recipe

        stack, progress = _training_progress(_console(quiet), quiet, f"fine-tuning {task}")
        with stack:
            folder, metrics = finetune_recipe(recipe, out, data_root, cache_dir=resolve_cache_root(cache_dir),
                                              overwrite=overwrite, progress=progress)
        command.out, command.written = folder, True
        shown = ", ".join(f"{k} {v:.3f}" for k, v in metrics.items() if isinstance(v, float))
        typer.echo(f"checkpoint: {folder}" + (f" ({shown})" if shown else ""))
