"""The README for users: short, its commands and flags as `--help` has them, its links resolving in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer

from headstats.cli.main import app

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
#: The pages the README's text moved into (written with it; their links are checked too).
MOVED_TO = ["docs/guide.md", "docs/architecture.md", "docs/large-runs.md", "docs/benchmarks.md"]

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`(headstats [^`]*)`")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def fenced(text: str, inside: bool) -> list[str]:
    """The lines inside fenced code blocks (``inside``), or those outside them."""
    lines, within = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            within = not within
        elif within == inside:
            lines.append(line)
    return lines


def prose(text: str) -> list[str]:
    return fenced(text, inside=False)


def code_lines(text: str) -> list[str]:
    return fenced(text, inside=True)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in prose(path.read_text(encoding="utf-8")) if re.match(r"#{1,6} ", line)}


def resolve(command, words: list[str]):
    """The (sub)command that ``headstats <words>`` names, and its name."""
    names = []
    for word in words:
        if is_group(command) and word in command.commands:
            command = command.commands[word]
            names.append(word)
        else:
            break
    return command, " ".join(names)


def is_group(command) -> bool:
    return hasattr(command, "commands")  # typer's own click: no isinstance


def flags_of(command) -> set[str]:
    return {o for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")} | {"--help"}


def command_uses(text: str) -> list[tuple[str, str]]:
    """``(where, command line)`` of every headstats command the text shows: code spans of its prose and the
    lines of its code blocks (a ``# comment`` cut off)."""
    uses = [("prose", span) for line in prose(text) for span in CODE_SPAN.findall(line)]
    for line in code_lines(text):
        for part in re.split(r"&&|\|", line.split("  #")[0]):
            part = part.strip()
            if part.startswith("headstats "):
                uses.append(("code", part))
    return uses


CLI = typer.main.get_command(app)


def test_the_readme_is_short_and_keeps_the_test_command():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert "python -m pytest" in text


def test_the_first_60_lines_go_from_install_to_your_own_datas_report():
    first = "\n".join(README.read_text(encoding="utf-8").splitlines()[:60])
    order = ["pip install", "headstats run protocols/quickstart.yaml", "headstats init", "headstats validate",
             "headstats run my.yaml"]
    at = [first.find(step) for step in order]
    assert -1 not in at and at == sorted(at), dict(zip(order, at))


@pytest.mark.parametrize("page", ["README.md", *MOVED_TO])
def test_every_command_names_only_flags_its_help_has(page):
    uses = command_uses((REPO / page).read_text(encoding="utf-8"))
    assert uses or page != "README.md"
    for where, line in uses:
        command, name = resolve(CLI, line.split()[1:])
        unknown = set(FLAG.findall(line)) - flags_of(command)
        assert not unknown, f"{page} ({where}): `{line}` names {sorted(unknown)}, not in `headstats {name} --help`"


def test_each_row_of_the_commands_table_names_every_option_of_its_command():
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Commands"):].split("\n## ")[0]
    rows = [line for line in table.splitlines() if line.startswith("| `headstats ")]
    named = set()
    for row in rows:
        for span in CODE_SPAN.findall(row.split(" | ")[0]):
            command, name = resolve(CLI, span.split()[1:])
            if is_group(command):
                continue
            named.add(name)
            given = set(FLAG.findall(span))
            for param in command.params:
                options = {o for o in (*param.opts, *param.secondary_opts) if o.startswith("--")}
                assert not options or options & given, f"`{span}` leaves out {sorted(options)}"
    every = {name for name, c in CLI.commands.items() if not is_group(c) and not name.startswith("list-")} | {f"cache {name}" for name in CLI.commands["cache"].commands}
    assert every <= named, sorted(every - named)


@pytest.mark.parametrize("page", ["README.md", *MOVED_TO])
def test_every_link_resolves_in_the_repository(page):
    path = REPO / page
    links = [link for line in prose(path.read_text(encoding="utf-8")) for link in LINK.findall(line)]
    assert links or page != "README.md"
    for link in links:
        if re.match(r"[a-z]+:", link):  # http(s), mailto: outside the repository
            continue
        target, _, anchor = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        assert file.exists() and REPO in file.parents, f"{page}: {link} does not resolve"
        if anchor:
            assert file.suffix == ".md" and anchor in anchors(file), f"{page}: no heading #{anchor} in {file.name}"


def test_the_checks_catch_a_wrong_flag_and_a_dead_link():
    """The helpers above fail on what they must fail on (a test that cannot fail is no test)."""
    command, name = resolve(CLI, "validate p.yaml --quiet".split())
    assert name == "validate" and "--quiet" not in flags_of(command) and "--cache-dir" in flags_of(command)
    assert resolve(CLI, "cache prune --all".split())[1] == "cache prune"
    assert slug("What the heads look at (Clark et al. 2019)") == "what-the-heads-look-at-clark-et-al-2019"
    assert slug("4. The columns of `tests.csv`") == "4-the-columns-of-testscsv"
    assert "no-such-heading" not in anchors(README)
    assert command_uses("```bash\nheadstats run p.yaml --out x   # a comment --nope\n```\n") == [
        ("code", "headstats run p.yaml --out x")]
