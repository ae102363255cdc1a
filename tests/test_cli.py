"""The command line: a small end-to-end run, and one-line errors without tracebacks for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from headstats.cli import app

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo"
runner = CliRunner()


def write_protocol(folder: Path, model: str, **overrides) -> Path:
    protocol = {
        "name": "tiny",
        "models": [model],
        "datasets": [
            {"name": "single", "path": str(DEMO / "sentences.txt"), "limit": 24},
            {"name": "pairs", "path": str(DEMO / "pairs.txt"), "limit": 12},
            {"name": "gold", "path": str(DEMO / "mini.conllu")},
        ],
        "scoring": {"batch_size": 5},
        "statistics": {"tau": 1.0, "sensitivity": False},
    }
    protocol.update(overrides)
    path = folder / "protocol.yaml"
    path.write_text(yaml.safe_dump(protocol))
    return path


def assert_one_line_error(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.strip().splitlines() if line.startswith("error")]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert result.output.strip().endswith(lines[0]), result.output  # the error is the last thing said
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_run_end_to_end(tmp_path, tiny_model_dir):
    protocol = write_protocol(tmp_path, str(tiny_model_dir))
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(protocol), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    for name in ["scores.parquet", "tests.csv", "tests.parquet", "roles.csv", "report.md", "report.html",
                 "manifest.json", "protocol.resolved.yaml"]:
        assert (out / name).exists(), name
    assert list((out / "figures").glob("roles_grid_*.png"))
    scores = pd.read_parquet(out / "scores.parquet")
    assert list(scores.columns) == ["model", "dataset", "sentence_id", "layer", "head", "role", "score"]
    # 24 + 12 + 6 inputs, 2 layers x 2 heads; block only on the pairs
    n_single_roles, n_pair_roles = 9, 10
    assert len(scores) == (24 * n_single_roles + 12 * n_pair_roles + 6 * n_single_roles) * 4
    tests = pd.read_csv(out / "tests.csv")
    for column in ["model", "dataset", "role", "layer", "head", "n", "mean", "sd", "tau", "statistic", "dof",
                   "alternative", "p_unc", "p_corr", "correction", "family", "alpha", "effect_size", "ci_low",
                   "ci_high", "confidence", "reject"]:
        assert column in tests.columns, column
    # the t-test rows are the scores' means and counts
    local = scores[(scores.dataset == "single") & (scores.role == "local") & (scores.layer == 1) & (scores["head"] == 0)]
    row = tests[(tests.dataset == "single") & (tests.role == "local") & (tests.layer == 1) & (tests["head"] == 0)].iloc[0]
    assert row["n"] == 24 and row["mean"] == pytest.approx(local.score.mean())
    roles = pd.read_csv(out / "roles.csv")
    assert len(roles) == 3 * 4 and "roles" in roles.columns
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["inputs"][f"{tiny_model_dir}/single"]["n_scored"] == 24
    assert manifest["datasets"]["gold"]["parses"] == "gold"
    assert manifest["datasets"]["single"]["parses"] == "spacy"
    assert set(manifest["datasets"]["single"]["files_sha256"]) == {str(DEMO / "sentences.txt")}
    assert manifest["versions"]["torch"]
    assert "Methods" in (out / "report.md").read_text()


def test_run_refuses_existing_output_and_leaves_it_alone(tmp_path, tiny_model_dir):
    protocol = write_protocol(tmp_path, str(tiny_model_dir))
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    assert_one_line_error(runner.invoke(app, ["run", str(protocol), "--out", str(out)]), "exists", "--overwrite")
    assert (out / "keep.txt").exists()


@pytest.mark.parametrize(
    "content, needles",
    [
        ("name: [unclosed", ("not valid YAML",)),
        ("datasets: []\nscoring: {windw: 2}\n", ("scoring.windw",)),
        ("datasets: [{name: a, path: x.txt}]\nscoring: {roles: [locl]}\n", ("unknown role", "local")),
        ("datasets: [{name: a, path: x.txt}]\nstatistics: {test: ztest}\n", ("unknown", "wilcoxon")),
        ("datasets: [{name: a, path: x.txt}]\nstatistics: {correction: fdr}\n", ("unknown correction", "fdr_bh")),
    ],
)
def test_bad_protocols(tmp_path, content, needles):
    path = tmp_path / "p.yaml"
    path.write_text(content)
    assert_one_line_error(runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "o")]), *needles)
    assert not (tmp_path / "o").exists()


def test_missing_protocol_and_missing_data(tmp_path, tiny_model_dir):
    assert_one_line_error(runner.invoke(app, ["validate", str(tmp_path / "nope.yaml")]), "does not exist")
    protocol = write_protocol(tmp_path, str(tiny_model_dir), datasets=[{"name": "x", "path": str(tmp_path / "missing.txt")}])
    assert_one_line_error(runner.invoke(app, ["validate", str(protocol)]), "missing.txt")
    assert_one_line_error(runner.invoke(app, ["run", str(protocol), "--out", str(tmp_path / "o")]), "missing.txt")
    assert not (tmp_path / "o").exists()


def test_empty_corpus_and_malformed_conllu(tmp_path, tiny_model_dir):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    result = runner.invoke(app, ["score", "--model", str(tiny_model_dir), "--data", str(empty), "--out", str(tmp_path / "o")])
    assert_one_line_error(result, "empty.txt")
    bad = tmp_path / "bad.conllu"
    bad.write_text("# text = a b\n1\ta\ta\tDET\tDT\t_\t2\tdet\t_\t_\n2\tb\tb\tNOUN\tNN\t_\tX\troot\t_\t_\n\n")
    result = runner.invoke(app, ["score", "--model", str(tiny_model_dir), "--data", str(bad), "--out", str(tmp_path / "o")])
    assert_one_line_error(result, "line 3")
    assert not (tmp_path / "o").exists()


def test_model_directory_without_weights(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    result = runner.invoke(app, ["score", "--model", str(folder), "--data", str(DEMO / "sentences.txt"), "--out", str(tmp_path / "o")])
    assert_one_line_error(result, "no weight files")
    assert not (tmp_path / "o").exists()


def test_score_command(tmp_path, tiny_model_dir):
    out = tmp_path / "o"
    result = runner.invoke(app, ["score", "--model", str(tiny_model_dir), "--data", str(DEMO / "mini.conllu"), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    scores = pd.read_parquet(out / "scores.parquet")
    assert scores["sentence_id"].nunique() == 6
    assert set(scores["role"]) >= {"local", "syntactic", "delimiter_cls"}
    assert json.loads((out / "manifest.json").read_text())["inputs"]


def test_too_long_inputs_are_counted(tmp_path, tiny_model_dir):
    data = tmp_path / "long.txt"
    data.write_text("the cat sat\n" + " ".join(["the dog ran"] * 60) + "\n")
    protocol = write_protocol(tmp_path, str(tiny_model_dir), datasets=[{"name": "x", "path": str(data)}],
                              scoring={"max_length": 32, "roles": ["local"]})
    out = tmp_path / "o"
    assert runner.invoke(app, ["run", str(protocol), "--out", str(out), "--quiet"]).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    counts = manifest["inputs"][f"{tiny_model_dir}/x"]
    assert counts["n_scored"] == 1 and counts["skipped"] == {"too_long": 1}
    assert "too_long: 1" in (out / "report.md").read_text()


def test_list_roles():
    result = runner.invoke(app, ["list-roles"])
    assert result.exit_code == 0
    assert "delimiter_sep" in result.output and "syntactic:<rel>" in result.output


def test_run_with_data_root_for_glue_inputs(tmp_path, tiny_model_dir):
    root = tmp_path / "glue"
    (root / "SST-2").mkdir(parents=True)
    rows = ["the cat sat\t1", "a dog ran quickly\t0", "the bird saw the man\t1", "she read a book\t0"]
    (root / "SST-2" / "dev.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    protocol = write_protocol(tmp_path, str(tiny_model_dir), datasets=[{"name": "sst2", "glue": {"task": "sst2", "n": 3}}])
    out = tmp_path / "o"
    result = runner.invoke(app, ["run", str(protocol), "--out", str(out), "--quiet", "--data-root", str(root)])
    assert result.exit_code == 0, result.output
    scores = pd.read_parquet(out / "scores.parquet")
    assert sorted(scores["sentence_id"].unique()) == ["0", "1", "2"]  # the first n = 3 rows
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["datasets"]["sst2"]["files_sha256"] == {
        str(root / "SST-2" / "dev.tsv"): __import__("hashlib").sha256((root / "SST-2" / "dev.tsv").read_bytes()).hexdigest()
    }
    missing = runner.invoke(app, ["run", str(protocol), "--out", str(tmp_path / "o2"), "--data-root", str(tmp_path / "nope")])
    assert_one_line_error(missing, "--data-root")
