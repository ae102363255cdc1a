"""The commands of a study: ``run``, ``score``, ``validate`` and ``report``, thin layers over
:mod:`headstats.study`. ``validate``, ``run`` and ``score`` run the same checks
(:func:`headstats.study.preflight.preflight`) before any model is loaded or any input read."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from headstats.cli.app import (_CACHE_DIR_HELP, _DATA_ROOT_HELP, _NO_CACHE_HELP, _OVERWRITE_HELP, _QUIET_HELP,
                               _SHARD_HELP, _default_out, _execution, _load, _slug, command, limit_option,
                               set_option)
from headstats.cli.errors import _errors
from headstats.cli.progress import _console, _progress_factory, _quiet_libraries
from headstats.errors import HeadstatsError


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

    sections = {"scoring": schema.ScoreSettings, "statistics": schema.StatisticsOptions,
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
    shard: Optional[str] = typer.Option(None, "--shard", metavar="I/N", help=_SHARD_HELP),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=_CACHE_DIR_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help=_NO_CACHE_HELP),
    limit: Optional[int] = limit_option(),
    set_: Optional[list[str]] = set_option(),
) -> None:
    """Run a protocol end to end: scores, tests, roles, figures, report and manifest."""
    with _errors(out, quiet) as command:
        proto = _load(protocol, data_root, set_, limit)
        command.out = out or _default_out(proto)
        execution = _execution(shard, cache_dir, no_cache)
        _quiet_libraries()
        from headstats.report.builder import build_report
        from headstats.study.run import run_study

        console = _console(quiet)
        result = run_study(proto, out, overwrite=overwrite, log=lambda m: console.log(m),
                           progress=_progress_factory(console, quiet), execution=execution, report=build_report)
        if execution.shard is not None:
            command.written = True
            if not quiet:
                typer.echo(f"shard {execution.shard[0]}/{execution.shard[1]}: {result.out} "
                           "(join the shards with: headstats merge SHARD... --out DIR)")
            return
        command.written = True
        if not quiet:
            _print_summary(result)
            typer.echo(f"report: {result.out / 'report.html'}")


def _print_summary(result) -> None:
    """The end of a run on stdout, per model and data set: the inputs, the heads holding a role, the heads per
    role and the claims' verdicts, wrapped to the terminal's width."""
    import re
    import shutil
    import textwrap

    width = min(shutil.get_terminal_size((100, 24)).columns, 100)
    for row in result.summary_frame().to_dict("records"):
        typer.echo(f"{row['model']} / {row['dataset']}: {row['inputs']} inputs, {row['with a role']} of "
                   f"{row['heads']} heads hold a role")
        for label, text in (("heads per role", row["heads per role"]), ("claims", row.get("claims"))):
            if isinstance(text, str) and text:
                # "block 0", "2 contradicted": a role and its count stay on one line
                kept = re.sub(r"(?<=[^\s,:]) (?=\d)|(?<=\d) (?=[a-z])", "\u00a0", text)
                typer.echo(textwrap.fill(f"{label}: {kept}", width=width, initial_indent="  ",
                                         subsequent_indent="    ", break_on_hyphens=False).replace("\u00a0", " "))


@command()
def score(
    model: str = typer.Option("default", "--model", help="'default', a local directory or a hub id"),
    data: Path = typer.Option(..., "--data", help="data file (.txt, .jsonl, .tsv, .conllu)"),
    format: Optional[str] = typer.Option(None, "--format", help="input format (headstats list-formats); "
                                         "default: from the extension"),
    out: Path = typer.Option(..., "--out", help="output folder"),
    roles: Optional[list[str]] = schema_option("scoring.roles", metavar="ROLES"),
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
    with _errors(out, quiet) as command:
        from pydantic import ValidationError

        from headstats.errors import ProtocolError
        from headstats.config.protocol import Protocol, check_names, validation_message

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
        command.out = out
        _quiet_libraries()
        from headstats.study.run import run_scores

        console = _console(quiet)
        result = run_scores(proto, out, model=model, overwrite=overwrite, log=lambda m: console.log(m),
                            progress=_progress_factory(console, quiet), execution=_execution(None, cache_dir, no_cache))
        command.written = True
        if not quiet:
            typer.echo(f"scores: {result.out / 'scores.parquet'} ({result.scores[0].values.size} rows)")


@command()
def validate(
    protocol: Path = typer.Argument(..., help="YAML protocol file"),
    out: Optional[Path] = typer.Option(None, "--out", help="check this output folder too (default: the "
                                       "protocol's 'output', if it has one)"),
    overwrite: bool = typer.Option(False, "--overwrite/--no-overwrite", help="check as 'run --overwrite' would"),
    data_root: Optional[Path] = typer.Option(None, "--data-root", help=_DATA_ROOT_HELP),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help=_CACHE_DIR_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help=_NO_CACHE_HELP),
    limit: Optional[int] = limit_option(),
    set_: Optional[list[str]] = set_option(),
) -> None:
    """Check a protocol as 'run' does before its work starts, and say what run will do, without loading any model.

    It prints the models run will fine-tune (with their estimated time) and load, and each data set with its
    inputs counted (nothing is parsed); 'ok' means that 'run' with the same options gets past all its checks.
    An output folder that an earlier run wrote passes, with a note that run needs --overwrite.
    """
    with _errors():
        from headstats.study.preview import validate_run
        from headstats.study.plan import cache_root

        proto = _load(protocol, data_root, set_, limit)
        checked = validate_run(proto, out=out, overwrite=overwrite,
                               cache_dir=cache_root(proto, _execution(None, cache_dir, no_cache)))
        typer.echo("run will:")
        changes = ([f"--limit {limit}"] if limit is not None else []) + [f"--set {text}" for text in set_ or []]
        if changes:
            typer.echo(f"  use the protocol with {', '.join(changes)} (kept in protocol.resolved.yaml)")
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
    with _errors(quiet=quiet):
        from headstats.report.builder import rebuild_report

        if not (run_dir / "manifest.json").is_file():
            raise HeadstatsError(f"{str(run_dir)!r} is not a headstats run folder (no manifest.json); "
                                 "give the --out folder of a finished 'headstats run'")
        console = _console(quiet)
        path = rebuild_report(run_dir, top_k=top_k, html=html, formats=None if svg else ["png"],
                              log=lambda m: console.log(m))
        if not quiet:
            typer.echo(f"report: {path}")
