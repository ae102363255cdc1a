"""The ``headstats`` Typer app, its global options, and what the commands share: help texts, loading a
protocol, the output folder and the execution options."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperCommand, TyperGroup

from headstats.cli.errors import OneLineUsageErrors


#: The word shown for a value of each type in help (``--out PATH``), instead of Typer's ``<path>``/``<list[Path]>``.
_TYPE_WORDS = {Path: "PATH", str: "TEXT", int: "INTEGER", float: "NUMBER"}

#: The order ``headstats --help`` lists the commands in: a new user's first steps first, then the rest as
#: registered (a command not named here keeps its place after these).
COMMAND_ORDER = ("init", "validate", "run", "report", "view", "score")


def _type_word(param) -> str | None:
    """``PATH``, ``TEXT``, ``INTEGER`` or ``NUMBER`` for a parameter's value (its list's element for a list)."""
    import typing

    annotation = param.type_descriptor.annotation
    if typing.get_origin(annotation) in (list, tuple):
        annotation = (typing.get_args(annotation) or (str,))[0]
    return _TYPE_WORDS.get(annotation)


def reflow(text: str | None) -> str | None:
    """Help text with the docstring's line breaks inside a paragraph joined (paragraphs are separated by a blank
    line), so the help is wrapped to the terminal, not broken where the source line ended."""
    if not text:
        return text
    import inspect

    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) if not p.startswith("\b") else p for p in paragraphs)


class _ReadableHelp:
    """Help that reads well at 80 columns: an on/off option shown as a flag (``--quiet``, ``--overwrite /
    --no-overwrite``), a value as ``PATH``, ``TEXT``, ``INTEGER`` or ``NUMBER`` (not Typer's ``<list[Path]>``), an
    argument by its name in capitals (``PROTOCOL``, ``SHARDS...``), and docstrings reflowed (:func:`reflow`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.help = reflow(self.help)

    def get_params(self, ctx):
        params = super().get_params(ctx)
        for param in params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
            elif param.metavar is None and hasattr(param, "type_descriptor"):
                _name_values(param)
        return params


def _name_values(param) -> None:
    """Set the help names of a parameter's values (:class:`_ReadableHelp`), on this parameter only."""
    word = _type_word(param)
    if getattr(param, "param_type_name", "") == "argument":
        name = (param.name or "value").upper() + ("..." if param.nargs != 1 else "")
        param.metavar = name
        param._usage_display_name = lambda: name if param.required else f"[{name}]"
        param.display_type_rich = lambda ctx: None if word == name else word  # not "TEXT TEXT"
    elif word is not None:
        param.metavar = word


class _Command(_ReadableHelp, TyperCommand):
    pass


class _Group(OneLineUsageErrors, _ReadableHelp, TyperGroup):
    def list_commands(self, ctx):
        names = super().list_commands(ctx)
        first = [name for name in COMMAND_ORDER if name in names]
        return first + [name for name in names if name not in first]


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


def _load(protocol: Path, data_root: Optional[Path], sets: Optional[list[str]] = None, limit: Optional[int] = None):
    """Load a protocol with ``--set`` and ``--limit`` applied (:mod:`headstats.config.overrides`), and apply
    ``--data-root`` (as ``run`` and ``validate`` both do)."""
    from headstats.errors import DataError
    from headstats.config.overrides import load_overridden

    proto = load_overridden(protocol, sets or (), limit=limit)
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
_LIMIT_HELP = ("read at most N inputs of every data set (and at most N in the analyses' max_inputs): a quick run "
               "of a large protocol")
_SET_HELP = ("set a protocol key by its dotted path, the value read as YAML (statistics.tau=2, "
             "datasets.NAME.limit=100); repeatable; checked as the file's keys are, kept in protocol.resolved.yaml")


def limit_option():
    """``--limit N`` of ``run`` and ``validate``."""
    return typer.Option(None, "--limit", min=1, metavar="N", help=_LIMIT_HELP, show_default=False)


def set_option():
    """``--set KEY=VALUE`` (repeatable) of ``run`` and ``validate``."""
    return typer.Option(None, "--set", metavar="KEY=VALUE", help=_SET_HELP, show_default=False)


def _execution(shard: Optional[str], cache_dir: Optional[Path], no_cache: bool):
    """The run's :class:`headstats.study.plan.Execution` from the CLI options."""
    from headstats.study.plan import Execution, parse_shard

    return Execution(cache=not no_cache, cache_dir=str(cache_dir) if cache_dir is not None else None,
                     shard=parse_shard(shard) if shard is not None else None)

def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "data"
