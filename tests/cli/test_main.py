"""headstats.cli.main registers every command of every module, in the order `headstats --help` lists them (groups last)."""

from __future__ import annotations

import typer

import headstats.cli
from headstats.cli.main import app


def test_every_command_is_registered_in_order():
    command = typer.main.get_command(app)
    assert list(command.commands) == [
        "run", "score", "validate", "report", "finetune", "init", "list-roles", "list-tests", "list-corrections",
        "list-formats", "list-analyses", "merge", "view", "cache"]
    assert list(command.commands["cache"].commands) == ["info", "prune"]
    assert headstats.cli.app is app  # the console script's entry point
