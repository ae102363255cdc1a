"""Every bad value of a command or a protocol key is one line ``error: ...`` in headstats' words (the key or
option, the value, what is allowed), exit 2, no traceback and nothing written (issue 37): the list of the issue,
parametrised. The sandbox and the contract (``refused``) are those of the bad-input suite."""

from __future__ import annotations

import json
import shutil

import pytest

from test_bad_input import bad_model_dir, refused, sandbox  # noqa: F401 - fixtures

SCORE = ["score", "--model", "MODEL", "--data", "DATA", "--out", "out"]

#: (id, command line or protocol changes, words the error line must hold)
COMMANDS = [
    ("score-batch-0", [*SCORE, "--batch-size", "0"], ["batch_size", "0", ">= 1"]),
    ("score-batch-neg", [*SCORE, "--batch-size", "-1"], ["batch_size", "-1", ">= 1"]),
    ("score-batch-nan", [*SCORE, "--batch-size", "nan"], ["--batch-size", "'nan'", "whole number"]),
    ("score-batch-float", [*SCORE, "--batch-size", "1.5"], ["--batch-size", "'1.5'", "whole number"]),
    ("score-max-length-nan", [*SCORE, "--max-length", "nan"], ["--max-length", "'nan'", "whole number"]),
    ("score-max-length-1e3", [*SCORE, "--max-length", "1e3"], ["--max-length", "'1e3'", "whole number"]),
    ("score-seed-nan", [*SCORE, "--seed", "nan"], ["--seed", "'nan'", "whole number"]),
    ("report-top-k-0", ["report", "run", "--top-k", "0"], ["--top-k", "'0'", ">= 1"]),
    ("report-top-k-neg", ["report", "run", "--top-k", "-1"], ["--top-k", "'-1'", ">= 1"]),
    ("report-top-k-nan", ["report", "run", "--top-k", "nan"], ["--top-k", "'nan'", "whole number"]),
    ("prune-older-neg", ["cache", "prune", "--older-than", "-1"], ["--older-than", "'-1'", ">= 0"]),
    ("prune-older-nan", ["cache", "prune", "--older-than", "nan"], ["--older-than", "'nan'"]),
    ("prune-size-neg", ["cache", "prune", "--max-size", "-1"], ["--max-size", "'-1'", ">= 0"]),
    ("prune-size-nan", ["cache", "prune", "--max-size", "nan"], ["--max-size", "'nan'"]),
    ("merge-no-shard", ["merge", "--out", "merged"], ["missing argument", "merge --help"]),
    ("list-roles-extra", ["list-roles", "extra"], ["unexpected extra argument", "(extra)"]),
    ("unknown-command", ["nosuchcommand"], ["no such command", "nosuchcommand"]),
    ("out-5000-characters", [*SCORE[:-1], "/".join(["d" * 99] * 50)], ["file name too long", "shorter --out"]),
]

PROTOCOLS = [
    ("batch-size-negative", {"scoring": {"batch_size": -4}}, ["scoring.batch_size", "-4", ">= 1", "'auto'"]),
    ("batch-size-nan", {"scoring": {"batch_size": float("nan")}}, ["scoring.batch_size", "nan", "whole number"]),
    ("batch-size-float", {"scoring": {"batch_size": 1.5}}, ["scoring.batch_size", "1.5", "whole number"]),
    ("window-negative", {"scoring": {"window": -1}}, ["scoring.window", "-1", ">= 0"]),
    ("top-k-huge", {"report": {"top_k": 10**30}}, ["report.top_k", "<= 100000"]),
    ("max-length-nan", {"scoring": {"max_length": float("nan")}}, ["scoring.max_length", "nan"]),
    ("seed-string", {"seed": "one"}, ["seed", "'one'"]),
]


def _args(sandbox, args):  # noqa: F811
    return [str(sandbox.model) if a == "MODEL" else str(sandbox.corpus / "sentences.txt") if a == "DATA" else a
            for a in args]


@pytest.mark.parametrize("args, words", [c[1:] for c in COMMANDS], ids=[c[0] for c in COMMANDS])
def test_a_bad_command_value_is_one_line(sandbox, args, words):  # noqa: F811
    refused(sandbox, _args(sandbox, args), *words)


@pytest.mark.parametrize("changes, words", [c[1:] for c in PROTOCOLS], ids=[c[0] for c in PROTOCOLS])
def test_a_bad_protocol_value_is_one_line(sandbox, changes, words):  # noqa: F811
    protocol = sandbox.protocol(**changes)
    refused(sandbox, ["validate", str(protocol)], *words)


def test_a_number_of_millions_of_digits_and_a_huge_protocol_answer_at_once(sandbox):  # noqa: F811
    big = sandbox.write("big.yaml", sandbox.protocol().read_text() + "top: " + "9" * 5_000_000 + "\n")
    refused(sandbox, ["validate", str(big)], "bytes", "at most")
    digits = sandbox.write("digits.yaml", sandbox.protocol().read_text() + "top: " + "9" * 5_000 + "\n")
    refused(sandbox, ["validate", str(digits)], "digits")
    many = "\n".join(f"  - {{name: d{i}, path: {sandbox.corpus / 'sentences.txt'}}}" for i in range(100_000))
    lines = [line for line in sandbox.protocol().read_text().splitlines()
             if not line.startswith(("datasets:", "- name", "  path", "  name"))]
    crowded = sandbox.write("many.yaml", "\n".join(lines) + "\ndatasets:\n" + many + "\n")
    refused(sandbox, ["validate", str(crowded)], "bytes", "at most")


def test_a_config_of_a_million_layers_beside_tiny_weights_is_refused_before_loading(sandbox):  # noqa: F811
    huge = sandbox.work / "huge-model"
    shutil.copytree(sandbox.model, huge)
    config = json.loads((huge / "config.json").read_text())
    (huge / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 1_000_000}))
    protocol = sandbox.protocol(models=[str(huge)])
    refused(sandbox, ["validate", str(protocol)], "num_hidden_layers=1000000", "at most")


def test_init_on_a_data_file_whose_name_holds_a_newline_writes_a_valid_protocol(sandbox):  # noqa: F811
    from test_bad_input import runner

    from headstats.cli.main import app
    from headstats.config.protocol import load_protocol

    data = sandbox.work / "new\nline.txt"
    data.write_text((sandbox.corpus / "sentences.txt").read_text())
    out = sandbox.work / "p.yaml"
    result = runner.invoke(app, ["init", "--model", str(sandbox.model), "--data", str(data), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert str(load_protocol(out).datasets[0].path).endswith("new\nline.txt")
