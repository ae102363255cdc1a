"""Tables and the manifest (output folders themselves: tests/test_folders.py)."""

from __future__ import annotations

import hashlib
import json
import sys
from importlib import metadata

import pandas as pd

from headstats.study.storage import file_hashes, write_manifest
from headstats.tables.run_tables import write_table


def test_write_table_and_hashes(tmp_path):
    frame = pd.DataFrame({"role": ["local", "block"], "score": [1.5, float("nan")]})
    write_table(frame, tmp_path, "scores")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "scores.parquet"), frame)
    assert (tmp_path / "scores.csv").read_text().splitlines() == ["role,score", "local,1.5", "block,"]
    write_table(frame, tmp_path, "csv_only", parquet=False)
    assert not (tmp_path / "csv_only.parquet").exists() and (tmp_path / "csv_only.csv").exists()
    hashes = file_hashes([tmp_path / "scores.csv", tmp_path / "missing.csv", None])
    assert hashes == {str(tmp_path / "scores.csv"): hashlib.sha256((tmp_path / "scores.csv").read_bytes()).hexdigest()}


def test_manifest_has_versions_and_command(tmp_path):
    import torch
    import transformers

    write_manifest(tmp_path, {"seed": 7, "protocol": {"name": "x"}})
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["seed"] == 7 and manifest["protocol"] == {"name": "x"}
    assert manifest["versions"]["torch"] == torch.__version__
    assert manifest["versions"]["transformers"] == transformers.__version__
    assert manifest["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert manifest["versions"]["headstats"] == metadata.version("headstats")
    assert manifest["command"] == sys.argv


def test_manifest_lists_the_files_written(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "a.png").write_bytes(b"png")
    (tmp_path / "tests.csv").write_text("x")
    write_manifest(tmp_path, {"seed": 0})
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["written_by"] == "headstats"
    assert manifest["output_files"] == ["figures/a.png", "manifest.json", "tests.csv"]
