"""Report rendering: Markdown tables, Markdown with linked figures, self-contained HTML."""

from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from headstats.report import Report, markdown_table, render_html, render_markdown, save_figure, write_report


def test_markdown_table_formatting():
    frame = pd.DataFrame({
        "role": ["local", "a|b"],
        "mean": [3.14159, np.nan],
        "p_corr": [1.234e-5, 0.5],
        "n": [10, 3],
        "reject": [True, False],
        "big": [123456.0, 0.0],
    })
    assert markdown_table(frame).splitlines() == [
        "| role | mean | p_corr | n | reject | big |",
        "|---|---|---|---|---|---|",
        "| local | 3.142 | 1.23e-05 | 10 | yes | 1.23e+05 |",
        "| a\\|b |  | 0.500 | 3 | no | 0.000 |",
    ]


def test_markdown_table_empty_frame():
    assert markdown_table(pd.DataFrame(columns=["a", "b"])) == "| a | b |\n|---|---|"


def test_render_markdown(tmp_path):
    report = Report("Study")
    report.heading("Results")
    report.text("Some **bold** text.")
    report.table(pd.DataFrame({"x": np.arange(5.0)}), caption="numbers", max_rows=2)
    report.figure("figures/f.png", caption="a figure")
    text = render_markdown(report)
    assert text.startswith("# Study\n\n## Results\n\nSome **bold** text.\n\n")
    assert "*numbers (first 2 of 5 rows; all rows in the CSV files)*" in text
    assert "| 0.000 |\n| 1.000 |\n\n" in text and "2.000" not in text
    assert "![a figure](figures/f.png)\n\n*a figure*\n" in text


def test_render_html_inlines_figures(tmp_path):
    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    rel = save_figure(fig, tmp_path, "line")
    assert rel == "figures/line.png"
    png = (tmp_path / rel).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"

    report = Report("A <study>")
    report.heading("Figures")
    report.text("`code` and **bold**\n\n- one\n- two")
    report.table(pd.DataFrame({"role": ["x<y"], "p": [1e-6]}), caption="t")
    report.figure(rel, caption="the line")
    page = render_html(report, tmp_path)
    sources = re.findall(r"src=['\"]([^'\"]*)['\"]", page)
    assert sources == ["data:image/png;base64," + base64.b64encode(png).decode()]
    assert base64.b64decode(sources[0].split(",", 1)[1]) == png
    assert not re.search(r"(src|href)=['\"]?(https?:|//)", page)
    assert "<link" not in page and "<script" not in page
    assert "<title>A &lt;study&gt;</title>" in page
    assert "<code>code</code> and <b>bold</b>" in page
    assert "<ul><li>one</li><li>two</li></ul>" in page
    assert "x&lt;y" in page and "1.00e-06" in page
    assert "<figcaption class='caption'>the line</figcaption>" in page

    write_report(report, tmp_path)
    assert (tmp_path / "report.html").read_text() == page
    assert (tmp_path / "report.md").read_text() == render_markdown(report)


def test_figure_tags_are_unique_for_names_that_differ_only_in_punctuation():
    from headstats.report import figure_tag

    assert figure_tag("default", "demo_single") == "default__demo_single"
    tags = {figure_tag("m", "a/b"), figure_tag("m", "a_b"), figure_tag("m", "a:b"), figure_tag("org/m", "d"),
            figure_tag("m", "A_b")}
    assert len({t.lower() for t in tags}) == 5
    assert all("/" not in t and ":" not in t for t in tags)
    assert figure_tag("m", "a/b").startswith("m__a_b-")


def test_a_figure_file_is_never_written_twice(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from headstats.report import save_figure

    assert save_figure(Figure(), tmp_path, "x") == "figures/x.png"
    with pytest.raises(RuntimeError, match="written twice"):
        save_figure(Figure(), tmp_path, "x")
