"""The app and its global options: --version, --verbose, and help that shows flags as flags."""

from __future__ import annotations

import pytest

from cli.cli_helpers import runner
from headstats.cli.main import app


def test_version():
    from headstats import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"headstats {__version__}"


@pytest.mark.parametrize("command", ["run", "score", "validate", "report", "finetune", "init", "merge",
                                     "cache prune", "cache info", ""])
def test_help_shows_flags_as_flags(command):
    result = runner.invoke(app, [*command.split(), "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    flag = {"init": "--force", "cache prune": "--all", "cache info": "--cache-dir", "": "--verbose",
            "validate": "--no-cache"}
    assert flag.get(command, "--quiet") in result.output
