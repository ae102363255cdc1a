"""Reading a finished run folder back: its protocol, its tables (:class:`headstats.tables.RunTables`) and manifest,
checked first against what the run recorded (:mod:`headstats.tables.schemas`). No model, no torch: what
``headstats report`` and :func:`headstats.report.builder.rebuild_report` rebuild a report from."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from headstats.tables.study_tables import role_columns
from headstats.errors import HeadstatsError
from headstats.tables import RunTables

#: Tables a run folder must hold for its report to be rebuilt.
REQUIRED_FILES = ("roles.csv", "heads_per_layer.csv", "colocation.csv", "manifest.json", "protocol.resolved.yaml")


def typed_roles(roles: pd.DataFrame) -> pd.DataFrame:
    """The role table as read from ``roles.csv`` with its role columns as nullable booleans (NA: the role does not
    apply) and ``roles`` as text."""
    for col in role_columns(roles):
        roles[col] = roles[col].map(lambda v: pd.NA if pd.isna(v) else str(v).strip().lower() in ("true", "1"))
        roles[col] = roles[col].astype("boolean")
    if "roles" in roles.columns:
        roles["roles"] = roles["roles"].astype(object).fillna("").astype(str)  # all-empty: read as float
    if "robust_across_measures" in roles.columns:  # NA with one measure, or a head holding no role
        roles["robust_across_measures"] = roles["robust_across_measures"].map(
            lambda v: pd.NA if pd.isna(v) else str(v).strip().lower() in ("true", "1")).astype("boolean")
    return roles


def read_roles(path: Path) -> pd.DataFrame:
    """``roles.csv`` read as :func:`typed_roles` gives it."""
    from headstats.tables.schemas import read_table_file

    return typed_roles(read_table_file(Path(path)))


def load_run_tables(run_dir: str | Path) -> tuple[object, RunTables, dict]:
    """Read a finished run folder: (protocol, its tables, manifest). No model, no torch.

    The folder is checked first (:meth:`headstats.tables.RunTables.read`: its manifest's paths, its tables against
    the schema the run wrote), and only the tables its manifest lists are read.

    Raises
    ------
    HeadstatsError
        When the folder is not a finished headstats run folder (a file is missing, unreadable or damaged), in
        one line naming the file.
    """
    import yaml
    from pydantic import ValidationError

    from headstats.analyses import list_analyses
    from headstats.config.protocol import Protocol, upgrade_resolved, validation_message

    run = Path(run_dir)
    if not run.is_dir():
        raise HeadstatsError(f"run folder {str(run)!r} does not exist; give the folder a `headstats run` wrote")
    missing = [f for f in REQUIRED_FILES if not (run / f).is_file()]
    if not (run / "tests.parquet").is_file() and not (run / "tests.csv").is_file():
        missing.insert(0, "tests.csv")
    if missing:
        raise HeadstatsError(f"{str(run)!r} lacks {', '.join(missing)}: it is not a finished headstats run "
                             "folder; rerun `headstats run`")
    list_analyses()  # every analysis' tables declared, so that each table read is known as its analysis'
    tables, manifest = RunTables.read(run, required=[*(f for f in REQUIRED_FILES if f != "manifest.json"),
                                                     ("tests.csv", "tests.parquet")])
    where = run / "protocol.resolved.yaml"  # checked above: inside the run, no link on the way
    try:
        raw = yaml.safe_load(where.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise ValueError(f"it holds a {type(raw).__name__}, not a mapping")
        protocol = Protocol.model_validate(upgrade_resolved(raw))  # runs written before options moved too
    except ValidationError as exc:
        raise HeadstatsError(f"{str(where)} is damaged: {validation_message(exc, what='protocol')}; rerun "
                             "`headstats run`") from None
    except Exception as exc:  # noqa: BLE001 - any unreadable file means the same to the user
        text = " ".join(str(exc).split())[:200]
        raise HeadstatsError(f"{str(where)} cannot be read ({type(exc).__name__}: {text}); rerun "
                             "`headstats run`") from None
    return protocol, tables.replaced({"roles": typed_roles(tables["roles"])}), manifest
