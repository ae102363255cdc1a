"""What ``headstats validate`` says before ``ok``: what ``run`` will do first, and what it needs.

:func:`validate_run` is the whole of ``validate``: :func:`headstats.study.preflight.preflight` (the checks
``run`` makes, the same one-line refusals), then the plan (:func:`run_plan`: models to fine-tune with their
steps and estimated time, models to load, data sets and their input counts), the warnings about a tau out of
reach, and notes. An output folder that an earlier run wrote is not a problem of the protocol: it validates
with a note that ``run`` needs ``--overwrite`` or another ``--out``.

The plan reads the data files to count their inputs (no parsing, no model), so it is kept out of
:func:`~headstats.study.preflight.preflight`, which ``run`` calls and which reads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from headstats.config.protocol import DatasetSpec, Protocol
from headstats.errors import HeadstatsError


@dataclass
class Validation:
    """What :func:`validate_run` found: the output folder (None when none was given), the plan, warnings
    and notes, each a line."""

    out: Path | None
    plan: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def validate_run(protocol: Protocol, *, out: str | Path | None = None, overwrite: bool = False,
                 cache_dir: str | Path | None = None) -> Validation:
    """Check ``protocol`` as ``run`` does, and say what ``run`` will do.

    Parameters
    ----------
    protocol : Protocol
        The loaded protocol.
    out, overwrite, cache_dir
        As ``run`` will get them (see :func:`headstats.study.preflight.preflight`).

    Raises
    ------
    ProtocolError, ModelError, DataError, OutputError
        What ``run`` would refuse, in the same words. An output folder that headstats wrote and that
        ``run --overwrite`` may replace is not refused: it gives a note.
    """
    from headstats.folders import is_headstats_output
    from headstats.study.preflight import preflight, tau_warnings

    notes = []
    target = out if out is not None else protocol.output
    exists = target is not None and not overwrite and Path(target).expanduser().is_dir()
    if exists and is_headstats_output(Path(target).expanduser()):
        checked = preflight(protocol, out=target, overwrite=True, cache_dir=cache_dir)
        notes.append(f"{checked} holds an earlier run: run needs --overwrite to replace it, or another --out")
    else:
        checked = preflight(protocol, out=target, overwrite=overwrite, cache_dir=cache_dir)
    return Validation(checked, run_plan(protocol, cache_dir=cache_dir), tau_warnings(protocol), notes)


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "time unknown"
    return f"about {max(1, round(seconds / 60))} min" if seconds >= 90 else f"about {max(10, round(seconds, -1)):.0f} s"


def run_plan(protocol: Protocol, *, cache_dir: str | Path | None = None) -> list[str]:
    """Lines saying what ``run`` will do first: the models it fine-tunes (steps and estimated time on 2 idle
    CPU cores, or that the checkpoint is in the cache), the models it loads, and each data set with its
    number of inputs. Counting reads the data files (no parsing, no model)."""
    from headstats.engine.cache import resolve_cache_root
    from headstats.model.finetune import checkpoint_folder, is_complete, training_estimate

    lines = []
    todo, total = [], 0.0
    for spec in protocol.models:
        recipe = spec.finetune
        if recipe is None:
            continue
        folder = checkpoint_folder(recipe, cache_dir=resolve_cache_root(cache_dir, protocol.cache_dir),
                                   data_root=protocol.data_root)
        if is_complete(folder):
            todo.append(f"  {spec.name}: {recipe.base} on {recipe.task}, in the cache ({folder})")
            continue
        steps, seconds = training_estimate(recipe, data_root=protocol.data_root)
        total += seconds or 0.0
        what = f"{steps} steps (batch {recipe.batch_size}, lr {recipe.learning_rate:g})" if steps else "steps unknown"
        todo.append(f"  {spec.name}: {recipe.base} on {recipe.task}, {what}, {_minutes(seconds)}")
    if todo:
        lines.append(f"fine-tunes {len(todo)} model(s) first" + (f" ({_minutes(total)} on 2 idle CPU cores)"
                                                                 if total else "") + ":")
        lines.extend(todo)
    loaded = [f"{spec.name}" + (f" ({spec.path})" if spec.path and spec.path != spec.name else "")
              for spec in protocol.models if spec.finetune is None]
    if loaded:
        lines.append(f"loads {len(loaded)} model(s): {', '.join(loaded)}")
    lines.append(f"scores {len(protocol.datasets)} data set(s), {len(protocol.scoring.roles)} roles "
                 f"({', '.join(protocol.scoring.roles[:4])}{', ...' if len(protocol.scoring.roles) > 4 else ''}):")
    lines.extend(f"  {spec.name}: {dataset_line(spec, protocol)}" for spec in protocol.datasets)
    return lines


def _parse_words(records) -> str:
    """`` (gold parses)`` when every record carries dependency arcs (CoNLL-U), `` (words, no parse)`` when its
    reader split words without arcs (GAP), nothing for raw text (``run`` parses it with spaCy where a role or
    analysis needs arcs): the words ``run`` logs when it reads the data set (:data:`headstats.study.data.PARSE_WORDS`)."""
    from headstats.study.data import has_arcs

    if not records or not all(r.is_parsed for r in records):
        return ""
    return " (gold parses)" if all(has_arcs(r) for r in records) else " (words, no parse)"


def dataset_line(spec: DatasetSpec, protocol: Protocol) -> str:
    """``224 inputs (data/demo/sentences.txt)``: a data set's inputs as ``run`` will read them (before
    inputs too long to ever fit are left out), and where they come from."""
    from headstats.inputs.readers import read_records
    from headstats.inputs.records import count_records

    try:
        if spec.path is not None:
            records = read_records(spec.path, format=spec.format, limit=spec.limit)
            return f"{count_records(records)}{_parse_words(records)} from {spec.path}"
        glue = spec.glue
        from headstats.inputs.glue import available_splits, get_task, glue_file, glue_root, tsv_rows

        root = glue_root(glue.root or protocol.data_root)
        if root is None:
            return f"GLUE {glue.task} {glue.split}, {glue.n or 'all'} inputs (from the datasets library)"
        rows = tsv_rows(glue_file(glue.task, glue.split, root))
        n = min(rows, glue.n or spec.limit or rows)
        trains_here = "train" not in available_splits(glue.task, root) or glue.split == "train"
        left = " less the rows the fine-tuned models trained on" if glue.exclude_finetune_rows and trains_here and any(
            m.finetune is not None and get_task(m.finetune.task).name == get_task(glue.task).name
            for m in protocol.models) else ""
        return f"{n:,} inputs of GLUE {glue.task} {glue.split}{left} ({rows:,} in the file)"
    except (HeadstatsError, OSError, ValueError) as exc:  # validate's checks passed: say it, do not fail here
        return f"inputs not counted ({exc})"
