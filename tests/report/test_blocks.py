"""Report rendering: number formats per column, anchors and contents, folded tables, one caption per figure,
self-contained HTML."""

from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from headstats.report.blocks import (
    screen_copy_of,
    Report,
    format_column,
    format_frame,
    markdown_table,
    render_html,
    screen_copy,
    render_markdown,
    render_tables,
    save_figure,
    slug,
    unique_slug,
    write_report,
)


def test_markdown_table_formatting():
    frame = pd.DataFrame({
        "role": ["local", "a|b"],
        "mean": [3.14159, np.nan],
        "p_corr": [1.234e-5, 0.5],
        "n": [10, 3],
        "reject": [True, False],
        "big": [123456.0, 0.0],
        "tiny": [1e-7, 2.5],
    })
    assert markdown_table(frame).splitlines() == [
        "| role | mean | p_corr | n | reject | big | tiny |",
        "|---|---|---|---|---|---|---|",
        "| local | 3.142 | 1.2e-05 | 10 | yes | 123456 | 1.00e-07 |",
        "| a\\|b |  | 0.5 | 3 | no | 0 | 2.500 |",
    ]


def test_counts_stay_integers_when_a_column_holds_a_missing_value():
    # what unstack() makes of a role not tested on one data set: floats with NaN
    counts = pd.DataFrame({"dataset": ["pairs", "single"], "block": [0.0, np.nan], "delimiter": [34, 38],
                           "local": [1.0, 0.0]})
    assert markdown_table(counts).splitlines()[2:] == ["| pairs | 0 | 34 | 1 |", "| single |  | 38 | 0 |"]
    assert format_column(pd.Series([1, None, 3], dtype="Int64")) == ["1", "", "3"]
    assert format_column(pd.Series([True, None], dtype="boolean")) == ["yes", ""]
    assert format_column(pd.Series([0.5, 1.5])) == ["0.500", "1.500"]


def test_p_value_columns_as_the_claims_table_prints_them():
    # one number format: two significant digits, scientific below 0.001 (the claims table's `p = 0.0023`)
    frame = pd.DataFrame({"p_unc": [1.0, 0.0312, np.nan], "p": [1e-300, 0.2, 0.00233], "power": [0.8, 0.9, 1.0]})
    shown = format_frame(frame)
    assert list(shown["p_unc"]) == ["1", "0.031", ""]
    assert list(shown["p"]) == ["1.0e-300", "0.2", "0.0023"]
    assert list(shown["power"]) == ["0.800", "0.900", "1.000"]


def test_markdown_table_empty_frame():
    assert markdown_table(pd.DataFrame(columns=["a", "b"])) == "| a | b |\n|---|---|"


def test_slugs_follow_github():
    assert slug("p-values, power and sensitivity") == "p-values-power-and-sensitivity"
    assert slug("default on demo_single") == "default-on-demo_single"
    assert slug("Roles of m on syntactic:nsubj") == "roles-of-m-on-syntacticnsubj"
    taken: set[str] = set()
    assert [unique_slug("Summary", taken) for _ in range(3)] == ["summary", "summary-1", "summary-2"]


def test_render_markdown(tmp_path):
    report = Report("Study")
    report.contents()
    report.heading("Results")
    report.heading("Details", level=3)
    report.text("Some **bold** text.")
    report.table(pd.DataFrame({"x": np.arange(5.0)}), caption="numbers", max_rows=2, fold=False)
    report.figure("figures/f.png", caption="a figure; look at the line")
    text = render_markdown(report)
    assert text.startswith("# Study\n\n**Contents**\n\n- [Results](#results)\n  - [Details](#details)\n\n"
                           "## Results\n\n### Details\n\nSome **bold** text.\n\n")
    assert "*numbers (first 2 of 5 rows; all rows in the CSV files)*" in text
    assert "| 0 |\n| 1 |\n\n" in text and "| 2 |" not in text
    assert "![f](figures/f.png)\n\n*a figure; look at the line*\n" in text
    assert text.count("a figure; look at the line") == 1


def test_long_tables_fold_and_link_their_csv():
    report = Report("Study")
    report.table(pd.DataFrame({"n": range(30)}), caption="all the rows", max_rows=20, csv="big.csv")
    report.table(pd.DataFrame({"n": range(3)}), caption="short")
    text = render_markdown(report)
    assert "<details><summary>all the rows (first 20 of 30 rows; all rows in big.csv)</summary>" in text
    assert "All rows: [big.csv](big.csv)\n\n</details>" in text
    assert "*short*\n\n| n |" in text  # three rows: not folded
    page = render_html(report, root=None)
    assert "<details><summary>all the rows (first 20 of 30 rows; all rows in big.csv)</summary>" in page
    assert "<a href='big.csv'>big.csv</a>" in page
    assert page.count("<details>") == 1


def test_render_html_inlines_figures_one_caption_each(tmp_path):
    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    rel = save_figure(fig, tmp_path, "line")
    assert rel == "figures/line.png"
    assert (tmp_path / "figures" / "line.svg").read_text().lstrip().startswith("<?xml")
    png = (tmp_path / rel).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"

    report = Report("A <study>")
    report.contents()
    report.heading("Figures")
    report.text("`code` and **bold**\n\n- one\n- two")
    report.table(pd.DataFrame({"role": ["x<y"], "p": [1e-6]}), caption="t")
    report.figure(rel, caption="the line")
    page = render_html(report, tmp_path)
    sources = re.findall(r"src=['\"]([^'\"]*)['\"]", page)
    # the screen copy matplotlib drew with the figure (not the print PNG resampled; see the test below)
    drawn = screen_copy_of(tmp_path / rel, png)
    assert drawn != screen_copy(png)
    assert sources == ["data:image/png;base64," + base64.b64encode(drawn).decode()]
    assert not re.search(r"(src|href)=['\"]?(https?:|//)", page)
    assert "<link" not in page and "<script" not in page
    assert "<title>A &lt;study&gt;</title>" in page
    assert "<code>code</code> and <b>bold</b>" in page
    assert "<ul><li>one</li><li>two</li></ul>" in page
    assert "x&lt;y" in page and "1.0e-06" in page
    assert "<figcaption class='caption'>the line <a href='figures/line.svg'>SVG</a></figcaption>" in page
    assert page.count("the line") == 1 and page.count("<figcaption") == page.count("<img") == 1
    assert "<h2 id='figures'>Figures</h2>" in page and "<a href='#figures'>Figures</a>" in page
    # shown at its printed size: 96 CSS px per inch of the figure (the PNG's pixels per inch, its pHYs chunk)
    from headstats.plots.style import preset

    assert f"width='{round(int.from_bytes(png[16:20], 'big') * 96 / preset().dpi)}'" in page

    write_report(report, tmp_path)
    assert (tmp_path / "report.html").read_text() == page
    # written: the copy is dropped; a report written again from the files alone resamples the PNG
    assert screen_copy_of(tmp_path / rel, png) == screen_copy(png)
    assert (tmp_path / "report.md").read_text() == render_markdown(report, tmp_path)
    assert "*the line* ([SVG](figures/line.svg))" in (tmp_path / "report.md").read_text()


def test_figure_tags_are_unique_for_names_that_differ_only_in_punctuation():
    from headstats.report.blocks import figure_tag

    assert figure_tag("default", "demo_single") == "default__demo_single"
    tags = {figure_tag("m", "a/b"), figure_tag("m", "a_b"), figure_tag("m", "a:b"), figure_tag("org/m", "d"),
            figure_tag("m", "A_b")}
    assert len({t.lower() for t in tags}) == 5
    assert all("/" not in t and ":" not in t for t in tags)
    assert figure_tag("m", "a/b").startswith("m__a_b-")


def test_a_figure_file_is_never_written_twice(tmp_path):
    assert save_figure(Figure(), tmp_path, "x", formats=["png"]) == "figures/x.png"
    assert not (tmp_path / "figures" / "x.svg").exists()
    with pytest.raises(RuntimeError, match="written twice"):
        save_figure(Figure(), tmp_path, "x")


def test_tables_formatted_ahead_give_the_same_report():
    def report() -> Report:
        r = Report("Study")
        r.table(pd.DataFrame({"n": range(30), "p_unc": np.linspace(1e-6, 1, 30)}), caption="rows", csv="big.csv")
        r.table(pd.DataFrame({"x": [0.5, np.nan], "flag": [True, False]}), caption="short")
        return r

    plain, ahead = report(), report()
    render_tables(ahead)
    assert [b.extra["markdown"] for b in ahead.blocks] != [None, None]
    assert render_markdown(ahead) == render_markdown(plain)
    assert render_html(ahead, root=None) == render_html(plain, root=None)
    only_md = report()
    render_tables(only_md, html_too=False)
    assert "html" not in only_md.blocks[0].extra and render_html(only_md, root=None) == render_html(plain, root=None)


def test_a_link_with_a_script_scheme_is_shown_as_text_never_as_a_link():
    # Text can come from a run folder made elsewhere: only run files, anchors and http(s) become links.
    from headstats.report.blocks import inline_markdown

    assert "href" not in inline_markdown("[x](javascript:alert(1))")
    assert "href" not in inline_markdown("[x](JavaScript:alert)")
    assert "href" not in inline_markdown("[x](data:text/html,hi)")
    assert inline_markdown("[tests](tests.csv)") == "<p><a href='tests.csv'>tests</a></p>"
    assert inline_markdown("[top](#claims)") == "<p><a href='#claims'>top</a></p>"
    assert inline_markdown("[paper](https://arxiv.org/abs/1906.04341)") == (
        "<p><a href='https://arxiv.org/abs/1906.04341'>paper</a></p>")


def test_screen_copy_is_the_figure_at_screen_resolution_in_few_colours(tmp_path):
    """The HTML shows a copy at SCREEN_DPI (two screen pixels per CSS pixel), 256 colours, the same printed size;
    a PNG already that coarse is inlined as it is."""
    import io

    from PIL import Image

    from headstats.plots import style
    from headstats.report.blocks import SCREEN_DPI, _css_width, png_dpi

    fig = Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    ax.imshow(np.linspace(0, 1, 400).reshape(20, 20))
    ax.set_title("a map")
    with style.using(style.Preset(dpi=300, formats=("png",))):
        (path,) = style.save(fig, tmp_path, "map")
    png = path.read_bytes()
    copy = screen_copy(png)
    with Image.open(io.BytesIO(png)) as big, Image.open(io.BytesIO(copy)) as small:
        assert small.mode == "P" and len(small.getcolors(256)) <= 256
        assert abs(small.width - big.width * SCREEN_DPI / 300) <= 1 and abs(small.height - big.height * 192 / 300) <= 1
    assert png_dpi(copy) == pytest.approx(SCREEN_DPI, abs=0.1) and _css_width(copy) == _css_width(png)
    assert len(copy) < len(png) / 2
    assert screen_copy(png) == copy  # deterministic: a rebuilt report changes no byte
    with style.using(style.Preset(dpi=150, formats=("png",))):
        (coarse,) = style.save(fig, tmp_path, "coarse")
    assert screen_copy(coarse.read_bytes()) == coarse.read_bytes()
    assert screen_copy(b"not a png") == b"not a png"


def test_screen_copy_drawn_by_matplotlib_looks_like_the_resampled_print(tmp_path):
    """The copy the HTML shows is drawn at SCREEN_DPI by matplotlib when the figure is saved (no resampling):
    same pixel size as the print PNG resampled to that resolution (within a pixel), 256 colours, the same
    printed width, and the same picture (mean pixel difference a few levels of 255, from anti-aliasing)."""
    import io

    from PIL import Image

    from headstats.plots import style
    from headstats.report.blocks import SCREEN_DPI, _css_width, png_dpi, save_figure

    fig = Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    ax.imshow(np.linspace(0, 1, 400).reshape(20, 20))
    ax.set_title("a map")
    with style.using(style.Preset(dpi=300, formats=("png", "svg"))):
        rel = save_figure(fig, tmp_path, "map")
    png = (tmp_path / rel).read_bytes()
    drawn, resampled = screen_copy_of(tmp_path / rel, png), screen_copy(png)
    assert drawn != resampled
    assert png_dpi(drawn) == pytest.approx(SCREEN_DPI, abs=0.1) and _css_width(drawn) == _css_width(png)
    with Image.open(io.BytesIO(drawn)) as a, Image.open(io.BytesIO(resampled)) as b:
        assert a.mode == "P" and abs(a.width - b.width) <= 1 and abs(a.height - b.height) <= 1
        w, h = min(a.width, b.width), min(a.height, b.height)
        pa = np.asarray(a.convert("RGB"), dtype=float)[:h, :w]
        pb = np.asarray(b.convert("RGB"), dtype=float)[:h, :w]
    assert np.abs(pa - pb).mean() < 6
    # a figure file changed after it was drawn is resampled from its bytes, never shown stale
    with style.using(style.Preset(dpi=250, formats=("png",))):
        (other,) = style.save(fig, tmp_path, "other")
    changed = other.read_bytes()
    (tmp_path / rel).write_bytes(changed)
    assert screen_copy_of(tmp_path / rel, changed) == screen_copy(changed) != drawn
