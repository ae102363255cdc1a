"""What fine-tuning tells while it runs (a callback per optimisation step, a line every 10 %), and how long it
will take, estimated before it starts."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from headstats.errors import HeadstatsError
from headstats.inputs.glue import available_splits, get_task, glue_file, glue_root, tsv_rows
from headstats.model.finetune.data import MIN_HELDOUT_SHARE
from headstats.model.recipe import FinetuneRecipe
from headstats.model.sources import resolve_model_path


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
