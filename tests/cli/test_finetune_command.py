"""headstats finetune: bad options refused in one line before any training."""

from __future__ import annotations

import pytest

from cli.cli_helpers import runner, assert_one_line_error, _glue_root
from headstats.cli.main import app


@pytest.mark.parametrize("options, words", [
    (["--epochs", "-1"], ["invalid --epochs -1.0", "greater than 0"]),
    (["--epochs", "nan"], ["invalid --epochs", "finite"]),
    (["--lr", "0"], ["invalid --lr", "greater than 0"]),
    (["--batch-size", "0"], ["invalid --batch-size 0", "greater than or equal to 1"]),
    (["--max-length", "4"], ["invalid --max-length 4"]),
    (["--train-rows", "-5"], ["invalid --train-rows -5"]),
    (["--seed", "-1"], ["invalid --seed -1"]),
    (["--task", "squad"], ["unknown GLUE task 'squad'"]),
    (["--model", "/nonexistent/base"], ["base model", "does not exist"]),
])
def test_finetune_options_refused_before_training(tmp_path, no_model_loading, options, words):
    root = _glue_root(tmp_path)
    args = ["finetune", "--task", "sst2", "--data-root", str(root), "--out", str(tmp_path / "ft"), *options]
    assert_one_line_error(runner.invoke(app, args), *words)
    assert not (tmp_path / "ft").exists()
