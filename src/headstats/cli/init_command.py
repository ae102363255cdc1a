"""``headstats init``: a commented protocol for a model and data files, from a survey of the data."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from headstats.cli.app import _slug, command
from headstats.config.protocol import printable
from headstats.cli.errors import _errors
from headstats.cli.progress import _quiet_libraries
from headstats.cli.study_commands import schema_default


# ------------------------------------------------------------------------------------------------- init


def _flow(value) -> str:
    """A value as one line of YAML (lists in flow style); text with a line break or another control character
    as a double-quoted scalar with escapes (a JSON string), which YAML reads back as it was."""
    import json

    import yaml

    if isinstance(value, str) and not value.isprintable():
        return json.dumps(value)

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
    "figures": "for print: width column (3.5 in), text (7 in) or inches; dpi; formats; colour scale per role family",
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
    lines += [f"#   {printable(f.name)}: {f.n_read} inputs, {printable(f.kind)}" for f in found.datasets]
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
        f"#   headstats validate {printable(out)}    checks it without loading any model",
        f"#   headstats run {printable(out)}         scores, tests, figures and report (methods: docs/methods.md)",
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
    lines += _section("scoring", schema.ScoreSettings, scoring)
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
    """Write a commented protocol for a model and data files, from what their first inputs allow.

    Only the roles that apply to the data, a tau per role that their ceilings allow (else scale: mass), every
    other option at its default, with a comment beside each.
    """
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
