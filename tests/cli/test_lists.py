"""headstats list-*: a table per registry, each entry with its description."""

from __future__ import annotations

import pytest

from cli.cli_helpers import runner
from headstats.cli.main import app


def test_list_roles():
    result = runner.invoke(app, ["list-roles"])
    assert result.exit_code == 0
    assert "delimiter_sep" in result.output and "syntactic:<rel>" in result.output


def _registry_rows():
    from headstats.analyses import ANALYSES, list_analyses
    from headstats.analyses.roles import ROLES
    from headstats.inputs.readers import INPUT_FORMATS
    from headstats.stats.corrections import CORRECTIONS
    from headstats.stats.onesample import ONE_SAMPLE_TESTS
    from headstats.stats.paired import PAIRED_TESTS
    from headstats.stats.seeds import SEED_TESTS

    list_analyses()  # discovers the analysis modules
    return {
        "list-roles": ROLES.items(),
        "list-tests": [*ONE_SAMPLE_TESTS.items(), *PAIRED_TESTS.items(), *SEED_TESTS.items()],
        "list-corrections": CORRECTIONS.items(),
        "list-formats": INPUT_FORMATS.items(),
        "list-analyses": [(n, a) for n, a in ANALYSES.items() if a.selectable],
    }


@pytest.mark.parametrize("command", ["list-roles", "list-tests", "list-corrections", "list-formats",
                                     "list-analyses"])
def test_list_commands_show_each_registry_entry_with_its_description(command):
    result = runner.invoke(app, [command], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    entries = _registry_rows()[command]
    assert entries
    for name, entry in entries:
        assert entry.description, name
        assert any(line.split() and line.split()[0] == name and entry.description in line for line in lines), \
            (name, result.output)
    assert "name" in lines[1] and "description" in lines[1]  # the header row under the title


def test_list_formats_names_the_extensions():
    result = runner.invoke(app, ["list-formats"], env={"COLUMNS": "250"})
    conllu = next(line for line in result.output.splitlines() if line.split()[:1] == ["conllu"])
    assert ".conllu" in conllu and ".conll" in conllu
