"""The app and its global options: --version, --verbose, and help that shows flags as flags."""

from __future__ import annotations

import re

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


def _commands(group=None, prefix=()):
    """Every command path of the app (``("cache", "info")``), groups included."""
    import typer

    group = group or typer.main.get_command(app)
    yield prefix
    for name, sub in getattr(group, "commands", {}).items():
        yield from _commands(sub, (*prefix, name))


@pytest.mark.parametrize("command", list(_commands()), ids=lambda c: " ".join(c) or "headstats")
def test_help_reads_well_at_80_columns(command):
    import re

    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(map(len, lines)) <= 80
    assert "…" not in result.output  # nothing cut (was: execution.memory_budge…)
    assert not re.search(r"<(path|str|int|float|list\[)", result.output), result.output  # Typer's metavars
    assert not re.search(r"\{[a-z_]+\}", result.output), result.output  # arguments as {protocol}
    # prose outside the panels is wrapped to the terminal, not broken where a docstring's source line ended
    prose = [line.strip() for line in lines
             if line.startswith(" ") and not line.strip().startswith(("│", "╭", "╰", "Usage"))]
    for k, line in enumerate(prose[:-1]):
        if line and prose[k + 1] and not line.endswith((".", ":", ")")):
            assert len(line) >= 60, (line, result.output)


def test_help_lists_init_first_and_the_options_of_run_with_their_values():
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "80"}, terminal_width=80)
    names = [line.split()[1] for line in result.output.splitlines() if line.startswith("│ ") and
             len(line.split()) > 1 and not line.split()[1].startswith("-") and line[2] != " "]
    assert names[:3] == ["init", "validate", "run"], names
    run_help = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "80"}, terminal_width=80).output
    for option, metavar in [("--out", "PATH"), ("--limit", "N"), ("--set", "KEY=VALUE"), ("PROTOCOL", "PATH")]:
        assert re.search(rf"{re.escape(option)}\s+{re.escape(metavar)}\b", run_help), (option, run_help)
    assert re.search(r"Usage: \S+ run \[OPTIONS\] PROTOCOL\s*$", run_help, re.M), run_help


def test_reflow_joins_a_paragraphs_lines_and_keeps_paragraphs():
    from headstats.cli.app import reflow

    assert reflow("First line\n    goes on.\n\n    Second\n    paragraph.\n") == "First line goes on.\n\nSecond paragraph."
    assert reflow(None) is None
