"""Reading a finished run folder back: its protocol, tests, roles, analysis and comparison tables, and manifest,
checked first against what the run recorded (:mod:`headstats.study.schemas`). No model, no torch: what
``headstats report`` and :func:`headstats.report.builder.rebuild_report` rebuild a report from."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from headstats.assignment.role_assignment import role_columns
from headstats.assignment.tables import Analysis
from headstats.errors import HeadstatsError

#: Tables a run folder must hold for its report to be rebuilt.
REQUIRED_FILES = ("roles.csv", "heads_per_layer.csv", "colocation.csv", "manifest.json", "protocol.resolved.yaml")


def _read_csv(path: Path) -> pd.DataFrame:
    from headstats.study.schemas import from_spreadsheet_safe

    return from_spreadsheet_safe(pd.read_csv(path, keep_default_na=True))


def read_roles(path: Path) -> pd.DataFrame:
    """``roles.csv`` with its role columns as nullable booleans (NA: the role does not apply) and ``roles`` as text."""
    roles = _read_csv(path)
    for col in role_columns(roles):
        roles[col] = roles[col].map(lambda v: pd.NA if pd.isna(v) else str(v).strip().lower() in ("true", "1"))
        roles[col] = roles[col].astype("boolean")
    if "roles" in roles.columns:
        roles["roles"] = roles["roles"].fillna("").astype(str)
    if "robust_across_measures" in roles.columns:  # NA with one measure, or a head holding no role
        roles["robust_across_measures"] = roles["robust_across_measures"].map(
            lambda v: pd.NA if pd.isna(v) else str(v).strip().lower() in ("true", "1")).astype("boolean")
    return roles


def _read_table(run: Path, name: str, present: set[str] | None = None) -> pd.DataFrame:
    parquet, csv = run / f"{name}.parquet", run / f"{name}.csv"
    if (f"{name}.parquet" in present) if present is not None else parquet.is_file():
        return pd.read_parquet(parquet)
    return _read_csv(csv)


def load_run_tables(run_dir: str | Path) -> tuple[object, Analysis, dict, dict]:
    """Read a finished run folder: (protocol, analysis, manifest, comparison tables). No model, no torch.

    The folder is checked first (:func:`headstats.study.schemas.check_run_folder`: its manifest's paths, its
    tables against the schema the run wrote), and only the tables its manifest lists are read.

    Raises
    ------
    HeadstatsError
        When the folder is not a finished headstats run folder (a file is missing, unreadable or damaged), in
        one line naming the file.
    """
    import yaml
    from pydantic import ValidationError

    from headstats.config.protocol import Protocol, upgrade_resolved, validation_message
    from headstats.study.schemas import check_run_folder, run_tables

    run = Path(run_dir)
    if not run.is_dir():
        raise HeadstatsError(f"run folder {str(run)!r} does not exist; give the folder a `headstats run` wrote")
    missing = [f for f in REQUIRED_FILES if not (run / f).is_file()]
    if not (run / "tests.parquet").is_file() and not (run / "tests.csv").is_file():
        missing.insert(0, "tests.csv")
    if missing:
        raise HeadstatsError(f"{str(run)!r} lacks {', '.join(missing)}: it is not a finished headstats run "
                             "folder; rerun `headstats run` to make one")
    manifest = check_run_folder(run, required=[*(f for f in REQUIRED_FILES if f != "manifest.json"),
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
    present = set(run_tables(run, manifest))
    tests = _read_table(run, "tests", present)
    roles = read_roles(run / "roles.csv")
    tables: dict[str, pd.DataFrame] = {}
    comparison: dict[str, pd.DataFrame] = {}
    for file in sorted(present):
        name = file.removesuffix(".csv")
        if not file.endswith(".csv") or name in ("tests", "roles"):
            continue
        if name.startswith("compare_"):
            comparison[name.removeprefix("compare_")] = _read_table(run, name, present)
        else:
            tables[name] = _read_csv(run / file)
    return protocol, Analysis(tests=tests, roles=roles, tables=tables), manifest, comparison
