"""Large runs end to end: shards merged, a statistics-only re-run, and a run killed with ``kill -9`` and resumed
all write tables byte-identical to one uninterrupted run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from conftest import build_tiny_bert
from headstats.cli.main import app
from headstats.errors import IncompatibleResultsError, OutputError

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"
runner = CliRunner()


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny_model_dir):
    other = build_tiny_bert(tmp_path_factory.mktemp("merge_other") / "tuned", seed=1)
    return tiny_model_dir, other


def write_protocol(folder: Path, models, **overrides) -> Path:
    base, tuned = models
    protocol = {
        "name": "large",
        "models": [{"name": "base", "path": str(base)}, {"name": "tuned", "path": str(tuned)}],
        "datasets": [{"name": "single", "path": str(DEMO / "sentences.txt"), "limit": 30},
                     {"name": "pairs", "path": str(DEMO / "pairs.txt"), "limit": 9}],
        "scoring": {"batch_size": 3, "roles": ["local", "delimiter", "delimiter_cls", "block"]},
        "statistics": {"tau": 1.0, "sensitivity": False, "n_resamples": 99},
        "compare": [{"base": "base", "finetuned": ["tuned"]}],
        "analyses": ["entropy"],
        "execution": {"chunk_size": 4},
        "report": {"html": False, "figures": {"formats": ["png"], "dpi": 72}},  # the merge tests read tables
    }
    for key, value in overrides.items():
        protocol[key] = {**protocol[key], **value} if isinstance(value, dict) else value
    path = folder / "protocol.yaml"
    path.write_text(yaml.safe_dump(protocol))
    return path


def tables(folder: Path) -> dict[str, bytes]:
    """Every table of a run folder (CSV and Parquet), as bytes."""
    found = {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".parquet")}
    assert "scores.parquet" in found and "tests.csv" in found and "compare_similarity.csv" in found and "entropy.csv" in found
    return found


def cli(*args: str) -> None:
    result = runner.invoke(app, [*map(str, args), "--quiet"])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def reference(tmp_path_factory, models):
    """One uninterrupted run without the cache."""
    folder = tmp_path_factory.mktemp("reference")
    protocol = write_protocol(folder, models)
    cli("run", protocol, "--out", folder / "out", "--no-cache")
    return folder / "out"


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def test_shards_merge_into_byte_identical_tables(tmp_path, models, reference):
    protocol = write_protocol(tmp_path, models)
    for i in (1, 2, 3):
        cli("run", protocol, "--shard", f"{i}/3", "--out", tmp_path / f"shard{i}", "--no-cache")
    shard = manifest(tmp_path / "shard2")
    assert shard["headstats_shard"]["index"] == 2 and shard["written_by"] == "headstats"
    # 8 chunks of 'single' (30 records by 4) -> chunks 2..4 in shard 2 of 3
    assert shard["headstats_shard"]["chunks"]["pande_roles:base:single"] == [2, 3, 4]
    cli("merge", tmp_path / "shard3", tmp_path / "shard1", tmp_path / "shard2", "--out", tmp_path / "merged")
    assert tables(tmp_path / "merged") == tables(reference)
    merged, whole = manifest(tmp_path / "merged"), manifest(reference)
    assert merged["inputs"] == whole["inputs"] and merged["models"] == whole["models"]
    assert merged["datasets"] == whole["datasets"]
    # the attention path of each model's states: the same in the merge as in the run (fused-sdpa: every pass)
    assert merged["execution"]["attention"] == whole["execution"]["attention"] == {"base": "fused-sdpa/2",
                                                                                 "tuned": "fused-sdpa/2"}


def test_merge_refuses_shards_that_are_not_one_run(tmp_path, models):
    from headstats.study.merge import merge_shards

    protocol = write_protocol(tmp_path, models)
    for i in (1, 2):
        cli("run", protocol, "--shard", f"{i}/2", "--out", tmp_path / f"s{i}")
    with pytest.raises(IncompatibleResultsError, match="missing 2/2"):
        merge_shards([tmp_path / "s1"], tmp_path / "m")
    with pytest.raises(IncompatibleResultsError, match="given twice: 1/2"):
        merge_shards([tmp_path / "s1", tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
    (tmp_path / "other").mkdir()
    other = write_protocol(tmp_path / "other", models, statistics={"tau": 2.0})
    cli("run", other, "--shard", "2/2", "--out", tmp_path / "t2")
    with pytest.raises(IncompatibleResultsError, match="statistics"):
        merge_shards([tmp_path / "s1", tmp_path / "t2"], tmp_path / "m")
    other = write_protocol(tmp_path / "other", models, scoring={"max_length": 16})
    cli("run", other, "--shard", "2/2", "--out", tmp_path / "u2")
    with pytest.raises(IncompatibleResultsError, match="change scores"):
        merge_shards([tmp_path / "s1", tmp_path / "u2"], tmp_path / "m")
    other = write_protocol(tmp_path / "other", models, execution={"memory_budget_mb": 16})  # other batches
    cli("run", other, "--shard", "2/2", "--out", tmp_path / "v2")
    with pytest.raises(IncompatibleResultsError, match="change scores .*batching"):
        merge_shards([tmp_path / "s1", tmp_path / "v2"], tmp_path / "m")
    with pytest.raises(OutputError, match="not a shard folder"):
        merge_shards([tmp_path / "s1", tmp_path], tmp_path / "m")
    states = tmp_path / "s2" / "states.hsc"
    kept = states.read_bytes()
    states.write_bytes((tmp_path / "s1" / "states.hsc").read_bytes())  # whole and checksummed, but shard 1's
    with pytest.raises(OutputError, match="not this shard's"):
        merge_shards([tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
    states.unlink()
    states.symlink_to(tmp_path / "s1" / "states.hsc")
    with pytest.raises(OutputError, match="states.hsc', which passes through a symbolic link"):
        merge_shards([tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
    states.unlink()
    shard_manifest = json.loads((tmp_path / "s2" / "manifest.json").read_text())
    forged = {**shard_manifest, "headstats_shard": {**shard_manifest["headstats_shard"], "of": "2"}}
    (tmp_path / "s2" / "manifest.json").write_text(json.dumps(forged))
    with pytest.raises(OutputError, match=r"manifest of shard folder .* is damaged \('headstats_shard.of'"):
        merge_shards([tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
    (tmp_path / "s2" / "manifest.json").write_text(json.dumps(shard_manifest))
    states.write_bytes(kept[:-1])
    with pytest.raises(OutputError, match="corrupt"):
        merge_shards([tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
    assert not (tmp_path / "m").exists()
    result = runner.invoke(app, ["merge", str(tmp_path / "s1"), "--out", str(tmp_path / "m")])
    assert result.exit_code == 2 and result.output.strip().splitlines()[-1].startswith("error: shards do not make")


def test_a_statistics_only_rerun_runs_no_forward_pass_and_loads_no_model(tmp_path, models, reference):
    protocol = write_protocol(tmp_path, models)
    cli("run", protocol, "--out", tmp_path / "first", "--cache-dir", tmp_path / "cache")
    first = manifest(tmp_path / "first")["execution"]
    assert first["forward_passes"] > 0 and first["chunks_cached"] == 0 and first["model_loads"] == 2
    reference = tables(reference)
    assert tables(tmp_path / "first") == reference
    write_protocol(tmp_path, models, statistics={"tau": 0.5, "correction": "fdr_bh"})
    cli("run", protocol, "--out", tmp_path / "second", "--cache-dir", tmp_path / "cache")
    second = manifest(tmp_path / "second")["execution"]
    assert second["forward_passes"] == 0 and second["model_loads"] == 0 and second["chunks_run"] == 0
    assert second["inputs_cached"] == 2 * (30 + 9)  # the group of both models, two data sets
    again = tables(tmp_path / "second")
    assert again["scores.parquet"] == reference["scores.parquet"]
    assert again["compare_similarity.csv"] == reference["compare_similarity.csv"]
    assert again["tests.csv"] != reference["tests.csv"]  # tau and the correction changed the tests


RERUN = r"""
import sys
import traceback


class Tell:  # who imports torch first: the stack, on stderr, for the failure message
    def find_spec(self, name, path=None, target=None):
        if name in ("torch", "transformers") and not getattr(self, "told", False):
            self.told = True
            traceback.print_stack(file=sys.stderr)
        return None


sys.meta_path.insert(0, Tell())
from headstats.cli.main import app
sys.argv = ["headstats", *sys.argv[1:]]
try:
    app()
except SystemExit as exc:
    if exc.code:
        raise
print("IMPORTED", sorted(m for m in ("torch", "transformers", "spacy") if m in sys.modules))
"""


def test_a_statistics_only_rerun_reads_no_data_and_imports_neither_torch_nor_transformers(tmp_path, models,
                                                                                          reference):
    protocol = write_protocol(tmp_path, models)
    cli("run", protocol, "--out", tmp_path / "first", "--cache-dir", tmp_path / "cache")
    write_protocol(tmp_path, models, statistics={"tau": 0.5, "correction": "fdr_bh"})
    script = tmp_path / "rerun.py"
    script.write_text(RERUN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "MPLCONFIGDIR": str(tmp_path / "mpl")}
    out = subprocess.run([sys.executable, str(script), "run", str(protocol), "--out", str(tmp_path / "second"),
                          "--cache-dir", str(tmp_path / "cache")], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "IMPORTED []" in out.stdout, out.stderr[-4000:]
    assert "read single: 30 inputs found in the cache" in out.stdout + out.stderr
    again, first = tables(tmp_path / "second"), tables(reference)
    assert again["scores.parquet"] == first["scores.parquet"] and again["entropy.csv"] == first["entropy.csv"]
    assert manifest(tmp_path / "second")["models"] == manifest(tmp_path / "first")["models"]


KILLABLE = r"""
import sys
from headstats.engine.cache import StateCache

original = StateCache.put
written = [0]
limit = int(sys.argv[1])

def put(self, key, value):
    original(self, key, value)
    if not (isinstance(value, dict) and "state" in value):
        return  # a memo entry (data set, model description), not a chunk's state
    written[0] += 1
    if written[0] == limit:
        print("WRITTEN", flush=True)
        import time
        time.sleep(600)

StateCache.put = put
from headstats.cli.main import app
sys.argv = ["headstats", *sys.argv[2:]]
app()
"""


def test_kill_9_then_resume_gives_byte_identical_tables(tmp_path, models, reference):
    protocol = write_protocol(tmp_path, models)
    script = tmp_path / "killable.py"
    script.write_text(KILLABLE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "MPLCONFIGDIR": str(tmp_path / "mpl")}
    # 'single': 8 chunks x 7 jobs (role scores, special mass and entropy of both models, similarity); 'pairs': 3
    # chunks x 7: killed after 12 chunk states, in the second chunk of 'single' 
    proc = subprocess.Popen([sys.executable, str(script), "12", "run", str(protocol), "--out", str(tmp_path / "out"),
                             "--cache-dir", str(tmp_path / "cache"), "--quiet"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    line = ""
    while time.time() < deadline and not line.startswith("WRITTEN"):
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            pytest.fail(f"the run ended before it was killed: {proc.stderr.read()[-2000:]}")
    proc.kill()  # SIGKILL: no cleanup runs
    proc.wait(timeout=60)
    assert not (tmp_path / "out").exists()
    cli("run", protocol, "--out", tmp_path / "out", "--cache-dir", tmp_path / "cache")
    execution = manifest(tmp_path / "out")["execution"]
    assert execution["chunks_cached"] >= 1 and execution["chunks_run"] >= 1
    assert tables(tmp_path / "out") == tables(reference)
