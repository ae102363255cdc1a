"""run, score, validate and report: a small end-to-end run, validate equal to run, one-line errors for bad input."""

from __future__ import annotations

import errno
import json

import pandas as pd
import pytest
import yaml

from cli.cli_helpers import (REPO, DEMO, runner, write_protocol, assert_one_line_error, _glue_root, _no_weights,
                         assert_validate_equals_run)
from headstats.cli.main import app


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
    assert list(scores.columns) == ["model", "dataset", "measure", "sentence_id", "layer", "head", "role", "score"]
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


def test_run_into_an_empty_folder_ends_with_a_summary(tmp_path, tiny_model_dir):
    # mkdir out; headstats run p.yaml --out out: the empty folder is filled, and the run ends with what it found
    protocol = write_protocol(tmp_path, str(tiny_model_dir))
    out = tmp_path / "out"
    out.mkdir()
    result = runner.invoke(app, ["run", str(protocol), "--out", str(out)])
    assert result.exit_code == 0, result.output
    roles = pd.read_csv(out / "roles.csv")
    claims = pd.read_csv(out / "claims.csv")
    for (model, dataset), group in roles.groupby(["model", "dataset"]):
        held = int((group["n_roles"] > 0).sum())
        assert f"{model} / {dataset}: " in result.output
        assert f"{held} of {len(group)} heads hold a role" in result.output
        counts = claims[claims["dataset"] == dataset]["verdict"].value_counts()
        assert "  claims: " + ", ".join(f"{counts[v]} {v}" for v in ("supported", "contradicted", "not shown",
                                                                     "cannot tell") if v in counts) in result.output
    assert result.output.strip().endswith(f"report: {out / 'report.html'}")


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


def test_validate_refuses_an_analysis_data_set_the_protocol_lacks(tmp_path, tiny_model_dir):
    # clustering's own ``datasets`` option names data sets of the protocol: a typo is one line naming the choices
    protocol = write_protocol(tmp_path, str(tiny_model_dir), analyses=["clustering"],
                              analysis_options={"clustering": {"datasets": ["single", "wikitext"]}})
    assert_one_line_error(runner.invoke(app, ["validate", str(protocol)]),
                          "analysis_options.clustering.datasets names 'wikitext', which is not in 'datasets'",
                          "use one of single, pairs, gold")
    protocol = write_protocol(tmp_path, str(tiny_model_dir), analyses=["clustering"],
                              analysis_options={"clustering": {"datasets": ["pairs"]}})
    assert runner.invoke(app, ["validate", str(protocol)]).exit_code == 0


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


RUN_REFUSALS = {
    "tau NaN": (lambda f: {"statistics": {"tau": float("nan")}}, ["statistics.tau", "finite"]),
    "tau inf": (lambda f: {"statistics": {"tau": float("inf")}}, ["statistics.tau", "finite"]),
    "syntactic unknown": (lambda f: {"scoring": {"roles": ["local", "syntactic:subj"]}},
                          ["unknown dependency relation 'subj'"]),
    "models empty": (lambda f: {"models": []}, ["'models'", "empty"]),
    "datasets empty": (lambda f: {"datasets": []}, ["'datasets'", "empty"]),
    "device quantum": (lambda f: {"device": "quantum"}, ["unknown device 'quantum'"]),
    "glue task unknown": (lambda f: {"datasets": [{"name": "g", "glue": {"task": "squad"}}],
                                     "data_root": str(_glue_root(f))}, ["unknown GLUE task 'squad'"]),
    "glue split missing": (lambda f: {"datasets": [{"name": "g", "glue": {"task": "sst2", "split": "train"}}],
                                      "data_root": str(_glue_root(f))}, ["SST-2/train.tsv", "does not exist"]),
    "glue data root missing": (lambda f: {"datasets": [{"name": "g", "glue": {"task": "sst2"}}],
                                          "data_root": str(f / "no_glue")}, ["no_glue", "does not exist"]),
    "data path is a folder": (lambda f: {"datasets": [{"name": "d", "path": str(DEMO)}]}, ["is a folder"]),
    "model folder missing": (lambda f: {"models": [str(f / "no_model")]}, ["no_model", "does not exist"]),
    "model without weights": (lambda f: {"models": [_no_weights(f)]}, ["no weight files"]),
    "name too long": (lambda f: {"name": "n" * 300}, ["300 characters"]),
    "name with NUL": (lambda f: {"datasets": [{"name": "a\0b", "path": str(DEMO / "sentences.txt")}]},
                      ["\\x00"]),
    "name with separator": (lambda f: {"name": "../escape"}, ["'/'"]),
}


@pytest.mark.parametrize("make, needles", list(RUN_REFUSALS.values()), ids=list(RUN_REFUSALS))
def test_validate_refuses_what_run_refuses(tmp_path, tiny_model_dir, no_model_loading, make, needles):
    protocol = write_protocol(tmp_path, str(tiny_model_dir), **make(tmp_path))
    assert_validate_equals_run(protocol, tmp_path / "o", *needles)
    assert not (tmp_path / "o").exists()


def test_validate_refuses_cuda_without_a_gpu(tmp_path, tiny_model_dir, no_model_loading):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    protocol = write_protocol(tmp_path, str(tiny_model_dir), device="cuda")
    assert_validate_equals_run(protocol, tmp_path / "o", "device 'cuda' is not available")


def test_validate_refuses_unusable_outputs_as_run_does(tmp_path, tiny_model_dir, no_model_loading, monkeypatch):
    protocol = write_protocol(tmp_path, str(tiny_model_dir))
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("x")
    assert_validate_equals_run(protocol, existing, "exists", "--overwrite")
    assert (existing / "keep.txt").read_text() == "x"
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert_validate_equals_run(protocol, a_file, "is a file", extra=("--overwrite",))
    assert a_file.read_text() == "x"
    # the protocol's own 'output' is checked by validate too
    with_output = write_protocol(tmp_path, str(tiny_model_dir), output=str(existing))
    assert_one_line_error(runner.invoke(app, ["validate", str(with_output)]), "exists")
    # a read-only disk is found before any work
    import headstats.study.preflight

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(headstats.study.preflight.tempfile, "mkstemp", read_only)
    assert_validate_equals_run(protocol, tmp_path / "new", "read-only file system", "choose another --out")


def test_validate_ok_means_run_gets_past_the_checks(tmp_path, tiny_model_dir):
    protocol = write_protocol(tmp_path, str(tiny_model_dir))
    result = runner.invoke(app, ["validate", str(protocol), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    # what run will do comes first: the model it loads, each data set with its inputs counted
    assert lines[0] == "run will:" and lines[1] == f"  loads 1 model(s): {tiny_model_dir}"
    assert "    single: 24 inputs from " in result.output and "    pairs: 12 pairs from " in result.output
    assert "    gold: 6 inputs (gold parses) from " in result.output
    assert lines[-1].startswith(f"ok: {protocol} (1 model(s), 3 data set(s), 10 roles; output ")
    assert not (tmp_path / "o").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["protocol.yaml"]


def test_validate_passes_an_earlier_runs_output_with_a_note(tmp_path, tiny_model_dir):
    protocol = write_protocol(tmp_path, str(tiny_model_dir), datasets=[
        {"name": "single", "path": str(DEMO / "sentences.txt"), "limit": 6}])
    out = tmp_path / "o"
    assert runner.invoke(app, ["run", str(protocol), "--out", str(out), "--quiet"]).exit_code == 0
    result = runner.invoke(app, ["validate", str(protocol), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"note: {out} holds an earlier run: run needs --overwrite to replace it, or another --out" in result.output
    assert result.output.splitlines()[-1].startswith("ok: ")
    assert_one_line_error(runner.invoke(app, ["run", str(protocol), "--out", str(out), "--quiet"]), "--overwrite")


def test_an_uncached_hub_model_is_refused_offline_before_any_data_is_read(tmp_path, monkeypatch):
    """validate and run: one line, exit 2, naming the model, before a data file is read or parsed."""
    import headstats.hub
    import headstats.inputs.parsing
    import headstats.inputs.readers

    def forbidden(*args, **kwargs):
        raise AssertionError("data were read before the models were checked")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty_hf_home"))
    monkeypatch.setattr(headstats.hub, "hub_reachable", lambda *a, **k: False, raising=False)
    monkeypatch.setattr(headstats.inputs.readers, "read_records", forbidden)
    monkeypatch.setattr(headstats.inputs.parsing, "parse_records", forbidden)
    protocol = write_protocol(tmp_path, "someone/bert-not-in-any-cache")
    for command in (["validate", str(protocol)], ["run", str(protocol), "--out", str(tmp_path / "o"), "--quiet"]):
        assert_one_line_error(runner.invoke(app, command), "'someone/bert-not-in-any-cache'", "not on disk")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("kind", ["folder", "latin-1", "deep", "list", "nul key"])
def test_protocol_files_that_are_not_protocols(tmp_path, kind):
    path = tmp_path / "p.yaml"
    if kind == "folder":
        path.mkdir()
    elif kind == "latin-1":
        path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    elif kind == "deep":
        path.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    elif kind == "list":
        path.write_text("- 1\n- 2\n")
    else:
        path.write_text('"na\\0me": x\n')
    words = {"folder": "is a folder", "latin-1": "not UTF-8", "deep": "nested more than 100 levels deep",
             "list": "must be a YAML mapping", "nul key": "unknown key 'na\\x00me'"}[kind]
    for command in ("validate", "run"):
        result = runner.invoke(app, [command, str(path), "--out", str(tmp_path / "o")])
        assert_one_line_error(result, words)
        assert "\0" not in result.output
    assert not (tmp_path / "o").exists()


def test_score_refuses_when_every_input_is_too_long(tmp_path, tiny_model_dir):
    data = tmp_path / "long.txt"
    data.write_text(" ".join(["the dog ran"] * 60) + "\n" + " ".join(["a cat sat"] * 60) + "\n")
    out = tmp_path / "o"
    result = runner.invoke(app, ["score", "--model", str(tiny_model_dir), "--data", str(data), "--out", str(out)])
    assert_one_line_error(result, "no input of data set 'long' could be scored", "too_long", "scoring.max_length")
    assert not out.exists() and not list(tmp_path.glob(".o.partial-*"))


def test_score_uses_the_same_checks(tmp_path, no_model_loading):
    out = tmp_path / "o"
    result = runner.invoke(app, ["score", "--model", str(tmp_path / "nope"), "--data", str(DEMO / "sentences.txt"),
                                 "--out", str(out)])
    assert_one_line_error(result, "does not exist")
    result = runner.invoke(app, ["score", "--data", str(DEMO), "--out", str(out)])
    assert_one_line_error(result, "is a folder")
    out.mkdir()
    (out / "notes.txt").write_text("mine")  # not empty: an empty folder is a valid --out
    result = runner.invoke(app, ["score", "--data", str(DEMO / "sentences.txt"), "--out", str(out)])
    assert_one_line_error(result, "exists", "--overwrite")


def test_report_command_rebuilds_a_run_without_a_model(tmp_path, tiny_model_dir):
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(write_protocol(tmp_path, str(tiny_model_dir))), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    (out / "report.md").unlink()
    result = runner.invoke(app, ["report", str(out), "--top-k", "2", "--no-html", "--quiet"])
    assert result.exit_code == 0, result.output
    assert result.output == ""  # --quiet: nothing at all
    result = runner.invoke(app, ["report", str(out), "--top-k", "2", "--no-html", "--no-svg"])
    assert result.exit_code == 0 and result.output.strip().endswith(f"report: {out / 'report.md'}"), result.output
    assert "Methods" in (out / "report.md").read_text()
    strongest = pd.read_csv(out / "strongest_heads.csv")
    assert strongest.groupby(["model", "dataset", "role"]).size().max() == 2
    assert_one_line_error(runner.invoke(app, ["report", str(tmp_path)]), "not a headstats run folder")


def test_validate_and_run_warn_when_tau_is_out_of_reach(tmp_path, tiny_model_dir):
    import json

    protocol = write_protocol(tmp_path, str(tiny_model_dir), datasets=[
        {"name": "pairs", "path": str(DEMO / "pairs.txt"), "limit": 6}],
        scoring={"roles": ["local", "block"], "batch_size": 6}, statistics={"tau": 3.0, "sensitivity": False})
    result = runner.invoke(app, ["validate", str(protocol)])
    assert result.exit_code == 0, result.output
    warned = [line for line in result.output.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 1 and "block" in warned[0] and "ok: " in result.output
    out = tmp_path / "o"
    result = runner.invoke(app, ["run", str(protocol), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "warning: tau = 3 is at or above the mean ceiling" in result.output.replace("\n", " ")
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["warnings"]) == 1 and "role block on pairs" in manifest["warnings"][0]
    report = (out / "report.md").read_text()
    assert "tau is out of reach" in report and "ceilings.csv" in report


def test_run_with_a_scale_and_a_tau_per_role(tmp_path, tiny_model_dir):
    import pandas as pd

    protocol = write_protocol(tmp_path, str(tiny_model_dir), datasets=[
        {"name": "pairs", "path": str(DEMO / "pairs.txt"), "limit": 6}],
        scoring={"roles": ["local", "block", "delimiter_cls"], "batch_size": 6, "scale": {"block": "mass"}},
        statistics={"tau": {"default": 1.0, "block": 0.3}, "sensitivity": True})
    out = tmp_path / "o"
    result = runner.invoke(app, ["run", str(protocol), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    tests = pd.read_csv(out / "tests.csv")
    assert set(tests.loc[tests["role"] == "block", "tau"]) == {0.3}
    assert set(tests.loc[tests["role"] != "block", "tau"]) == {1.0}
    block = tests[tests["role"] == "block"]
    assert ((block["mean"] >= 0) & (block["mean"] <= 1)).all() and (block["score_ceiling"] == 1.0).all()
    sens = pd.read_csv(out / "tau_sensitivity.csv")
    assert sens.loc[sens["role"] == "block", "tau"].max() < 1 and sens.loc[sens["role"] == "local", "tau"].max() == 4
    report = (out / "report.md").read_text()
    assert "tau = 1 (block: 0.3)" in report and "attention mass inside the sieve" in report


def test_report_command_says_what_it_draws_and_can_skip_svg(tmp_path, tiny_model_dir):
    out = tmp_path / "out"
    protocol = write_protocol(tmp_path, str(tiny_model_dir), report={"figures": {"formats": ["png", "svg"], "dpi": 72}})
    assert runner.invoke(app, ["run", str(protocol), "--out", str(out), "--quiet"]).exit_code == 0
    assert list((out / "figures").glob("*.svg"))
    result = runner.invoke(app, ["report", str(out), "--no-svg"])
    assert result.exit_code == 0, result.output
    for step in ("reading the tables", "report: summary and role grids", "report: mean-score maps",
                 "report: p-values", "report: writing report.md and report.html"):
        assert step in result.output, step
    assert list((out / "figures").glob("*.png")) and not list((out / "figures").glob("*.svg"))
    manifest = json.loads((out / "manifest.json").read_text())
    assert not [f for f in manifest["output_files"] if f.endswith(".svg")]


def _click_options(command_name: str) -> dict:
    import typer

    command = typer.main.get_command(app).commands[command_name]
    return {p.name: p for p in command.params}


def test_score_options_are_the_protocol_schema(tmp_path):
    from headstats.cli.main import SCORE_PROTOCOL_OPTIONS
    from headstats.config.protocol import Protocol, ScoreSettings

    fields = {"scoring.roles": ScoreSettings.model_fields["roles"],
              "scoring.max_length": ScoreSettings.model_fields["max_length"],
              "scoring.batch_size": ScoreSettings.model_fields["batch_size"],
              "device": Protocol.model_fields["device"], "seed": Protocol.model_fields["seed"]}
    assert set(SCORE_PROTOCOL_OPTIONS.values()) == set(fields)
    options = _click_options("score")
    for name, key in SCORE_PROTOCOL_OPTIONS.items():
        field = fields[key]
        option = options[name]
        assert option.opts == ["--" + key.rpartition(".")[2].replace("_", "-")]
        assert option.default is None  # a value not given is the schema's default, decided by the schema
        default = field.get_default(call_default_factory=True)
        shown = ", ".join(default) if isinstance(default, list) else str(default)
        assert field.description and field.description in option.help
        assert f"default: {shown})" in option.help and key in option.help
    result = runner.invoke(app, ["score", "--help"], env={"COLUMNS": "250"})
    assert "--max-length" in result.output and "scoring.max_length; default: 128" in result.output


def test_score_options_reach_the_scores_and_manifest(tmp_path, tiny_model_dir):
    out = tmp_path / "o"
    data = tmp_path / "d.txt"
    data.write_text("the cat sat\nthe dog ran\nthe cat ran\n" + " ".join(["the dog ran"] * 20) + "\n")
    result = runner.invoke(app, ["score", "--model", str(tiny_model_dir), "--data", str(data),
                                 "--out", str(out), "--roles", "local,delimiter_cls", "--roles", "syntactic:nsubj",
                                 "--max-length", "16", "--batch-size", "2", "--seed", "7", "--device", "cpu",
                                 "--quiet"])
    assert result.exit_code == 0, result.output
    scores = pd.read_parquet(out / "scores.parquet")
    assert set(scores["role"]) == {"local", "delimiter_cls", "syntactic:nsubj"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["scoring"]["max_length"] == 16 and manifest["scoring"]["batch_size"] == 2
    assert manifest["seed"] == 7 and manifest["device"] == "cpu"
    counts = manifest["inputs"][f"{tiny_model_dir}/d"]
    assert counts["n_scored"] == 3 and counts["skipped"] == {"too_long": 1}  # 60 words never fit in 16 pieces
    assert scores["sentence_id"].nunique() == 3


@pytest.mark.parametrize("options, needles", [
    (["--max-length", "2"], ("scoring.max_length", "2 is not allowed; it must be a number >= 4")),
    (["--batch-size", "0"], ("scoring.batch_size",)),
    (["--roles", "locl"], ("unknown role", "local")),
    (["--seed", "-1"], ("seed",)),
    (["--format", "csv"], ("unknown input format", "jsonl")),
])
def test_score_refuses_bad_protocol_options_in_one_line(tmp_path, no_model_loading, options, needles):
    result = runner.invoke(app, ["score", "--data", str(DEMO / "sentences.txt"), "--out", str(tmp_path / "o"),
                                 *options])
    assert_one_line_error(result, *needles)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("shard", ["3/2", "0/2", "a/b", "1"])
def test_a_bad_shard_is_one_line(tmp_path, tiny_model_dir, shard):
    protocol = write_protocol(tmp_path, str(tiny_model_dir))
    result = runner.invoke(app, ["run", str(protocol), "--shard", shard, "--out", str(tmp_path / "s")])
    assert result.exit_code == 2 and result.output.strip().startswith("error: --shard"), result.output
    assert not (tmp_path / "s").exists()


def test_score_runs_the_passes_of_run_through_the_state_cache(tmp_path, tiny_model_dir):
    """headstats score writes its chunks to the state cache; a second score of the same file runs no pass and
    writes the same scores. A gold-parsed CoNLL-U file is logged with its gold parses, not '(none parses)'."""
    cache = tmp_path / "cache"
    args = ["score", "--model", str(tiny_model_dir), "--data", str(DEMO / "mini.conllu"), "--roles", "local",
            "--cache-dir", str(cache)]
    first = runner.invoke(app, [*args, "--out", str(tmp_path / "a")], env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output
    assert "read mini: 6 inputs (gold CoNLL-U parses)" in first.output and "none parses" not in first.output
    info = runner.invoke(app, ["cache", "info", "--cache-dir", str(cache)])
    assert info.exit_code == 0 and "chunks: 0 " not in info.output, info.output
    second = runner.invoke(app, [*args, "--out", str(tmp_path / "b"), "--quiet"])
    assert second.exit_code == 0 and second.output == "", second.output
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["execution"]["forward_passes"] == 0 and manifest["execution"]["chunks_cached"] == 1
    # the attention path that made the cached states, read back from their entries
    assert list(manifest["execution"]["attention"].values()) == ["fused-sdpa/2"]  # one model
    a, b = (pd.read_parquet(tmp_path / name / "scores.parquet") for name in "ab")
    pd.testing.assert_frame_equal(a, b)
    assert set(a["model"]) == {str(tiny_model_dir)} and len(a) == 6 * 2 * 2  # inputs x layers x heads


def test_shipped_protocols_validate_with_no_warning_or_say_why():
    """Each protocol in protocols/ either gives no warning at validate, or its header says that it warns."""
    from headstats.config.protocol import load_protocol
    from headstats.study.preflight import tau_warnings

    for path in sorted((REPO / "protocols").glob("*.yaml")):
        header = "\n".join(line for line in path.read_text().splitlines() if line.startswith("#"))
        if tau_warnings(load_protocol(path)):
            assert "validate warns" in header, path.name


def test_run_with_limit_and_set_records_them_in_the_resolved_protocol(tmp_path, tiny_model_dir):
    protocol = write_protocol(tmp_path, str(tiny_model_dir))
    out = tmp_path / "out"
    options = ["--limit", "5", "--set", "statistics.tau=0.5", "--set", "datasets.gold.limit=3"]
    checked = runner.invoke(app, ["validate", str(protocol), *options])
    assert checked.exit_code == 0, checked.output
    assert "single: 5 inputs" in checked.output and "gold: 3 inputs" in checked.output
    result = runner.invoke(app, ["run", str(protocol), "--out", str(out), "--quiet", *options])
    assert result.exit_code == 0, result.output
    tests = pd.read_csv(out / "tests.csv")
    assert tests.groupby("dataset")["n"].max().to_dict() == {"gold": 3, "pairs": 5, "single": 5}
    assert set(tests["tau"]) == {0.5}
    resolved = yaml.safe_load((out / "protocol.resolved.yaml").read_text())
    assert [d["limit"] for d in resolved["datasets"]] == [5, 5, 3] and resolved["statistics"]["tau"] == 0.5


@pytest.mark.parametrize("options, needles", [
    (["--set", "statistics.tua=2"], ["--set statistics.tua=2: unknown protocol key", "did you mean 'statistics.tau'?"]),
    (["--set", "statistics.correction=fdr"], ["did you mean 'fdr_bh'?"]),
    (["--set", "statistics.alpha=2"], ["--set statistics.alpha=2: invalid protocol at 'statistics.alpha'"]),
    (["--set", "tau"], ["--set 'tau' is not KEY=VALUE"]),
    (["--limit", "0"], ["invalid value for '--limit'", ">= 1"]),
])
def test_a_bad_set_or_limit_is_one_line_before_anything_is_written(tmp_path, tiny_model_dir, options, needles):
    protocol = write_protocol(tmp_path, str(tiny_model_dir))
    out = tmp_path / "out"
    for command in (["validate", str(protocol)], ["run", str(protocol), "--out", str(out)]):
        assert_one_line_error(runner.invoke(app, [*command, *options]), *needles)
    assert not out.exists()
