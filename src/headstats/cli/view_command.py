"""``headstats view``: look at any sentence, one offline HTML page (model view, head view, heat map, sieve grid)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from headstats.cli.app import command
from headstats.cli.errors import _errors


@command("view")
def view_command(
    text: Optional[str] = typer.Argument(None, help="the sentence to look at (or --data FILE)"),
    pair: Optional[str] = typer.Option(None, "--pair", help="sentence B of a pair with TEXT"),
    model: str = typer.Option("default", "--model", help="'default', a directory or a hub id"),
    out: Path = typer.Option(Path("view.html"), "--out", help="the HTML file to write (one offline file)"),
    measure: str = typer.Option("weights", "--measure", help="what is drawn: weights (the attention weights)"),
    data: Optional[Path] = typer.Option(None, "--data", help="a data file whose first --limit inputs to view"),
    limit: int = typer.Option(3, "--limit", help="how many inputs of --data (at most 50)"),
    format: Optional[str] = typer.Option(None, "--format", help="the format of --data (default: from its name)"),
    run: Optional[Path] = typer.Option(None, "--run", help="a finished run folder: each head's roles, tau, "
                                       "claims and the run's inputs where it scores highest"),
    dataset: Optional[str] = typer.Option(None, "--dataset", help="the run's data set to show (default: its first)"),
    window: Optional[int] = typer.Option(None, "--window", help="w of the local sieve (default: the run's, else 2)"),
    max_length: Optional[int] = typer.Option(None, "--max-length", help="truncate longer inputs (default: the "
                                             "model's maximum)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out if it exists"),
) -> None:
    """Write one offline HTML page of a sentence's attention: every head as a thumbnail (model view), a head view
    whose colour key toggles heads, a heat map, and a sieve grid of every head's score on the pieces you pick.

    Example: headstats view "The cat sat on the mat." --out v.html
    """
    with _errors() as state:
        from headstats.errors import OutputError
        from headstats.report.viewer.build import build_view, view_records
        from headstats.study.viewing import VIEW_MEASURES

        if out.exists() and not overwrite:
            raise OutputError(f"{out} exists; give --overwrite to replace it, or another --out")
        if out.suffix.lower() not in (".html", ".htm"):
            raise OutputError(f"--out {out} is not an .html file; give e.g. --out view.html")
        if not out.parent.is_dir():
            raise OutputError(f"the folder of --out {out} does not exist; create it or give another --out")
        VIEW_MEASURES.get(measure)
        view_records(text, pair=pair, data=data, limit=limit, format=format)  # refused before the model loads
        page = build_view(model, text, pair=pair, data=data, limit=limit, format=format, measure=measure, run=run,
                          dataset=dataset, window=window, max_length=max_length)
        state.out = out
        page.save(out)
        state.written = True
        typer.echo(f"wrote {out} ({len(page.html) / 1e6:.2f} MB, {len(page.data['inputs'])} input(s)); open it in a "
                   "browser (works offline)")
