"""``headstats list-*``: what a protocol can name, a table per registry."""

from __future__ import annotations

from headstats.cli.app import command


# ------------------------------------------------------------------------------------------------ lists


def show_registry(title: str, rows: list[dict[str, object]]) -> None:
    """Print a registry as a table: one row per entry, its name first and its description last.

    Parameters
    ----------
    title : str
        What the entries are (the table's title).
    rows : list of dict
        One mapping per entry, column name -> value, the same columns in each.
    """
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_lines=False, box=None, header_style="bold")
    columns = list(rows[0]) if rows else ["name", "description"]
    for k, column in enumerate(columns):
        table.add_column(column, no_wrap=k == 0, overflow="fold")
    for row in rows:
        table.add_row(*(_cell(row[c]) for c in columns))
    Console(soft_wrap=False).print(table)


def _cell(value: object) -> str:
    from rich.markup import escape

    if isinstance(value, bool):
        return "yes" if value else ""
    return escape("" if value is None else str(value))


@command("list-roles")
def list_roles_command() -> None:
    """List the registered roles (and how to name a syntactic relation)."""
    from headstats.analyses.roles import ROLES

    rows = [{"name": name, "kind": spec.kind, "pairs only": spec.pairs_only, "description": spec.description}
            for name, spec in ROLES.items()]
    rows.append({"name": "syntactic:<rel>", "kind": "arc", "pairs only": False,
                 "description": "arcs of one relation, e.g. syntactic:nsubj, syntactic:dobj (UD 'obj' works too)"})
    show_registry("roles (scoring.roles)", rows)


@command("list-tests")
def list_tests_command() -> None:
    """List the one-sample tests (statistics.test), the paired tests (compare[].test) and the tests over seeds
    (compare[].seed_test)."""
    from headstats.stats.onesample import ONE_SAMPLE_TESTS
    from headstats.stats.paired import PAIRED_TESTS
    from headstats.stats.seeds import SEED_TESTS

    rows = [{"name": name, "used in": "statistics.test", "parameter": t.parameter, "effect size": t.effect_size,
             "description": t.description} for name, t in ONE_SAMPLE_TESTS.items()]
    rows += [{"name": name, "used in": "compare[].test", "parameter": t.parameter, "effect size": t.effect_size,
              "description": t.description} for name, t in PAIRED_TESTS.items()]
    rows += [{"name": name, "used in": "compare[].seed_test", "parameter": "mean over seeds", "effect size": "",
              "description": t.description} for name, t in SEED_TESTS.items()]
    show_registry("tests", rows)


@command("list-corrections")
def list_corrections_command() -> None:
    """List the multiple-comparison corrections (statistics.correction, compare[].correction)."""
    from headstats.stats.corrections import CORRECTIONS

    show_registry("corrections (statistics.correction)", [
        {"name": name, "controls": c.kind, "statsmodels": c.statsmodels_method, "description": c.description}
        for name, c in CORRECTIONS.items()])


@command("list-formats")
def list_formats_command() -> None:
    """List the input formats (datasets[].format) and the extensions that select them."""
    from headstats.inputs.readers import INPUT_FORMATS

    show_registry("input formats (datasets[].format)", [
        {"name": name, "extensions": " ".join(f.extensions), "description": f.description}
        for name, f in INPUT_FORMATS.items()])


@command("list-analyses")
def list_analyses_command() -> None:
    """List the analyses a protocol can add to the forward passes (analyses: [...])."""
    from headstats.analyses import ANALYSES, list_analyses

    selectable = set(list_analyses())
    show_registry("analyses (analyses: [...])", [
        {"name": name, "description": spec.description} for name, spec in ANALYSES.items() if name in selectable])
