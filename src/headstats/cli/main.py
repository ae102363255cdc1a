"""The ``headstats`` command line: a thin layer over :mod:`headstats.study.run`.

Every problem with input is reported as one line, ``error: <what> ; <fix>``, with exit status 2 and no
traceback; nothing is left half-written. Ctrl-C and SIGTERM stop a command with one line too (exit 130 and
143), after the staging folder is removed. ``validate``, ``run`` and ``score`` run the same checks
(:func:`headstats.study.preflight.preflight`) before any model is loaded or any input read.
"""

from __future__ import annotations

import os
import signal
import sys
import warnings
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from headstats.errors import HeadstatsError
from headstats.folders import write_error_reason


class _FlagsAsFlags:
    """Help that shows an on/off option as a flag (``--quiet``, ``--overwrite / --no-overwrite``), not as
    ``--quiet <bool>``: flags get an empty metavar when help is drawn."""

    def get_params(self, ctx):
        params = super().get_params(ctx)
        for param in params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
        return params


class _Command(_FlagsAsFlags, TyperCommand):
    pass


class _Group(_FlagsAsFlags, TyperGroup):
    pass


app = typer.Typer(cls=_Group, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="What does each attention head do? Statistics, not averages.")


def command(name: str | None = None):
    """``@command()``: register a command of :data:`app` whose help shows flags as flags."""
    return app.command(name, cls=_Command)


def _verbose(value: bool) -> None:
    """``--verbose``: transformers' and huggingface_hub's own bars, logs and warnings are shown while a model
    loads (:mod:`headstats.model.quiet`)."""
    if value:
        from headstats.model.quiet import VERBOSE_ENV

        os.environ[VERBOSE_ENV] = "1"


def _print_version(value: bool) -> None:
    if value:
        from headstats import __version__

        typer.echo(f"headstats {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="print the version of headstats and exit"),
    verbose: bool = typer.Option(False, "--verbose", callback=_verbose, is_eager=True,
                                 help="show transformers' own progress bars, logs and warnings while loading"),
) -> None:
    """What does each attention head do? Statistics, not averages."""

#: Exit statuses: bad input, Ctrl-C (128 + SIGINT) and SIGTERM (128 + SIGTERM).
EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_TERMINATED = 2, 130, 143


class Terminated(BaseException):
    """Raised in the main thread when the process gets SIGTERM.

    A ``BaseException`` like ``KeyboardInterrupt``, so that the cleanup that runs on Ctrl-C (``finally`` and
    ``except BaseException`` blocks, e.g. removing the staging folder) runs on SIGTERM too.
    """


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


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    from headstats.config.protocol import printable

    typer.echo(f"error: {printable(message)}", err=True)
    raise typer.Exit(code=code)


@dataclass
class _CommandState:
    """What a command has got to, for the line printed when it stops: its output folder, and whether it
    was written."""

    out: Path | None = None
    written: bool = False

    def stopped(self, how: str) -> str:
        if self.out is None:
            return how
        if self.written:
            return f"{how} after {self.out} was written"
        return f"{how}; nothing was written to {self.out}"


def _write_error_message(exc: OSError, command: _CommandState) -> str | None:
    """One line for an OSError that means a full, read-only or forbidden disk, else None (the reasons and fixes:
    :func:`headstats.folders.write_error_reason`)."""
    known = write_error_reason(exc)
    if known is None:
        return None
    reason, fix = known
    path = exc.filename or command.out
    where = f" at {path}" if path is not None else ""
    nothing = f" (nothing was written to {command.out})" if command.out is not None and not command.written else ""
    return f"{reason}{where}{nothing}; {fix}"


def _raise_terminated(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM does not interrupt the cleanup
    raise Terminated()


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` (in the main thread; elsewhere unchanged)."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Show a warning as one line, ``warning: <message>``, on standard error (no source line, no path)."""
    typer.echo(f"warning: {message}", err=True)


@contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """While the block runs, every warning a command raises is one line on standard error."""
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning
        yield


@contextmanager
def _errors(out: Path | None = None) -> Iterator[_CommandState]:
    """Turn bad input, Ctrl-C, SIGTERM and a full or read-only disk into one line and an exit status.

    Yields a :class:`_CommandState` whose ``out`` the command sets once it knows its output folder. Any other
    exception is a bug and keeps its traceback.
    """
    command = _CommandState(out)
    try:
        with _sigterm_raises(), _warnings_as_lines():
            yield command
    except HeadstatsError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail(command.stopped("interrupted"), EXIT_INTERRUPTED)
    except Terminated:
        _fail(command.stopped("terminated (SIGTERM)"), EXIT_TERMINATED)
    except FileNotFoundError as exc:
        _fail(f"file not found: {exc.filename}; check the path")
    except OSError as exc:
        message = _write_error_message(exc, command)
        if message is None:
            raise
        _fail(message)


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


def _load(protocol: Path, data_root: Optional[Path]):
    """Load a protocol and apply ``--data-root`` (as ``run`` and ``validate`` both do)."""
    from headstats.errors import DataError
    from headstats.config.protocol import load_protocol

    proto = load_protocol(protocol)
    if data_root is not None:
        if not data_root.is_dir():
            raise DataError(f"--data-root {str(data_root)!r} is not a folder; give the GLUE data folder")
        proto.data_root = str(data_root.resolve())
    return proto


def _default_out(proto) -> Path:
    """Where ``run`` writes when no ``--out`` is given."""
    return Path(proto.output or f"runs/{proto.name}")


_DATA_ROOT_HELP = "GLUE data folder; overrides the protocol's data_root"
_OVERWRITE_HELP = "replace an output folder that headstats wrote before (never one holding other files)"
_QUIET_HELP = "no progress bars or log lines"
# options of large runs (issue 12; their commands are at the end of this file)
_SHARD_HELP = "run only part i of n of the inputs (e.g. 1/4) and write a shard folder; join with 'headstats merge'"
_CACHE_DIR_HELP = ("state cache folder (default: the protocol's cache_dir, $HEADSTATS_CACHE_DIR, "
                   "$XDG_CACHE_HOME/headstats or ~/.cache/headstats)")
_NO_CACHE_HELP = "neither read nor write the state cache (every forward pass runs)"


# ---------------------------------------------------------------------------------- options from the schema

#: Options of ``score`` that are protocol keys: option name -> the key's path in the protocol. Their names,
#: help and defaults come from the pydantic fields of :mod:`headstats.config.protocol` (:func:`schema_field`),
#: and their values go through the same validation as a protocol's, so the CLI and YAML cannot disagree.
SCORE_PROTOCOL_OPTIONS = {
    "roles": "scoring.roles",
    "max_length": "scoring.max_length",
    "batch_size": "scoring.batch_size",
    "device": "device",
    "seed": "seed",
}


def schema_field(key: str):
    """The pydantic ``FieldInfo`` of a protocol key such as ``scoring.max_length`` or ``seed``."""
    from headstats.config import protocol as schema

    sections = {"scoring": schema.ScoringOptions, "statistics": schema.StatisticsOptions,
                "report": schema.ReportOptions}
    section, _, name = key.rpartition(".")
    model = sections[section] if section else schema.Protocol
    return model.model_fields[name]


def _shown(value) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def schema_default(key: str):
    """The default of a protocol key, as the schema gives it."""
    return schema_field(key).get_default(call_default_factory=True)


def schema_option(key: str, **kwargs):
    """A ``typer.Option`` for protocol key ``key``: flag ``--<name-with-dashes>``, the field's description as
    help with the key and its default. Its default is None: a value not given is left to the schema."""
    name = key.rpartition(".")[2]
    field = schema_field(key)
    help_text = f"{field.description} (protocol key {key}; default: {_shown(schema_default(key))})"
    return typer.Option(None, f"--{name.replace('_', '-')}", help=help_text, show_default=False, **kwargs)


def _protocol_values(values: dict) -> dict:
    """Nested protocol keys of the options given (``{"scoring": {"max_length": 64}, "seed": 1}``)."""
    out: dict = {}
    for option, value in values.items():
        if value is None:
            continue
        section, _, name = SCORE_PROTOCOL_OPTIONS[option].rpartition(".")
        (out.setdefault(section, {}) if section else out)[name] = value
    return out


def _split_roles(roles: Optional[list[str]]) -> Optional[list[str]]:
    """``--roles local,syntactic --roles block`` -> ``[local, syntactic, block]``."""
    if roles is None:
        return None
    return [r.strip() for value in roles for r in value.split(",") if r.strip()]


# ---------------------------------------------------------------------------------------------- commands


@command()
def run(
    protocol: Path = typer.Argument(..., help="YAML protocol file"),
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: protocol's 'output')"),
    overwrite: bool = typer.Option(False, "--overwrite/--no-overwrite", help=_OVERWRITE_HELP),
    quiet: bool = typer.Option(False, "--quiet", help=_QUIET_HELP),
    data_root: Optional[Path] = typer.Option(None, "--data-root", help=_DATA_ROOT_HELP),
    shard: Optional[str] = typer.Option(None, "--shard", help=_SHARD_HELP),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=_CACHE_DIR_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help=_NO_CACHE_HELP),
) -> None:
    """Run a protocol end to end: scores, tests, roles, figures, report and manifest."""
    with _errors(out) as command:
        proto = _load(protocol, data_root)
        command.out = out or _default_out(proto)
        execution = _execution(shard, cache_dir, no_cache)
        _quiet_libraries()
        from headstats.study.run import run_study

        console = _console(quiet)
        result = run_study(proto, out, overwrite=overwrite, log=lambda m: console.log(m),
                           progress=_progress_factory(console, quiet), execution=execution)
        if execution.shard is not None:
            command.written = True
            if not quiet:
                typer.echo(f"shard {execution.shard[0]}/{execution.shard[1]}: {result.out} "
                           "(join the shards with: headstats merge SHARD... --out DIR)")
            return
        command.written = True
        if not quiet:
            typer.echo(f"report: {result.out / 'report.html'}")


@command()
def score(
    model: str = typer.Option("default", "--model", help="'default', a local directory or a hub id"),
    data: Path = typer.Option(..., "--data", help="data file (.txt, .jsonl, .tsv, .conllu)"),
    format: Optional[str] = typer.Option(None, "--format", help="input format (headstats list-formats); "
                                         "default: from the extension"),
    out: Path = typer.Option(..., "--out", help="output folder"),
    roles: Optional[list[str]] = schema_option("scoring.roles", metavar="ROLE[,ROLE...]"),
    max_length: Optional[int] = schema_option("scoring.max_length"),
    batch_size: Optional[int] = schema_option("scoring.batch_size"),
    device: Optional[str] = schema_option("device"),
    seed: Optional[int] = schema_option("seed"),
    overwrite: bool = typer.Option(False, "--overwrite/--no-overwrite", help=_OVERWRITE_HELP),
    quiet: bool = typer.Option(False, "--quiet", help=_QUIET_HELP),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=_CACHE_DIR_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help=_NO_CACHE_HELP),
) -> None:
    """Score one data file: writes scores.parquet and manifest.json (other options: the protocol's defaults).
    The passes are those of 'run', through the same state cache."""
    with _errors(out) as command:
        import time

        from pydantic import ValidationError

        from headstats.errors import ProtocolError
        from headstats.study.preflight import preflight
        from headstats.config.protocol import Protocol, check_names, validation_message

        started = time.time()
        given = _protocol_values({"roles": _split_roles(roles), "max_length": max_length,
                                  "batch_size": batch_size, "device": device, "seed": seed})
        try:
            # the model's name is not used in any file name here; its source is checked as given
            proto = Protocol.model_validate({**given, "models": [{"name": _slug(Path(model).name), "path": model}],
                                             "datasets": [
                {"name": data.stem, "path": str(data), "format": format}]})
        except ValidationError as exc:
            raise ProtocolError(validation_message(exc, what="score options")) from None
        check_names(proto)
        execution = _execution(None, cache_dir, no_cache)
        from headstats.study.run import cache_root

        cache = cache_root(proto, execution)
        out = preflight(proto, out=out, overwrite=overwrite, cache_dir=cache)
        command.out = out
        _quiet_libraries()
        from headstats.folders import claim_output
        from headstats.study.run import build_models, dataset_manifest, read_data, run_passes
        from headstats.study.scoring import write_scores
        from headstats.study.storage import write_manifest

        data_name = proto.datasets[0].name
        console = _console(quiet)
        log = lambda m: console.log(m)  # noqa: E731
        with claim_output(out, overwrite=overwrite) as claim:
            # the passes of `headstats run`: the same reading, parsing, engine and state cache
            sources, finetuned = build_models(proto, log)
            loaded = read_data(proto, finetuned, log, cache=cache)
            passes = run_passes(proto, sources, finetuned, loaded, log=log, progress=_progress_factory(console, quiet),
                                cache=cache)
            array = replace(passes.arrays[0], model=model)  # the model as given, as before
            counts = passes.counts[f"{proto.models[0].name}/{data_name}"] | {"model": model}  # no input scored: refused there
            n_rows = write_scores([array], claim.staging / "scores.parquet")
            datasets = dataset_manifest(loaded)
            write_manifest(claim.staging, {
                "models": {model: passes.provenance[proto.models[0].name]}, "scoring": proto.scoring.model_dump(),
                "seed": proto.seed, "device": proto.device, "datasets": datasets,
                "inputs": {f"{model}/{data_name}": counts}, "execution": passes.execution,
                "wall_time_s": round(time.time() - started, 2)})
            claim.publish()
        command.written = True
        if not quiet:
            typer.echo(f"scores: {out / 'scores.parquet'} ({n_rows} rows)")


@command()
def validate(
    protocol: Path = typer.Argument(..., help="YAML protocol file"),
    out: Optional[Path] = typer.Option(None, "--out", help="check this output folder too (default: the "
                                       "protocol's 'output', if it has one)"),
    overwrite: bool = typer.Option(False, "--overwrite/--no-overwrite", help="check as 'run --overwrite' would"),
    data_root: Optional[Path] = typer.Option(None, "--data-root", help=_DATA_ROOT_HELP),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=_CACHE_DIR_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help=_NO_CACHE_HELP),
) -> None:
    """Check a protocol as 'run' does before its work starts, without loading any model or reading any input.

    'ok' means that 'run' with the same options gets past all its checks.
    """
    with _errors():
        from headstats.study.preview import validate_run
        from headstats.study.run import cache_root

        proto = _load(protocol, data_root)
        checked = validate_run(proto, out=out, overwrite=overwrite,
                               cache_dir=cache_root(proto, _execution(None, cache_dir, no_cache)))
        typer.echo("run will:")
        for line in checked.plan:
            typer.echo(f"  {line}")
        for warning in checked.warnings:
            typer.echo(f"warning: {warning}", err=True)
        for note in checked.notes:
            typer.echo(f"note: {note}")
        where = f"; output {checked.out}" if checked.out is not None else ""
        typer.echo(f"ok: {protocol} ({len(proto.models)} model(s), {len(proto.datasets)} data set(s), "
                   f"{len(proto.scoring.roles)} roles{where})")


@command()
def report(
    run_dir: Path = typer.Argument(..., help="a finished run's output folder"),
    top_k: Optional[int] = typer.Option(None, "--top-k", min=1, help="strongest heads per role to list "
                                        "(default: the protocol's report.top_k)"),
    html: Optional[bool] = typer.Option(None, "--html/--no-html", show_default=False,
                                        help="write report.html beside report.md (default: the protocol's "
                                        "report.html)"),
    svg: bool = typer.Option(True, "--svg/--no-svg", help="write an SVG beside each PNG figure, for papers "
                             "(--no-svg is faster, and removes the run's older SVGs)"),
    quiet: bool = typer.Option(False, "--quiet", help=_QUIET_HELP),
) -> None:
    """Rebuild a run's report and figures from its tables, without loading any model."""
    with _errors():
        from headstats.report.builder import rebuild_report

        if not (run_dir / "manifest.json").is_file():
            raise HeadstatsError(f"{str(run_dir)!r} is not a headstats run folder (no manifest.json); "
                                 "give the --out folder of a finished 'headstats run'")
        console = _console(quiet)
        path = rebuild_report(run_dir, top_k=top_k, html=html, formats=None if svg else ["png"],
                              log=lambda m: console.log(m))
        if not quiet:
            typer.echo(f"report: {path}")


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
    """Fine-tune a sequence-classification head on a GLUE task with headstats' one seeded recipe (the one a
    protocol's finetune: entry uses, so both make the same checkpoint)."""
    with _errors(out) as command:
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


# ------------------------------------------------------------------------------------------------- init


def _flow(value) -> str:
    """A value as one line of YAML (lists in flow style)."""
    import yaml

    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("\n...").strip()


#: Column of the comments in a protocol written by ``headstats init``.
_COMMENT_COLUMN = 46


def _keyed(indent: str, key: str, value, comment: str | None = None) -> list[str]:
    """``key: value  # comment`` as YAML lines; a long flow list is wrapped under its opening bracket and a
    long line takes its comment on the line above."""
    text = _flow(value)
    head = f"{indent}{key}: "
    if isinstance(value, list) and len(head) + len(text) > 100:
        items, rows, row = [_flow([v])[1:-1] for v in value], [], ""  # each item as it is in a flow list
        for item in items:
            if row and len(head) + 1 + len(row) + len(item) + 2 > 100:
                rows.append(row + ",")
                row = ""
            row = f"{row}, {item}" if row else item
        rows.append(row)
        pad = " " * (len(head) + 1)
        body = [f"{head}[{rows[0]}", *(pad + r for r in rows[1:])]
        body[-1] += "]"
    else:
        body = [head + text]
    if not comment:
        return body
    if len(body) == 1 and len(body[0]) < _COMMENT_COLUMN:
        return [f"{body[0]:<{_COMMENT_COLUMN}}# {comment}"]
    return [f"{indent}# {comment}", *body]


#: Comments written beside each key by ``headstats init`` (keys without one take the field's description).
INIT_COMMENTS = {
    "roles": "headstats list-roles; syntactic:<relation> for one relation",
    "relations": "relations whose union is 'syntactic'",
    "window": "local: keys with |i - j| <= window",
    "count_special_queries": "[CLS]/[SEP] rows count as queries (as in the paper)",
    "arc_direction": "dependent_to_head (the paper), head_to_dependent or both",
    "max_length": "longest input in word pieces",
    "too_long": "skip (and count) longer inputs, or truncate them",
    "batch_size": "speed and memory only; never changes a score",
    "parser": "spaCy pipeline that parses raw text",
    "test": "headstats list-tests: t, skew_t, wilcoxon, sign, bootstrap, permutation, t_ddof0",
    "tau": "H0: location <= tau (the paper's threshold is 3); per role: {default: 3, block: 1.5}",
    "alpha": "level of each test after correction",
    "correction": "headstats list-corrections; none reproduces the paper's code",
    "family": "columns that make one family of the correction",
    "confidence": "of the one-sided lower bound beside each p-value",
    "min_n": "fewer inputs taking part: reported, not tested",
    "n_resamples": "bootstrap and permutation tests; auto: enough for a decision in the family",
    "power_target": "power for the 'N needed' and minimum detectable effect columns",
    "effect_of_interest": "standardised effect at which power and N needed are computed",
    "scale": "bias (the paper), mass or ceiling (0..1); one, or per role {default: bias, block: mass}",
    "block_entropy": "true: block ratio times row entropy (the published code)",
    "first_sep_segment": "A, or B as the published code",
    "local_edges": "exact, or published (last queries divide by window + 1)",
    "alignment": "offsets, or first_occurrence (the published code's lookup)",
    "sensitivity": "tau/alpha sensitivity and robustness tables",
    "top_k": "strongest heads per role listed in the report",
    "html": "write report.html beside report.md",
}


def _section(name: str, model_cls, chosen: dict | None = None) -> list[str]:
    """A protocol section with every key at its schema default (or the value ``chosen`` for it from the data),
    each with a comment."""
    chosen = chosen or {}
    lines = [f"{name}:"]
    for key, value in model_cls().model_dump(mode="json").items():
        comment = INIT_COMMENTS.get(key) or model_cls.model_fields[key].description
        if key in chosen:
            value, comment = chosen[key], f"from your data; {comment}"
        lines += _keyed("  ", key, value, comment)
    return lines


def _survey_lines(found) -> list[str]:
    """Comment lines saying what ``init`` read in the data and chose from it."""
    lines = ["# What init read in the data (the first inputs of each file):"]
    lines += [f"#   {f.name}: {f.n_read} inputs, {f.kind}" for f in found.datasets]
    lines += [f"#   {found.why(role)}" for role in found.roles]
    lines += [f"#   left out {role}: {why}" for role, why in found.left_out.items()]
    return lines


def _written_path(path: Path, protocol_folder: Path) -> str:
    """A path as the protocol should hold it: relative to the protocol's folder when inside it (protocols
    resolve relative paths against their own folder), else absolute."""
    path = path.expanduser().resolve()
    try:
        return path.relative_to(protocol_folder).as_posix()
    except ValueError:
        return str(path)


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "data"


def render_init_protocol(model: str, data: list[Path], out: Path, *, formats: list[Optional[str]],
                         name: Optional[str] = None, found=None) -> str:
    """The text of a commented protocol for ``model`` on the data files ``data``, to be written at ``out``.

    Every scoring, statistics and report option is written with its default from the schema
    (:mod:`headstats.config.protocol`), so that the file shows what a run does and where to change it;
    with ``found`` (a :class:`headstats.study.drafting.Survey` of the data) the roles, relations, scale and
    tau are those the data allow, with the reasons as comments.
    """
    from datetime import date

    from headstats import __version__
    from headstats.config import protocol as schema

    folder = out.expanduser().resolve().parent
    defaults = schema.Protocol.model_fields
    lines = [
        f"# headstats {__version__} protocol, written by `headstats init` on {date.today().isoformat()}.",
        f"#   headstats validate {out}    checks it without loading any model",
        f"#   headstats run {out}         scores, tests, figures and report (methods: docs/methods.md)",
        "# Relative paths are read from the working folder first, then from this file's folder.",
        *_keyed("", "name", name or _slug(out.stem), "output goes to runs/<name> unless --out or output: says"),
        *_keyed("", "description", "", "one paragraph, printed at the top of the report"),
        *_keyed("", "seed", schema_default("seed"), defaults["seed"].description),
        *_keyed("", "device", schema_default("device"), defaults["device"].description),
        "models:",
    ]
    if model == "default":
        lines.append(f"{'  - default':<{_COMMENT_COLUMN}}# all-MiniLM-L6-v2 (6 layers x 12 heads), installed "
                     "with headstats")
    else:
        local = Path(model).expanduser()
        where = _written_path(local, folder) if local.exists() else model
        kind = "a local model folder" if local.exists() else "a Hugging Face hub id (or a local folder)"
        lines += [f"  - name: {_flow(_slug(Path(model).name))}", *_keyed("    ", "path", where, kind),
                  *_keyed("    ", "# revision", "main", "a hub revision: branch, tag or commit")]
    lines.append("datasets:")
    names: set[str] = set()
    for path, fmt in zip(data, formats):
        stem = _slug(path.stem)
        dataset = stem if stem not in names else f"{stem}_{len(names) + 1}"
        names.add(dataset)
        lines += [f"  - name: {_flow(dataset)}", *_keyed("    ", "path", _written_path(path, folder))]
        if fmt is not None:
            lines += _keyed("    ", "format", fmt)
        lines += _keyed("    ", "# limit", 1000, "read only the first N inputs")
    scoring, statistics = {}, {}
    if found is not None:
        lines[4:4] = _survey_lines(found)
        scoring = {"roles": found.roles, "relations": found.relations or schema_default("scoring.relations"),
                   "scale": found.scale_spec()}
        statistics = {"tau": found.tau_spec()}
    lines += _section("scoring", schema.ScoringOptions, scoring)
    lines += _section("statistics", schema.StatisticsOptions, statistics)
    lines += _keyed("", "analyses", [], "extra analyses in the same passes (headstats list-analyses)")
    lines += _section("report", schema.ReportOptions)
    return "\n".join(lines) + "\n"


@command()
def init(
    model: str = typer.Option("default", "--model", help="'default', a local model folder or a hub id"),
    data: list[Path] = typer.Option(..., "--data", help="a data file (.txt, .jsonl, .tsv, .conllu); repeat for "
                                    "more data sets"),
    out: Path = typer.Option(Path("protocol.yaml"), "--out", help="the protocol file to write"),
    format: Optional[str] = typer.Option(None, "--format", help="input format of the data files (headstats "
                                         "list-formats); default: from each extension"),
    name: Optional[str] = typer.Option(None, "--name", help="the study's name (default: the file's name)"),
    force: bool = typer.Option(False, "--force", help="replace an existing file"),
) -> None:
    """Write a commented protocol for a model and data files: the roles that apply to the data and a tau
    per role that its ceilings allow (read from the first inputs), every other option at its default."""
    with _errors():
        import yaml

        from headstats.errors import DataError
        from headstats.config.protocol import validate_protocol
        from headstats.folders import check_output_file
        from headstats.inputs.readers import INPUT_FORMATS, infer_format

        for path in data:
            if not path.is_file():
                what = "is a folder" if path.is_dir() else "does not exist"
                raise DataError(f"data file {str(path)!r} {what}; give a data file (.txt, .jsonl, .tsv, .conllu)")
            if format is None:
                infer_format(path)  # an unknown extension is refused here, naming the formats
        if format is not None:
            INPUT_FORMATS.get(format)
        if model != "default" and model.startswith((".", "/", "~")) and not Path(model).expanduser().is_dir():
            raise DataError(f"model folder {model!r} does not exist; give 'default', a model folder or a hub id")
        check_output_file(out, inputs=[*data, model if model != "default" else None], force=force)
        _quiet_libraries()
        from headstats.study.drafting import survey

        found = survey(model, data, formats=[format] * len(data))
        if not found.roles:
            raise DataError("no role applies to these data (" + "; ".join(
                f"{r}: {why}" for r, why in found.left_out.items()) + "); give other data files")
        text = render_init_protocol(model, data, out, formats=[format] * len(data), name=name, found=found)
        validate_protocol(yaml.safe_load(text))  # what we write is a valid protocol
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(f".{out.name}.partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, out)
        for fact in found.datasets:
            typer.echo(f"read {fact.name}: {fact.n_read} inputs, {fact.kind}")
        if found.left_out:
            typer.echo("left out: " + "; ".join(f"{r} ({why})" for r, why in found.left_out.items()))
        typer.echo(f"tau: {_flow(found.tau_spec())}, scale: {_flow(found.scale_spec())}")
        typer.echo(f"protocol: {out} (check it with: headstats validate {out})")


# ------------------------------------------------------------------------------------------------ lists


def show_registry(title: str, rows: list[dict[str, object]]) -> None:
    """Print a registry as a table: one row per entry, its name first and its description last.

    Parameters
    ----------
    title : str
        What the entries are (the table's title).
    rows : list of dict
        One mapping per entry, column name -> value, the same columns in each.
    """
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_lines=False, box=None, header_style="bold")
    columns = list(rows[0]) if rows else ["name", "description"]
    for k, column in enumerate(columns):
        table.add_column(column, no_wrap=k == 0, overflow="fold")
    for row in rows:
        table.add_row(*(_cell(row[c]) for c in columns))
    Console(soft_wrap=False).print(table)


def _cell(value: object) -> str:
    from rich.markup import escape

    if isinstance(value, bool):
        return "yes" if value else ""
    return escape("" if value is None else str(value))


@command("list-roles")
def list_roles_command() -> None:
    """List the registered roles (and how to name a syntactic relation)."""
    from headstats.analyses.roles import ROLES

    rows = [{"name": name, "kind": spec.kind, "pairs only": spec.pairs_only, "description": spec.description}
            for name, spec in ROLES.items()]
    rows.append({"name": "syntactic:<rel>", "kind": "arc", "pairs only": False,
                 "description": "arcs of one relation, e.g. syntactic:nsubj, syntactic:dobj (UD 'obj' works too)"})
    show_registry("roles (scoring.roles)", rows)


@command("list-tests")
def list_tests_command() -> None:
    """List the one-sample tests (statistics.test) and the paired tests (compare[].test)."""
    from headstats.stats.onesample import ONE_SAMPLE_TESTS
    from headstats.stats.paired import PAIRED_TESTS

    rows = [{"name": name, "used in": "statistics.test", "parameter": t.parameter, "effect size": t.effect_size,
             "description": t.description} for name, t in ONE_SAMPLE_TESTS.items()]
    rows += [{"name": name, "used in": "compare[].test", "parameter": t.parameter, "effect size": t.effect_size,
              "description": t.description} for name, t in PAIRED_TESTS.items()]
    show_registry("tests", rows)


@command("list-corrections")
def list_corrections_command() -> None:
    """List the multiple-comparison corrections (statistics.correction, compare[].correction)."""
    from headstats.stats.corrections import CORRECTIONS

    show_registry("corrections (statistics.correction)", [
        {"name": name, "controls": c.kind, "statsmodels": c.statsmodels_method, "description": c.description}
        for name, c in CORRECTIONS.items()])


@command("list-formats")
def list_formats_command() -> None:
    """List the input formats (datasets[].format) and the extensions that select them."""
    from headstats.inputs.readers import INPUT_FORMATS

    show_registry("input formats (datasets[].format)", [
        {"name": name, "extensions": " ".join(f.extensions), "description": f.description}
        for name, f in INPUT_FORMATS.items()])


@command("list-analyses")
def list_analyses_command() -> None:
    """List the analyses a protocol can add to the forward passes (analyses: [...])."""
    from headstats.analyses import ANALYSES, list_analyses

    selectable = set(list_analyses())
    show_registry("analyses (analyses: [...])", [
        {"name": name, "description": spec.description} for name, spec in ANALYSES.items() if name in selectable])


# ------------------------------------------------------------------ large runs: cache, shards, merge (issue 12)

def _execution(shard: Optional[str], cache_dir: Optional[Path], no_cache: bool):
    """The run's :class:`headstats.study.run.Execution` from the CLI options."""
    from headstats.study.run import Execution, parse_shard

    return Execution(cache=not no_cache, cache_dir=str(cache_dir) if cache_dir is not None else None,
                     shard=parse_shard(shard) if shard is not None else None)


cache_app = typer.Typer(cls=_Group, no_args_is_help=True, help="The state cache: what it holds, and removing from it.")
app.add_typer(cache_app, name="cache")


def _cache(cache_dir: Optional[Path]):
    from headstats.engine.cache import StateCache, resolve_cache_root

    return StateCache(resolve_cache_root(cache_dir))


@cache_app.command("info", cls=_Command)
def cache_info(cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=_CACHE_DIR_HELP)) -> None:
    """Where the state cache is, how many chunks it holds and how big it is."""
    with _errors():
        for line in _cache(cache_dir).info().lines():
            typer.echo(line)


@cache_app.command("prune", cls=_Command)
def cache_prune(
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=_CACHE_DIR_HELP),
    older_than: Optional[float] = typer.Option(None, "--older-than", min=0, help="remove chunks unused for this many days"),
    max_size: Optional[float] = typer.Option(None, "--max-size", min=0, help="then keep at most this many MiB (least recently used go first)"),
    all_: bool = typer.Option(False, "--all", help="remove every chunk"),
) -> None:
    """Remove cached chunks (only files the cache wrote; anything else in the folder is left alone)."""
    with _errors():
        if not (all_ or older_than is not None or max_size is not None):
            raise HeadstatsError("say what to remove: --older-than DAYS, --max-size MIB or --all")
        cache = _cache(cache_dir)
        removed, freed = cache.prune(older_than_days=older_than, everything=all_,
                                     max_bytes=int(max_size * 2**20) if max_size is not None else None)
        typer.echo(f"removed {removed} file(s), {freed / 2**20:.1f} MiB, from {cache.root}")


@command()
def merge(
    shards: list[Path] = typer.Argument(..., help="shard folders written by 'headstats run --shard i/n'"),
    out: Path = typer.Option(..., "--out", help="output folder of the merged run"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace an existing output folder"),
    quiet: bool = typer.Option(False, "--quiet", help="no log lines"),
) -> None:
    """Join shard folders into the run one machine would have made (same tables, byte for byte)."""
    with _errors(out) as command:
        _quiet_libraries()
        from headstats.study.merge import merge_shards

        console = _console(quiet)
        result = merge_shards(shards, out, overwrite=overwrite, log=lambda m: console.log(m))
        command.written = True
        if not quiet:
            typer.echo(f"report: {result.out / 'report.html'}")


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
