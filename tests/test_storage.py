"""Output folders: atomic staging, refusal of existing folders, tables and the manifest."""

from __future__ import annotations

import hashlib
import json
import sys
from importlib import metadata

import pandas as pd
import pytest

from headstats.errors import HeadstatsError
from headstats.storage import check_output_folder, file_hashes, staged_output, write_manifest, write_table


def test_failed_block_leaves_nothing(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="boom"):
        with staged_output(out) as stage:
            (stage / "scores.csv").write_text("half written")
            raise RuntimeError("boom")
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # no .run.partial-* sibling either


def test_interrupt_leaves_nothing(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        with staged_output(out) as stage:
            (stage / "x").write_text("x")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_success_renames_into_place(tmp_path):
    out = tmp_path / "nested" / "run"
    with staged_output(out) as stage:
        assert stage.parent == out.parent and stage.name.startswith(".run.partial-")
        assert not out.exists()
        (stage / "a.txt").write_text("done")
    assert (out / "a.txt").read_text() == "done"
    assert sorted(p.name for p in out.parent.iterdir()) == ["run"]


def test_existing_folder_refused_then_replaced(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(HeadstatsError, match="exists; choose another --out or pass --overwrite"):
        with staged_output(out):
            pass
    assert (out / "old.txt").read_text() == "old"
    # a failed overwrite keeps the old folder
    with pytest.raises(ValueError):
        with staged_output(out, overwrite=True) as stage:
            (stage / "new.txt").write_text("new")
            raise ValueError("fail")
    assert sorted(p.name for p in out.iterdir()) == ["old.txt"]
    with staged_output(out, overwrite=True) as stage:
        (stage / "new.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_output_path_that_is_a_file(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(HeadstatsError, match="is a file"):
        check_output_folder(target, overwrite=True)
    assert check_output_folder(tmp_path / "new") == (tmp_path / "new").resolve()


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
