"""What a command shows while it works: rich progress bars with the time left, log lines, and the libraries'
own output kept quiet."""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack, contextmanager


def _quiet_libraries() -> None:
    """transformers and huggingface_hub log only errors and show no progress bars of their own.

    Set through their environment variables, read when they are imported, so that a command which never needs
    them (a re-run that finds everything in the cache) does not import them; where they are imported already,
    their setters are called too.
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from headstats.model.quiet import verbose_loading

    if verbose_loading():
        return
    os.environ.update(TRANSFORMERS_VERBOSITY="error", HF_HUB_VERBOSITY="error", HF_HUB_DISABLE_PROGRESS_BARS="1")
    if "transformers" in sys.modules:
        import transformers

        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
    if "huggingface_hub" in sys.modules:
        try:
            import huggingface_hub

            huggingface_hub.utils.logging.set_verbosity_error()
            huggingface_hub.utils.disable_progress_bars()
        except (ImportError, AttributeError):  # pragma: no cover - older huggingface_hub
            pass


def _console(quiet: bool):
    from rich.console import Console

    return Console(stderr=True, quiet=quiet, log_path=False)


def _progress_factory(console, quiet: bool):
    """``factory(description, total)``: a context manager yielding ``advance(n)`` that draws a rich bar with the
    count, the speed and the time left. ``advance.status(text)`` shows a short status beside
    the bar (the fine-tuning loss)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    @contextmanager
    def factory(description: str, total: int):
        if quiet:
            yield lambda n: None
            return
        unit = "steps" if description.startswith("fine-tuning") else "inputs"
        columns = [TextColumn("{task.description}"), BarColumn(bar_width=20), MofNCompleteColumn(),
                   TextColumn("{task.fields[rate]}"), TextColumn("{task.fields[status]}"),
                   TimeRemainingColumn(compact=True), TextColumn("left")]
        with Progress(*columns, console=console, transient=False) as bar:
            task = bar.add_task(description, total=total, rate="", status="")

            def advance(n: int) -> None:
                bar.advance(task, n)
                speed = bar.tasks[task].speed
                bar.update(task, rate=_rate(speed, unit))

            advance.status = lambda text: bar.update(task, status=text)  # type: ignore[attr-defined]
            yield advance

    return factory


def _rate(speed: float | None, unit: str) -> str:
    """``12.3 inputs/s``, or ``25 s/step`` when slower than one per ten seconds."""
    if not speed:
        return ""
    return f"{speed:6.1f} {unit}/s" if speed >= 0.1 else f"{1 / speed:.0f} s/{unit.removesuffix('s')}"


def _training_progress(console, quiet: bool, label: str):
    """A fine-tuning callback for the terminal: a bar with steps, loss and time left, and a line every 10 %."""
    from headstats.model.finetune import TenPercentLog

    stack = ExitStack()
    lines = TenPercentLog(console.log, label)
    bar: list = []

    def report(step) -> None:
        if quiet:
            return
        if not bar:
            bar.append(stack.enter_context(_progress_factory(console, quiet)(label, step.total)))
        bar[0](1)
        bar[0].status(f"loss {step.loss:.3f}")
        lines(step)

    return stack, report
