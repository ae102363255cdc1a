"""The ``headstats`` Typer app, its global options, and what the commands share: help texts, loading a
protocol, the output folder and the execution options."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperCommand, TyperGroup

from headstats.cli.errors import OneLineUsageErrors


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


class _Group(OneLineUsageErrors, _FlagsAsFlags, TyperGroup):
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


def _execution(shard: Optional[str], cache_dir: Optional[Path], no_cache: bool):
    """The run's :class:`headstats.study.plan.Execution` from the CLI options."""
    from headstats.study.plan import Execution, parse_shard

    return Execution(cache=not no_cache, cache_dir=str(cache_dir) if cache_dir is not None else None,
                     shard=parse_shard(shard) if shard is not None else None)

def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "data"
