"""Large runs: ``headstats cache info|prune`` and ``headstats merge``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from headstats.cli.app import _CACHE_DIR_HELP, _Command, _Group, app, command
from headstats.cli.errors import _errors
from headstats.cli.progress import _console, _quiet_libraries
from headstats.errors import HeadstatsError


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
    with _errors(out, quiet) as command:
        _quiet_libraries()
        from headstats.report.builder import build_report
        from headstats.study.merge import merge_shards

        console = _console(quiet)
        result = merge_shards(shards, out, overwrite=overwrite, log=lambda m: console.log(m), report=build_report)
        command.written = True
        if not quiet:
            typer.echo(f"report: {result.out / 'report.html'}")
