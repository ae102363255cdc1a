"""Writing a run's manifest (its tables: :meth:`headstats.tables.RunTables.write`).

Output folders themselves (safety checks, lock, staging, atomic publish) are :mod:`headstats.folders`;
``check_output_folder`` is re-exported here (the preflight's check of an output folder).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


from headstats.folders import WRITTEN_BY, check_output_folder, output_listing
from headstats.model.identity import sha256_file_memo
from headstats.provenance import package_versions

__all__ = ["check_output_folder", "write_manifest", "file_hashes"]


def file_hashes(paths) -> dict[str, str]:
    """sha256 of each existing data file (once per process while its size and modification time stay)."""
    return {str(p): sha256_file_memo(p) for p in paths if p and Path(p).is_file()}


def write_manifest(folder: Path, manifest: dict) -> None:
    """Write ``manifest.json`` last, with the versions, the command line and the list of files written.

    ``written_by``, ``output_files`` and ``output_sha256`` (each file's size and sha256) let a later
    ``--overwrite`` or ``headstats report`` check that the folder holds only what headstats wrote, unchanged
    (:func:`headstats.folders.is_headstats_output`, :func:`headstats.folders.unchanged_outputs`).
    """
    from headstats.tables.schemas import SCHEMAS_KEY, table_schemas

    manifest = {"written_by": WRITTEN_BY, **manifest, "versions": package_versions(), "command": sys.argv,
                **output_listing(folder), SCHEMAS_KEY: table_schemas(folder)}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
