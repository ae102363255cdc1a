"""What a study gives back: its log says what each step does, and the result shows in a notebook (a short
summary, the report embedded or opened in the browser)."""

from __future__ import annotations

import pandas as pd
from tiny_study import tiny_protocol

from headstats.config.protocol import load_protocol
from headstats.report.builder import build_report
from headstats.study.run import run_study


def test_statistics_and_report_steps_say_what_they_do_and_the_result_shows_in_a_notebook(
        tmp_path, tiny_model_dir, monkeypatch):
    import html
    import sys
    import types

    lines: list[str] = []
    protocol = load_protocol(tiny_protocol(tmp_path, tiny_model_dir, ["local", "delimiter"]))
    result = run_study(protocol, tmp_path / "out", log=lines.append, report=build_report)
    tests = pd.read_csv(tmp_path / "out" / "tests.csv")
    assert "testing every head and role: 8 (head, role) pairs, t test, tau 1, holm correction" in lines
    tested = next(line for line in lines if line.startswith("tested in "))
    assert tested.endswith(f": {int(tests['reject'].sum())} (head, role) pairs assigned")
    assert "report: summary and role grids of 1 (model, data set)" in lines
    assert lines.index("drawing the figures and writing the report") < lines.index(
        "report: writing report.md and report.html")

    page = result._repr_html_()
    roles = pd.read_csv(tmp_path / "out" / "roles.csv")
    assert "<td style='text-align:left'>12</td>" in page  # inputs scored
    held = [c for c in roles.columns if c in ("local", "delimiter")]
    assert ", ".join(f"{c} {int(roles[c].sum())}" for c in held) in page
    assert (tmp_path / "out" / "report.html").resolve().as_uri() in page

    class HTML:  # IPython.display.HTML, as far as show_report uses it
        def __init__(self, data):
            self.data = data

    class Shell:  # IPython's shell: in a notebook it has a kernel, in a terminal IPython none
        kernel = object()

    ipython = types.ModuleType("IPython")
    ipython.get_ipython = Shell
    display = types.ModuleType("IPython.display")
    display.HTML, display.Markdown = HTML, HTML
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    shown = result.show_report(height=500)
    # wrapped in a <div>: IPython warns on every call about HTML that starts with an <iframe>
    assert shown.data.startswith('<div><iframe srcdoc="') and "height:500px" in shown.data
    report = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert html.escape(report, quote=True) in shown.data  # the whole self-contained page, escaped

    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    Shell.kernel = None  # IPython importable, running in a terminal: the browser opens the file
    assert result.show_report() == tmp_path / "out" / "report.html"
    monkeypatch.delitem(sys.modules, "IPython")  # a plain script
    assert result.show_report() == tmp_path / "out" / "report.html"
    assert opened == [(tmp_path / "out" / "report.html").resolve().as_uri()] * 2

    # the run folder reopens as the StudyResult the run returned, without any model
    import headstats as hs

    again = hs.open_run(tmp_path / "out")
    assert again._summary_rows() == result._summary_rows() and again.report_path == result.report_path
