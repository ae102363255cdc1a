"""The ``headstats`` command line: a thin layer over :mod:`headstats.study.run`.

Every problem with input is reported as one line, ``error: <what> ; <fix>``, with exit status 2 and no
traceback; nothing is left half-written. Ctrl-C and SIGTERM stop a command with one line too (exit 130 and
143), after the staging folder is removed. ``validate``, ``run`` and ``score`` run the same checks
(:func:`headstats.study.preflight.preflight`) before any model is loaded or any input read.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import typer

from headstats.errors import HeadstatsError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="What does each attention head do? Statistics, not averages.")

#: Exit statuses: bad input, Ctrl-C (128 + SIGINT) and SIGTERM (128 + SIGTERM).
EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_TERMINATED = 2, 130, 143


class Terminated(BaseException):
    """Raised in the main thread when the process gets SIGTERM.

    A ``BaseException`` like ``KeyboardInterrupt``, so that the cleanup that runs on Ctrl-C (``finally`` and
    ``except BaseException`` blocks, e.g. removing the staging folder) runs on SIGTERM too.
    """


def _quiet_libraries() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
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
class _Command:
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


#: errno -> (what happened, the fix) for the OSErrors that mean "cannot write there".
_WRITE_ERRORS = {
    errno.ENOSPC: ("no space left on device", "free some space or choose another --out"),
    errno.EDQUOT: ("disk quota exceeded", "free some space or choose another --out"),
    errno.EROFS: ("read-only file system", "choose another --out on a writable disk"),
    errno.EACCES: ("permission denied", "choose another --out or fix the folder's permissions"),
}
_WRITE_ERROR_TEXTS = {"no space left on device": errno.ENOSPC, "disk quota exceeded": errno.EDQUOT,
                      "read-only file system": errno.EROFS, "permission denied": errno.EACCES}


def _write_error_message(exc: OSError, command: _Command) -> str | None:
    """One line for an OSError that means a full, read-only or forbidden disk; None for any other."""
    code = exc.errno
    if code not in _WRITE_ERRORS:  # pyarrow and others raise OSError with the reason only in the text
        text = str(exc).lower()
        code = next((c for t, c in _WRITE_ERROR_TEXTS.items() if t in text), None)
    if code is None:
        return None
    reason, fix = _WRITE_ERRORS[code]
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


@contextmanager
def _errors(out: Path | None = None) -> Iterator[_Command]:
    """Turn bad input, Ctrl-C, SIGTERM and a full or read-only disk into one line and an exit status.

    Yields a :class:`_Command` whose ``out`` the command sets once it knows its output folder. Any other
    exception is a bug and keeps its traceback.
    """
    command = _Command(out)
    try:
        with _sigterm_raises():
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

    return Console(stderr=True, quiet=quiet)


def _progress_factory(console, quiet: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    @contextmanager
    def factory(description: str, total: int):
        if quiet:
            yield lambda n: None
            return
        columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[rate]}"), TimeElapsedColumn()]
        with Progress(*columns, console=console, transient=False) as bar:
            task = bar.add_task(description, total=total, rate="")

            def advance(n: int) -> None:
                bar.advance(task, n)
                speed = bar.tasks[task].speed
                bar.update(task, rate=f"{speed:6.1f} inputs/s" if speed else "")

            yield advance

    return factory


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
# options of large runs (issue 12; their commands are at the end of this file)
_SHARD_HELP = "run only part i of n of the inputs (e.g. 1/4) and write a shard folder; join with 'headstats merge'"
_CACHE_DIR_HELP = ("state cache folder (default: the protocol's cache_dir, $HEADSTATS_CACHE_DIR, "
                   "$XDG_CACHE_HOME/headstats or ~/.cache/headstats)")
_NO_CACHE_HELP = "neither read nor write the state cache (every forward pass runs)"


@app.command()
def run(
    protocol: Path = typer.Argument(..., help="YAML protocol file"),
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: protocol's 'output')"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace an existing output folder"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bars or log lines"),
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


def _nothing_scored(counts: dict, dataset: str) -> None:
    """Refuse a data set of which no input could be scored (as ``run`` does), instead of an empty table."""
    from headstats.errors import DataError

    if counts["n_scored"] == 0:
        raise DataError(
            f"no input of data set {dataset!r} could be scored ({counts['skipped']}); "
            "raise scoring.max_length or set scoring.too_long: truncate"
        )


@app.command()
def score(
    model: str = typer.Option("default", "--model", help="'default', a local directory or a hub id"),
    data: Path = typer.Option(..., "--data", help="data file (.txt, .jsonl, .tsv, .conllu)"),
    format: Optional[str] = typer.Option(None, "--format", help="text, jsonl, glue or conllu"),
    out: Path = typer.Option(..., "--out", help="output folder"),
    overwrite: bool = typer.Option(False, "--overwrite"),
    quiet: bool = typer.Option(False, "--quiet"),
) -> None:
    """Score one data file with default options: writes scores.parquet and manifest.json."""
    with _errors(out) as command:
        import time

        from pydantic import ValidationError

        from headstats.errors import ProtocolError
        from headstats.study.preflight import preflight
        from headstats.config.protocol import Protocol, validation_message

        started = time.time()
        if format is not None and format not in ("text", "jsonl", "glue", "conllu"):
            raise ProtocolError(f"unknown format {format!r}; choose text, jsonl, glue or conllu")
        try:
            # the model's name is not used in any file name here; its source is checked as given
            proto = Protocol.model_validate({"models": [{"name": "model", "path": model}], "datasets": [
                {"name": data.stem, "path": str(data), "format": format}]})
        except ValidationError as exc:
            raise ProtocolError(validation_message(exc, what="score options")) from None
        out = preflight(proto, out=out, overwrite=overwrite)
        command.out = out
        from headstats.folders import claim_output
        from headstats.study.storage import file_hashes, write_manifest

        _quiet_libraries()
        from headstats.model.loading import load_model
        from headstats.study.scoring import score_records, write_scores
        from headstats.analyses.sieves import ScoreSettings
        from headstats.study.run import load_data

        console = _console(quiet)
        with claim_output(out, overwrite=overwrite) as claim:
            loaded_data = load_data(proto.datasets[0], proto)
            loaded = load_model(model)
            with _progress_factory(console, quiet)(f"{model} / {data.name}", len(loaded_data.records)) as advance:
                result = score_records(loaded, loaded_data.records, dataset=data.stem, roles=proto.scoring.roles,
                                       settings=ScoreSettings.from_options(proto.scoring),
                                       max_length=proto.scoring.max_length, too_long=proto.scoring.too_long,
                                       batch_size=proto.scoring.batch_size, progress=advance)
            counts = loaded_data.counted(result.counts)
            _nothing_scored(counts, data.stem)
            n_rows = write_scores([result.array], claim.staging / "scores.parquet")
            write_manifest(claim.staging, {
                "models": {model: loaded.provenance}, "scoring": proto.scoring.model_dump(),
                "datasets": {data.stem: loaded_data.info | {"files_sha256": file_hashes([data])}},
                "inputs": {f"{model}/{data.stem}": counts | {"model": model, "dataset": data.stem}},
                "wall_time_s": round(time.time() - started, 2)})
            claim.publish()
        command.written = True
        if not quiet:
            typer.echo(f"scores: {out / 'scores.parquet'} ({n_rows} rows)")


@app.command()
def validate(
    protocol: Path = typer.Argument(..., help="YAML protocol file"),
    out: Optional[Path] = typer.Option(None, "--out", help="check this output folder too (default: the "
                                       "protocol's 'output', if it has one)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="as 'run --overwrite' would"),
    data_root: Optional[Path] = typer.Option(None, "--data-root", help=_DATA_ROOT_HELP),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=_CACHE_DIR_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help=_NO_CACHE_HELP),
) -> None:
    """Check a protocol as 'run' does before its work starts, without loading any model or reading any input.

    'ok' means that 'run' with the same options gets past all its checks.
    """
    with _errors():
        from headstats.study.preflight import preflight
        from headstats.study.run import cache_root

        proto = _load(protocol, data_root)
        checked = preflight(proto, out=out, overwrite=overwrite,
                            cache_dir=cache_root(proto, _execution(None, cache_dir, no_cache)))
        where = f"; output {checked}" if checked is not None else ""
        typer.echo(f"ok: {protocol} ({len(proto.models)} model(s), {len(proto.datasets)} data set(s), "
                   f"{len(proto.scoring.roles)} roles{where})")


@app.command()
def report(
    run_dir: Path = typer.Argument(..., help="a finished run's output folder"),
    top_k: Optional[int] = typer.Option(None, "--top-k", min=1, help="strongest heads per role to list"),
    html: bool = typer.Option(True, "--html/--no-html", help="write report.html beside report.md"),
) -> None:
    """Rebuild a run's report and figures from its tables, without loading any model."""
    with _errors():
        from headstats.report.builder import rebuild_report

        if not (run_dir / "manifest.json").is_file():
            raise HeadstatsError(f"{str(run_dir)!r} is not a headstats run folder (no manifest.json); "
                                 "give the --out folder of a finished 'headstats run'")
        path = rebuild_report(run_dir, top_k=top_k, html=html)
        typer.echo(f"report: {path}")


#: FinetuneRecipe field -> the finetune command's option, for one-line messages.
_FINETUNE_OPTIONS = {"epochs": "--epochs", "learning_rate": "--lr", "batch_size": "--batch-size",
                     "max_length": "--max-length", "train_rows": "--train-rows", "seed": "--seed",
                     "base": "--model", "task": "--task"}


@app.command()
def finetune(
    model: str = typer.Option("default", "--model", help="base model: 'default', a directory or a hub id"),
    task: str = typer.Option(..., "--task", help="GLUE task: sst2, mrpc, qqp, qnli, rte, cola, ..."),
    out: Optional[Path] = typer.Option(None, "--out", help="checkpoint folder (default: reuse or build in the cache)"),
    epochs: float = typer.Option(1.0, "--epochs"),
    lr: float = typer.Option(3e-5, "--lr", help="learning rate"),
    batch_size: int = typer.Option(16, "--batch-size"),
    max_length: int = typer.Option(64, "--max-length"),
    train_rows: Optional[int] = typer.Option(2000, "--train-rows", help="training rows (seeded sample); 0 = all"),
    seed: int = typer.Option(0, "--seed"),
    data_root: Optional[Path] = typer.Option(None, "--data-root", envvar="HEADSTATS_GLUE_ROOT",
                                             help="GLUE folder (<root>/SST-2/train.tsv, ...)"),
    cache_dir: Path = typer.Option(Path(".headstats_cache"), "--cache-dir"),
    overwrite: bool = typer.Option(False, "--overwrite"),
    quiet: bool = typer.Option(False, "--quiet"),
) -> None:
    """Fine-tune a sequence-classification head on a GLUE task with a seeded, recorded recipe."""
    with _errors(out) as command:
        from pydantic import ValidationError

        from headstats.errors import ProtocolError
        from headstats.study.preflight import check_finetune
        from headstats.config.protocol import FinetuneRecipe, printable

        try:
            recipe = FinetuneRecipe(base=model, task=task, epochs=epochs, learning_rate=lr, batch_size=batch_size,
                                    max_length=max_length, train_rows=train_rows or None, seed=seed)
        except ValidationError as exc:
            first = exc.errors()[0]
            option = _FINETUNE_OPTIONS.get(str(first["loc"][0]), str(first["loc"][0]))
            raise ProtocolError(f"invalid {option} {printable(first.get('input'))}: "
                                f"{printable(first['msg'].removeprefix('Value error, '))}") from None
        check_finetune(recipe, data_root=data_root)
        _quiet_libraries()
        from headstats.model.finetune import finetune_command

        folder, metrics = finetune_command(
            model, task, out, epochs, lr, batch_size, max_length, train_rows or None, seed, data_root,
            cache_dir=cache_dir, overwrite=overwrite, progress=not quiet,
        )
        command.out, command.written = folder, True
        shown = ", ".join(f"{k} {v:.3f}" for k, v in metrics.items() if isinstance(v, float))
        typer.echo(f"checkpoint: {folder}" + (f" ({shown})" if shown else ""))


@app.command("list-roles")
def list_roles_command() -> None:
    """List the registered roles (and how to name a syntactic relation)."""
    from headstats.analyses.roles import get_role, list_roles

    for name in list_roles():
        spec = get_role(name)
        typer.echo(f"{name:16s} {spec.kind:6s} {'(pairs only) ' if spec.pairs_only else ''}{spec.description}")
    typer.echo("syntactic:<rel>  arc    arcs of one relation, e.g. syntactic:nsubj, syntactic:dobj (UD 'obj' works too)")


# ------------------------------------------------------------------ large runs: cache, shards, merge (issue 12)

def _execution(shard: Optional[str], cache_dir: Optional[Path], no_cache: bool):
    """The run's :class:`headstats.study.run.Execution` from the CLI options."""
    from headstats.study.run import Execution, parse_shard

    return Execution(cache=not no_cache, cache_dir=str(cache_dir) if cache_dir is not None else None,
                     shard=parse_shard(shard) if shard is not None else None)


cache_app = typer.Typer(no_args_is_help=True, help="The state cache: what it holds, and removing from it.")
app.add_typer(cache_app, name="cache")


def _cache(cache_dir: Optional[Path]):
    from headstats.engine.cache import StateCache, resolve_cache_root

    return StateCache(resolve_cache_root(cache_dir))


@cache_app.command("info")
def cache_info(cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=_CACHE_DIR_HELP)) -> None:
    """Where the state cache is, how many chunks it holds and how big it is."""
    with _errors():
        for line in _cache(cache_dir).info().lines():
            typer.echo(line)


@cache_app.command("prune")
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


@app.command()
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
