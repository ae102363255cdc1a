"""headstats init: a commented protocol from what the data allow, that validates with no warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.cli_helpers import DEMO, runner, assert_one_line_error
from headstats.cli.main import app


def test_init_writes_a_commented_protocol_that_validates(tmp_path, monkeypatch):
    from headstats.config.protocol import Protocol, load_protocol

    (tmp_path / "data").mkdir()
    data = tmp_path / "data" / "sentences.txt"
    data.write_text((DEMO / "sentences.txt").read_text())
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["init", "--model", "default", "--data", "data/sentences.txt", "--out", "my.yaml"])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "my.yaml").read_text()
    assert "path: data/sentences.txt" in text  # relative to the protocol's folder, which is the working one
    assert "  - default" in text
    # every option of the sections is written, with a comment beside it or on the line above
    from headstats.config.protocol import ReportOptions, ScoreSettings, StatisticsOptions

    lines = text.splitlines()
    sections = (("scoring", ScoreSettings), ("statistics", StatisticsOptions), ("report", ReportOptions))
    for section, model in sections:
        start = lines.index(f"{section}:")
        for key in model.model_fields:
            i = next(k for k in range(start, len(lines)) if lines[k].startswith(f"  {key}: "))
            assert "#" in lines[i] or lines[i - 1].startswith("  # "), (section, key)
    assert runner.invoke(app, ["validate", "my.yaml"]).exit_code == 0
    protocol = load_protocol(tmp_path / "my.yaml")
    defaults = Protocol.model_validate({"datasets": [{"name": "x", "path": "y.txt"}]})
    assert protocol.report == defaults.report
    # from the data: single sentences, so no block; local's ceiling is too low for a bias tau
    chosen = {"roles", "relations", "scale"}
    assert protocol.scoring.model_dump(exclude=chosen) == defaults.scoring.model_dump(exclude=chosen)
    assert protocol.statistics.model_dump(exclude={"tau"}) == defaults.statistics.model_dump(exclude={"tau"})
    assert protocol.scoring.roles == [r for r in defaults.scoring.roles if r != "block"]
    assert "local: mean ceiling" in text and "left out block: the data hold no sentence pairs" in text
    assert (protocol.seed, protocol.device, protocol.name) == (defaults.seed, defaults.device, "my")
    assert [m.name for m in protocol.models] == ["default"]
    assert protocol.datasets[0].path == str(data.resolve()) and protocol.datasets[0].name == "sentences"


def test_init_refuses_to_overwrite_without_force(tmp_path):
    out = tmp_path / "my.yaml"
    out.write_text("mine\n")
    args = ["init", "--data", str(DEMO / "sentences.txt"), "--data", str(DEMO / "pairs.txt"), "--out", str(out)]
    assert_one_line_error(runner.invoke(app, args), "exists", "--force")
    assert out.read_text() == "mine\n"
    result = runner.invoke(app, [*args, "--force"])
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["validate", str(out)]).exit_code == 0
    assert "name: pairs" in out.read_text() and str(DEMO / "pairs.txt") in out.read_text()


def test_init_with_a_model_folder_and_bad_inputs(tmp_path, tiny_model_dir):
    out = tmp_path / "p.yaml"
    result = runner.invoke(app, ["init", "--model", str(tiny_model_dir), "--data", str(DEMO / "mini.conllu"),
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    from headstats.config.protocol import load_protocol

    protocol = load_protocol(out)
    assert protocol.models[0].path == str(Path(tiny_model_dir).resolve())
    assert runner.invoke(app, ["validate", str(out)]).exit_code == 0
    assert_one_line_error(runner.invoke(app, ["init", "--data", str(tmp_path / "nope.txt"), "--out",
                                              str(tmp_path / "q.yaml")]), "nope.txt", "does not exist")
    odd = tmp_path / "data.xyz"
    odd.write_text("a sentence\n")
    assert_one_line_error(runner.invoke(app, ["init", "--data", str(odd), "--out", str(tmp_path / "q.yaml")]),
                          ".xyz")
    assert_one_line_error(runner.invoke(app, ["init", "--data", str(odd), "--format", "txt", "--out",
                                              str(tmp_path / "q.yaml")]), "text")  # did you mean
    result = runner.invoke(app, ["init", "--data", str(odd), "--format", "text", "--out", str(tmp_path / "q.yaml")])
    assert result.exit_code == 0 and "format: text" in (tmp_path / "q.yaml").read_text()
    assert_one_line_error(runner.invoke(app, ["init", "--data", str(DEMO / "sentences.txt"),
                                              "--out", str(tmp_path)]),
                          "is a folder")
    assert not (tmp_path / "q2.yaml").exists()


@pytest.mark.parametrize("files, kind, left_out", [
    (["sentences.txt"], "single sentences, raw text", "block"),
    (["pairs.txt"], "sentence pairs, raw text", None),
    (["mini.conllu"], "single sentences, parsed", "block"),
    (["sentences.txt", "pairs.txt"], "sentence pairs, raw text", None),
])
def test_init_reads_the_data_and_writes_a_protocol_that_validates_with_no_warning(tmp_path, tiny_model_dir, files,
                                                                                  kind, left_out):
    from headstats.config.protocol import load_protocol
    from headstats.study.preflight import tau_warnings

    out = tmp_path / "p.yaml"
    data = [arg for name in files for arg in ("--data", str(DEMO / name))]
    result = runner.invoke(app, ["init", "--model", str(tiny_model_dir), *data, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"inputs, {kind}" in result.output
    protocol = load_protocol(out)
    if left_out:
        assert left_out not in protocol.scoring.roles and f"left out {left_out}: " in out.read_text()
    else:
        assert "block" in protocol.scoring.roles
    checked = runner.invoke(app, ["validate", str(out)])
    assert checked.exit_code == 0 and "warning" not in checked.output, checked.output
    assert tau_warnings(protocol) == []
    if files == ["pairs.txt"]:  # run's own check, on the encoded inputs (block's ceiling is the delicate one)
        run = runner.invoke(app, ["run", str(out), "--out", str(tmp_path / "o")], env={"COLUMNS": "200"})
        assert run.exit_code == 0 and "warning" not in run.output, run.output
