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

from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pandas as pd

from headstats.errors import HeadstatsError, OutputError
from headstats.folders import DIGESTS_KEY, FILES_KEY, WRITTEN_BY, file_digest, manifest_of, member_path

#: Manifest key: table file -> ``{"columns": {name: kind}, "finite": [float columns without NaN or inf]}``.
SCHEMAS_KEY = "table_schemas"
TABLE_SUFFIXES = (".csv", ".parquet")


class DamagedRunError(HeadstatsError):
    """A run folder whose tables are not what its run wrote, and cannot be read as such."""


#: Text that a spreadsheet would read as a formula (OWASP "CSV injection"), and the quote that keeps it text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
    prefixed with ``'`` (so that a spreadsheet shows it as text instead of running it as a formula), and a cell
    that starts with ``'`` given one more (so that :func:`from_spreadsheet_safe` undoes exactly this). Only text
    columns are touched: numbers, booleans and missing values never are."""
    out = None
    for name in frame.columns:
        column = frame[name]
        if column.dtype != object and not pd.api.types.is_string_dtype(column.dtype):
            continue
        text = _starts_a_formula(column)
        if text.any():
            out = frame.copy() if out is None else out
            out[name] = column.where(~text, "'" + column.astype(str))
    return frame if out is None else out


def _text_starting(column: pd.Series, start: str | tuple[str, ...]) -> pd.Series:
    """Which cells of a text column are text that starts with ``start``: each distinct value looked at once (a
    table's text columns repeat a few names over many rows), every cell one look-up."""
    try:
        starts = [v for v in pd.unique(column.to_numpy(object)) if isinstance(v, str) and v.startswith(start)]
    except TypeError:  # cells that cannot be hashed (lists): one by one
        return column.map(lambda v: isinstance(v, str) and v.startswith(start))
    return column.isin(starts) if starts else pd.Series(False, index=column.index)


def _starts_a_formula(column: pd.Series) -> pd.Series:
    """Which cells of a text column are text that starts like a formula (:data:`_FORMULA_START`)."""
    return _text_starting(column, _FORMULA_START)


def from_spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """The text cells of a CSV written with :func:`spreadsheet_safe` as they were (one leading ``'`` removed)."""
    for name in frame.columns:
        column = frame[name]
        if column.dtype == object or pd.api.types.is_string_dtype(column.dtype):
            quoted = _text_starting(column, "'")
            if quoted.any():
                frame[name] = column.where(~quoted, column.astype(str).str[1:])
    return frame



def read_table_file(path: Path) -> pd.DataFrame:
    """A table file as the report reads it (CSV with pandas' defaults, Parquet with pyarrow)."""
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return from_spreadsheet_safe(pd.read_csv(path, keep_default_na=True))


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


def check_table(run: Path, name: str, manifest: dict) -> bool:
    """Check one table file of a run folder (see the module docstring); nothing is changed. Returns whether the
    file is still the one the run wrote (its recorded size and sha256), False for an edited one that passed.

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
            return True
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
        return False  # a run that recorded no schema (an older headstats): readable is all that can be checked
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
    return False


def check_run_tables(run: Path, manifest: dict, names: Iterable[str]) -> list[str]:
    """:func:`check_table` for each of ``names`` (the tables a command is about to read); returns those that are
    no longer as the run wrote them (edited, but of the run's shape)."""
    return [name for name in names if not check_table(run, name, manifest)]


def read_run_manifest(run: Path) -> dict:
    """The manifest of a run folder, checked: a JSON object written by headstats, every path it lists inside the
    folder with no symbolic link on the way (``figures/`` included).

    Raises
    ------
    OutputError
        One line naming the folder or the path and what is wrong.
    """
    import json

    path = member_path(run, "manifest.json", named_by=f"the run folder {str(run)!r}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise OutputError(f"the manifest of {str(run)!r} cannot be read ({_first_line(exc)}); it is not a finished "
                          "headstats run folder; rerun `headstats run`") from None
    if not isinstance(manifest, dict) or manifest.get("written_by", WRITTEN_BY) != WRITTEN_BY:
        raise OutputError(f"{str(run)!r} was not written by headstats (its manifest.json is not headstats'); "
                          "give a folder `headstats run` wrote")
    named_by = f"the manifest of {str(run)!r}"
    listed = manifest.get(FILES_KEY)
    if listed is not None and not isinstance(listed, list):
        raise OutputError(f"{named_by} holds no list of output files; rerun `headstats run`")
    recorded = manifest.get(DIGESTS_KEY)
    if recorded is not None and not isinstance(recorded, dict):
        raise OutputError(f"{named_by} holds no checksums of its output files; rerun `headstats run`")
    for rel in [*(listed or []), *(recorded or {})]:
        member_path(run, rel, named_by=named_by)
    member_path(run, "figures", named_by=f"the run folder {str(run)!r}")
    return manifest


def run_tables(run: Path, manifest: dict) -> list[str]:
    """The table files of a run folder that a command reads: those its manifest lists at the top of the folder
    (a run of an older headstats that listed none: every table there)."""
    listed = manifest.get(FILES_KEY)
    if isinstance(listed, list):
        names = [f for f in listed if isinstance(f, str) and "/" not in f]
    else:
        names = [p.name for p in run.iterdir()]
    return sorted(f for f in names if f.endswith(TABLE_SUFFIXES) and ((run / f).exists() or (run / f).is_symlink()))


def check_run_folder(run: Path, *, required: Iterable[str | tuple[str, ...]] = ()) -> dict:
    """Check a run folder before a command reads it (:func:`read_run_manifest`, then :func:`check_table` for every
    table it reads) and return its manifest. Nothing is changed.

    Parameters
    ----------
    run : Path
        The run folder.
    required : names, or tuples of names of which one will do
        Files the command reads whatever the manifest lists (``roles.csv``, ``protocol.resolved.yaml``, ``tests.csv``
        or ``tests.parquet``): each is checked like a listed one (inside the folder, no symbolic link on the way,
        a table against its schema), and a manifest that lists its files must list it (a manifest that leaves
        out a file every run writes is not that run's).

    Raises
    ------
    DamagedRunError, OutputError
        One line naming the file and what is wrong.
    """
    manifest = read_run_manifest(run)
    listed = manifest.get(FILES_KEY)
    named_by = f"the run folder {str(run)!r}"
    read: list[str] = []
    for names in required:
        names = (names,) if isinstance(names, str) else tuple(names)
        for name in names:
            member_path(run, name, named_by=named_by)
        if isinstance(listed, list) and not set(names) & set(listed):
            raise DamagedRunError(f"the manifest of {str(run)!r} does not list {' or '.join(names)}, which every "
                                  "run writes: it is not this run's manifest; rerun `headstats run`")
        read += [n for n in names if n.endswith(TABLE_SUFFIXES) and (not isinstance(listed, list) or n in listed)]
    if isinstance(listed, list):
        missing = [f for f in listed if isinstance(f, str) and f.endswith(TABLE_SUFFIXES) and "/" not in f
                   and not (run / f).exists() and not (run / f).is_symlink()]
        if missing:
            raise DamagedRunError(f"{str(run / missing[0])} is missing (the run wrote it); rerun `headstats run`, "
                                  "or restore the file from the run's copy")
    tables = sorted(set(run_tables(run, manifest)) | {n for n in read if (run / n).exists() or (run / n).is_symlink()})
    edited = check_run_tables(run, manifest, tables)
    if edited and isinstance(manifest.get(DIGESTS_KEY), dict):
        import warnings

        them, are = ("them", "they are") if len(edited) > 1 else ("it", "it is")
        warnings.warn(f"{', '.join(edited[:3])}{' and more' if len(edited) > 3 else ''} of {run} changed since the "
                      f"run wrote {them} (not the sha256 it recorded); read as {are} now", stacklevel=2)
    return manifest


@contextmanager
def unchecked_tables_fail_in_one_line(run: Path) -> Iterator[None]:
    """Reading a run whose manifest records no schema of its tables (an older headstats, or a manifest stripped of
    it) can only check that they parse; a column the report needs that is missing, or text where it computes,
    then surfaces deep in the report as a ``KeyError``, ``ValueError`` or ``TypeError``. Inside this block such an
    error becomes the one line of a damaged run folder (:class:`DamagedRunError`); with a recorded schema the
    tables were checked, and any error is a defect of headstats and goes on as it is."""
    try:
        yield
    except HeadstatsError:
        raise
    except (KeyError, ValueError, TypeError, IndexError, AttributeError) as exc:
        if isinstance((manifest_of(run) or {}).get(SCHEMAS_KEY), dict):
            raise
        raise DamagedRunError(f"the tables of {str(run)!r} are not those of a headstats run ({_first_line(exc)}), "
                              "and its manifest records no schema to check them against (an older headstats); "
                              "rerun `headstats run`") from None
