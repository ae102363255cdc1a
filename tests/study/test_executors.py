"""The Ray executor: shards on a local Ray cluster started by the test give the local executor's tables, byte
for byte. Skipped when Ray is not installed (``pip install 'headstats[ray]'``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from headstats.cli.main import app

ray = pytest.importorskip("ray", reason="the Ray executor needs Ray: pip install 'headstats[ray]'")

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"
runner = CliRunner()


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory):
    """A local Ray cluster of 2 CPUs on this machine (the run joins it: no address in the protocol), its
    workers at this process' priority as a run's own cluster (Ray's nice 15 starved them on a shared machine)."""
    import os

    from headstats.config.protocol import ExecutionOptions
    from headstats.study.executors import ray_init_kwargs

    os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
    ray.init(**ray_init_kwargs(ExecutionOptions(workers=2)), _temp_dir=str(tmp_path_factory.mktemp("ray")))
    yield
    ray.shutdown()


def protocol(folder: Path, model: Path, **execution) -> Path:
    raw = {
        "name": "ray",
        "models": [{"name": "tiny", "path": str(model)}],
        "datasets": [{"name": "single", "path": str(DEMO / "sentences.txt"), "limit": 20},
                     {"name": "pairs", "path": str(DEMO / "pairs.txt"), "limit": 6}],
        "scoring": {"batch_size": 4, "roles": ["local", "delimiter", "block"]},
        "statistics": {"tau": 1.0, "sensitivity": False, "n_resamples": 99},
        "analyses": ["entropy"],
        "execution": {"chunk_size": 5, **execution},
    }
    path = folder / "protocol.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def tables(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".parquet")}


def test_two_ray_workers_give_the_local_tables(tmp_path, tiny_model_dir, local_cluster):
    local = protocol(tmp_path, tiny_model_dir)
    result = runner.invoke(app, ["run", str(local), "--out", str(tmp_path / "local"), "--no-cache", "--quiet"])
    assert result.exit_code == 0, result.output
    (tmp_path / "r").mkdir()
    remote = protocol(tmp_path / "r", tiny_model_dir, executor="ray", workers=2)
    result = runner.invoke(app, ["run", str(remote), "--out", str(tmp_path / "ray"), "--no-cache", "--quiet"])
    assert result.exit_code == 0, result.output
    expected = tables(tmp_path / "local")
    assert "scores.parquet" in expected and "entropy.csv" in expected
    assert tables(tmp_path / "ray") == expected
    execution = json.loads((tmp_path / "ray" / "manifest.json").read_text())["execution"]
    assert execution["executor"] == "ray" and execution["workers"] == 2
    assert execution["model_loads"] == 2  # one model per worker, loaded once by each
    assert execution["chunks_run"] == 4 + 2  # 20 records in chunks of 5, and 6 in chunks of 5
