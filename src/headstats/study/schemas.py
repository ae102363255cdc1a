"""The schema of a run's tables, written into its manifest, and the check of a run folder against it.

A run folder may come from anywhere (a colleague, an archive, a download) and may have been edited or damaged
since it was written. Every command that reads one checks it first (:func:`check_run_tables`), and refuses it
with one line naming the file and what is wrong, before anything is read into a report or written:

- every table is named by the manifest at a path inside the folder with no symbolic link on the way
  (:func:`headstats.folders.member_path`);
- a table whose size and sha256 are those the manifest recorded (``output_sha256``) is the one the run wrote;
- any other table must still parse (CSV, Parquet), have the columns the run wrote with the same kinds
  (``bool``, ``int``, ``float``, ``str``, ``datetime``; Parquet: the Arrow types) and be finite in every float
  column that was finite when it was written (``table_schemas`` in the manifest, :func:`table_schemas`).

So an edited table that still has the run's shape is read (the report shows the edit), and a damaged one
(a column renamed or missing, text or NaN where numbers were, an empty or binary file, a corrupt Parquet file)
stops the command with exit 2 and changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from headstats.errors import HeadstatsError
from headstats.folders import DIGESTS_KEY, file_digest, member_path

#: Manifest key: table file -> ``{"columns": {name: kind}, "finite": [float columns without NaN or inf]}``.
SCHEMAS_KEY = "table_schemas"
TABLE_SUFFIXES = (".csv", ".parquet")


class DamagedRunError(HeadstatsError):
    """A run folder whose tables are not what its run wrote, and cannot be read as such."""


def read_table_file(path: Path) -> pd.DataFrame:
    """A table file as the report reads it (CSV with pandas' defaults, Parquet with pyarrow)."""
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_csv(path, keep_default_na=True)


def _kind(series: pd.Series) -> str:
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if pd.api.types.is_integer_dtype(dtype):
        return "int"
    if pd.api.types.is_float_dtype(dtype):
        return "float"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    return "str"


def _columns(path: Path, frame: pd.DataFrame) -> dict[str, str]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return {field.name: str(field.type) for field in pq.read_schema(path)}
    return {str(c): _kind(frame[c]) for c in frame.columns}


def _finite_columns(frame: pd.DataFrame) -> list[str]:
    out = []
    for c in frame.columns:
        if pd.api.types.is_float_dtype(frame[c].dtype) and np.isfinite(frame[c].to_numpy(dtype=float)).all():
            out.append(str(c))
    return out


def table_schema(path: Path) -> dict:
    """The columns of a table file with their kinds, and its float columns that are finite throughout."""
    frame = read_table_file(path)
    return {"columns": _columns(path, frame), "finite": _finite_columns(frame)}


def table_schemas(folder: Path) -> dict[str, dict]:
    """:func:`table_schema` of every table (``.csv``, ``.parquet``) at the top of ``folder``."""
    return {p.name: table_schema(p) for p in sorted(folder.iterdir())
            if p.suffix in TABLE_SUFFIXES and p.is_file() and not p.is_symlink()}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160]}" if text else type(exc).__name__


def check_table(run: Path, name: str, manifest: dict) -> None:
    """Check one table file of a run folder (see the module docstring); nothing is changed.

    Raises
    ------
    DamagedRunError
        One line naming the file and what is wrong with it.
    OutputError
        The name leads out of the folder or through a symbolic link.
    """
    path = member_path(run, name, named_by=f"the manifest of {str(run)!r}")
    where = str(path)
    fix = "rerun `headstats run`, or restore the file from the run's copy"
    recorded = (manifest.get(DIGESTS_KEY) or {}).get(name)
    try:
        if isinstance(recorded, dict) and file_digest(path) == {"size": recorded.get("size"),
                                                                "sha256": recorded.get("sha256")}:
            return
    except FileNotFoundError:
        raise DamagedRunError(f"{where} is missing; {fix}") from None
    except OSError as exc:
        raise DamagedRunError(f"{where} cannot be read ({exc.strerror or exc}); {fix}") from None
    schema = (manifest.get(SCHEMAS_KEY) or {}).get(name)
    try:
        frame = read_table_file(path)
        columns = _columns(path, frame)
    except Exception as exc:  # noqa: BLE001 - any reader's error means the same: the file is not a table
        raise DamagedRunError(f"{where} is not a readable {path.suffix[1:].upper()} table ({_first_line(exc)}); "
                              f"{fix}") from None
    if not isinstance(schema, dict):
        return  # a run that recorded no schema (an older headstats): readable is all that can be checked
    wanted = schema.get("columns") or {}
    missing = [c for c in wanted if c not in columns]
    if missing:
        raise DamagedRunError(f"{where} lacks column {missing[0]!r}"
                              + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                              + f" that the run wrote; {fix}")
    extra = [c for c in columns if c not in wanted]
    if extra:
        raise DamagedRunError(f"{where} has column {extra[0]!r}, which the run did not write; {fix}")
    for column, kind in wanted.items():
        if columns[column] != kind:
            raise DamagedRunError(f"{where}: column {column!r} holds {columns[column]} values where the run wrote "
                                  f"{kind}; {fix}")
    for column in schema.get("finite") or []:
        values = frame[column].to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise DamagedRunError(f"{where}: column {column!r} holds {values[bad[0]]} in row {bad[0] + 1} (and "
                                  f"{bad.size - 1} more) where the run wrote finite numbers; {fix}"
                                  if bad.size > 1 else
                                  f"{where}: column {column!r} holds {values[bad[0]]} in row {bad[0] + 1} where the "
                                  f"run wrote finite numbers; {fix}")


def check_run_tables(run: Path, manifest: dict, names: Iterable[str]) -> None:
    """:func:`check_table` for each of ``names`` (the tables a command is about to read)."""
    for name in names:
        check_table(run, name, manifest)
