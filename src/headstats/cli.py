"""The ``headstats`` command line: a thin layer over :mod:`headstats.study`.

Every problem with input is reported as one line, ``error: <what> ; <fix>``, with exit status 2 and no
traceback; nothing is left half-written.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer

from headstats.errors import HeadstatsError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="What does each attention head do? Statistics, not averages.")


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


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


@contextmanager
def _errors():
    try:
        yield
    except HeadstatsError as exc:
        _fail(str(exc))
    except FileNotFoundError as exc:
        _fail(f"file not found: {exc.filename}; check the path")


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


@app.command()
def run(
    protocol: Path = typer.Argument(..., help="YAML protocol file"),
    out: Optional[Path] = typer.Option(None, "--out", help="output folder (default: protocol's 'output')"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace an existing output folder"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bars or log lines"),
    data_root: Optional[Path] = typer.Option(None, "--data-root",
                                             help="GLUE data folder; overrides the protocol's data_root"),
) -> None:
    """Run a protocol end to end: scores, tests, roles, figures, report and manifest."""
    with _errors():
        from headstats.protocol import load_protocol

        proto = load_protocol(protocol)
        if data_root is not None:
            if not data_root.is_dir():
                raise HeadstatsError(f"--data-root {str(data_root)!r} is not a folder; give the GLUE data folder")
            proto.data_root = str(data_root.resolve())
        _quiet_libraries()
        from headstats.study import run_study

        console = _console(quiet)
        result = run_study(proto, out, overwrite=overwrite, log=lambda m: console.log(m),
                           progress=_progress_factory(console, quiet))
        if not quiet:
            typer.echo(f"report: {result.out / 'report.html'}")


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
    with _errors():
        import time

        from headstats.protocol import DatasetSpec, ModelSpec, Protocol

        started = time.time()
        if format is not None and format not in ("text", "jsonl", "glue", "conllu"):
            raise HeadstatsError(f"unknown format {format!r}; choose text, jsonl, glue or conllu")
        if not data.exists():
            raise HeadstatsError(f"data file {str(data)!r} does not exist; check the path")
        from headstats.storage import check_output_folder, file_hashes, staged_output, write_manifest, write_table

        check_output_folder(out, overwrite=overwrite)
        proto = Protocol(models=[ModelSpec(name=model)], datasets=[DatasetSpec(name=data.stem, path=str(data), format=format)])
        _quiet_libraries()
        from headstats.models import load_model
        from headstats.pipeline import score_records
        from headstats.scores import ScoreSettings
        from headstats.study import load_data

        console = _console(quiet)
        loaded_data = load_data(proto.datasets[0], proto)
        loaded = load_model(model)
        with _progress_factory(console, quiet)(f"{model} / {data.name}", len(loaded_data.records)) as advance:
            result = score_records(loaded, loaded_data.records, dataset=data.stem, roles=proto.scoring.roles,
                                   settings=ScoreSettings.from_options(proto.scoring), progress=advance)
        with staged_output(out, overwrite=overwrite) as stage:
            write_table(result.scores, stage, "scores", csv=False)
            write_manifest(stage, {"models": {model: loaded.provenance}, "scoring": proto.scoring.model_dump(),
                                   "datasets": {data.stem: loaded_data.info | {"files_sha256": file_hashes([data])}},
                                   "inputs": {f"{model}/{data.stem}": result.counts},
                                   "wall_time_s": round(time.time() - started, 2)})
        if not quiet:
            typer.echo(f"scores: {out / 'scores.parquet'} ({len(result.scores)} rows)")


@app.command()
def validate(protocol: Path = typer.Argument(..., help="YAML protocol file")) -> None:
    """Check a protocol without loading any model."""
    with _errors():
        from headstats.protocol import load_protocol

        proto = load_protocol(protocol)
        for ds in proto.datasets:
            if ds.path is not None and not Path(ds.path).exists():
                raise HeadstatsError(f"data file {ds.path!r} of data set {ds.name!r} does not exist; check the path")
        typer.echo(f"ok: {protocol} ({len(proto.models)} model(s), {len(proto.datasets)} data set(s), "
                   f"{len(proto.scoring.roles)} roles)")


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
    with _errors():
        _quiet_libraries()
        from headstats.finetune import finetune_command

        folder, metrics = finetune_command(
            model, task, out, epochs, lr, batch_size, max_length, train_rows or None, seed, data_root,
            cache_dir=cache_dir, overwrite=overwrite, progress=not quiet,
        )
        shown = ", ".join(f"{k} {v:.3f}" for k, v in metrics.items() if isinstance(v, float))
        typer.echo(f"checkpoint: {folder}" + (f" ({shown})" if shown else ""))


@app.command("list-roles")
def list_roles_command() -> None:
    """List the registered roles (and how to name a syntactic relation)."""
    from headstats.roles import get_role, list_roles

    for name in list_roles():
        spec = get_role(name)
        typer.echo(f"{name:16s} {spec.kind:6s} {'(pairs only) ' if spec.pairs_only else ''}{spec.description}")
    typer.echo("syntactic:<rel>  arc    arcs of one relation, e.g. syntactic:nsubj, syntactic:dobj (UD 'obj' works too)")


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
