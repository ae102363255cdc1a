"""The figure style: fixed colour-blind-safe role colours, role order, saving PNG + SVG, no leaked rcParams."""

from __future__ import annotations

import matplotlib
import pytest
import matplotlib.colors as mcolors
from matplotlib.figure import Figure

from headstats.plots import style


def test_builtin_roles_have_fixed_distinct_palette_colours():
    colours = style.role_colours(style.ROLE_ORDER)
    assert len(set(colours.values())) == len(style.ROLE_ORDER) == 10
    palette = set(style.TOL_MUTED) | {style.DARK_GREY, style.OKABE_ITO["orange"]}
    assert set(colours.values()) <= palette
    # the same role has the same colour whatever else is drawn
    assert style.role_colours(["syntactic:amod"])["syntactic:amod"] == colours["syntactic:amod"]
    assert style.role_colours(["delimiter_cls", "local"])["delimiter_cls"] == colours["delimiter_cls"]


def test_other_roles_take_unused_colours():
    colours = style.role_colours(["local", "previous", "syntactic:det"])
    assert colours["previous"] != colours["syntactic:det"]
    assert colours["local"] not in (colours["previous"], colours["syntactic:det"])


def test_order_roles_and_families():
    assert style.order_roles(["syntactic:det", "block", "zeta", "syntactic:nsubj", "local", "local"]) == [
        "local", "block", "syntactic:nsubj", "syntactic:det", "zeta"]
    assert [style.role_family(r) for r in ["delimiter_cls", "delimiter", "syntactic:amod", "block"]] == [
        "delimiter", "delimiter", "syntactic", "block"]


def test_series_colours_are_okabe_ito():
    assert set(style.SERIES) <= set(style.OKABE_ITO.values())


def test_save_writes_png_and_svg_with_text_as_text(tmp_path):
    fig = Figure(figsize=(2, 1.5), layout="constrained")
    fig.add_subplot().set_title("a title")
    paths = style.save(fig, tmp_path, "f")
    assert [p.name for p in paths] == ["f.png", "f.pdf", "f.svg"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = paths[2].read_text()
    assert "a title" in svg  # svg.fonttype none: text stays searchable and editable
    assert b"/FontFile2" in paths[1].read_bytes()  # pdf.fonttype 42: TrueType, editable in a PDF editor
    width = int.from_bytes(paths[0].read_bytes()[16:20], "big")
    assert abs(width - 2 * style.preset().dpi) <= 2
    with style.using(style.Preset(dpi=150, formats=("png",))):
        (png,) = style.save(fig, tmp_path, "g")
    from headstats.report.blocks import png_dpi

    assert png_dpi(png.read_bytes()) == pytest.approx(150, abs=0.1)  # the pHYs chunk says 150 dpi


def test_styled_leaves_the_users_settings_alone():
    before = matplotlib.rcParams["font.size"]

    @style.styled
    def draw():
        return matplotlib.rcParams["font.size"]

    assert draw() == style.RC["font.size"]
    assert matplotlib.rcParams["font.size"] == before
    assert mcolors.to_hex(style.RC["axes.prop_cycle"].by_key()["color"][0]) == style.SERIES[0].lower()


def test_save_lays_out_once_and_every_format_keeps_that_layout(tmp_path, monkeypatch):
    import io

    draws = []
    original = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda self, renderer: (draws.append(self), original(self, renderer))[1])

    def figure(layout):
        fig = Figure(figsize=(3, 2), layout=layout)
        axes = fig.subplots(1, 2)
        axes[0].set_ylabel("a long label\non two lines")
        fig.colorbar(axes[1].imshow([[0, 1], [2, 3]]), ax=axes[1])
        return fig

    fig = figure("constrained")
    paths = style.save(fig, tmp_path, "f")
    # matplotlib draws a figure with a layout engine twice per file (once to lay it out); save runs the layout
    # itself, then draws once per file
    assert len(draws) == 3 and fig.get_layout_engine() is None
    # the same bytes as matplotlib's own way: the PNG saved with the engine (its pre-draw lays the figure out),
    # then PDF and SVG with the positions it left
    own = figure("constrained")
    with style.context():
        for k, path in enumerate(paths):
            fmt = path.suffix[1:]
            out = io.BytesIO()
            own.savefig(out, format=fmt, dpi=style.preset().dpi, metadata=style._metadata(fmt))
            assert out.getvalue() == path.read_bytes(), fmt
            if k == 0:
                style._drop_layout_engine(own)
    draws.clear()
    reference = figure("constrained")  # the layout constrained_layout gives at the PNG's resolution
    with style.context():
        reference.savefig(io.BytesIO(), format="png", dpi=style.preset().dpi)
    for ax, ref in zip(fig.axes, reference.axes):
        assert ax.get_position().bounds == ref.get_position().bounds
    assert fig.axes[0].get_position().x0 > 0.1  # the long label moved the panel right: laid out

    draws.clear()
    loose = figure(None)  # no layout engine: a tight box, measured once without a draw (issue 23: drawn twice)
    paths = style.save(loose, tmp_path, "g")
    assert len(draws) == 3  # one per file
    png_width = int.from_bytes(paths[0].read_bytes()[16:20], "big")
    svg = paths[2].read_text()
    svg_width_pt = float(svg.split('width="')[1].split("pt")[0])
    assert abs(png_width / style.preset().dpi - svg_width_pt / 72) < 0.03  # the same box, in inches


def test_text_size_is_the_text_box_matplotlib_draws():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    with style.context():
        fig = Figure(dpi=style.PNG_DPI)
        renderer = FigureCanvasAgg(fig).get_renderer()
        for text, size in [("syntactic:advmod", 9), ("10", 7), ("0.000261", 6)]:
            box = fig.text(0, 0, text, fontsize=size).get_window_extent(renderer)
            width, height = style.text_size(text, size)
            assert width == pytest.approx(box.width / style.PNG_DPI, abs=1e-9)
            assert height == pytest.approx(box.height / style.PNG_DPI, abs=1e-9)
    assert style.widest(["1", "10", "100"], 8) == style.text_size("100", 8)[0]
    assert style.widest([], 8) == 0.0


def test_panel_rects_share_what_the_margins_leave():
    # 10 x 5 in, 3 panels in rows of 2: width (10 - 1 - 0.5 - 0.5) / 2 = 4; height (5 - 1 - 0.5 - 0.5) / 2 = 1.5
    rects = style.panel_rects((10, 5), 3, 2, left=1, right=0.5, top=1, bottom=0.5, col_gap=0.5)
    expected = [(1, 5 - 1 - 1.5, 4, 1.5), (5.5, 2.5, 4, 1.5), (1, 2.5 - 0.5 - 1.5, 4, 1.5)]
    for rect, (x, y, w, h) in zip(rects, expected):
        assert rect == pytest.approx((x / 10, y / 5, w / 10, h / 5))
    with pytest.raises(ValueError, match="no room"):
        style.panel_rects((1, 1), 4, 2, left=0.5, right=0.5, top=0, bottom=0, col_gap=0.1)


def test_fit_keeps_every_text_inside_and_a_laid_out_figure_is_drawn_once_per_file(tmp_path, monkeypatch):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    with style.context():
        fig = Figure(figsize=(4, 3))
        ax = fig.add_subplot()
        ax.plot([0, 1], [0, 123456])
        ax.set_ylabel("a long label\non two lines")
        ax.set_title("a title")
        ax.legend(["a rather long legend entry"], loc="upper left", bbox_to_anchor=(1.01, 1.0))
        style.fit(fig)
        assert style.is_laid_out(fig) and fig.dpi == 100 and type(fig.canvas).__name__ == "FigureCanvasBase"
        fig.set_dpi(style.PNG_DPI)
        renderer = FigureCanvasAgg(fig).get_renderer()
        tight = ax.get_tightbbox(renderer, bbox_extra_artists=[ax.get_legend()])
        pad = style.PAD * style.PNG_DPI
        # every text inside the figure, with the pad to spare and little more (the legend sits 1 % of the axes'
        # width beside it, and the axes shrank by one measurement: a few pixels closer)
        margins = [tight.x0, fig.bbox.width - tight.x1, tight.y0, fig.bbox.height - tight.y1]
        assert all(pad - 0.5 <= m <= pad + 4 for m in margins), margins
    draws = []
    original = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda self, renderer: (draws.append(self), original(self, renderer))[1])
    before = ax.get_position().bounds
    paths = style.save(fig, tmp_path, "fit")
    assert len(draws) == 3 and ax.get_position().bounds == before  # one draw per file, no tight box
    width = int.from_bytes(paths[0].read_bytes()[16:20], "big")
    assert width == 4 * style.preset().dpi  # the whole canvas


def _lightness(colour: str) -> float:
    """CIELAB L* of an sRGB colour (what a grey-scale print keeps)."""
    rgb = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in mcolors.to_rgb(colour)]
    y = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
    return 116 * (y ** (1 / 3) if y > 0.008856 else 7.787 * y + 16 / 116) - 16


def test_roles_that_share_a_cell_neighbourhood_differ_in_grey():
    """delimiter, delimiter_cls and syntactic:amod once had three wine and rose hues; in grey (L*) they differ
    by at least 14 of 100 (they were 10 apart)."""
    shades = sorted(_lightness(style.ROLE_COLOURS[r]) for r in ("delimiter", "delimiter_cls", "syntactic:amod"))
    assert min(b - a for a, b in zip(shades, shades[1:])) >= 14
    assert _lightness("#000000") == pytest.approx(0, abs=1e-9) and _lightness("#FFFFFF") == pytest.approx(100)


def test_presets_set_the_width_and_restore_the_one_before():
    assert style.figure_width() == 7.0
    with style.using(style.Preset(width=3.5)):
        assert style.figure_width() == 3.5
        assert style.columns_for(1.6, 10) == 2
    assert style.figure_width() == 7.0 and style.columns_for(1.6, 10) == 4 and style.columns_for(1.6, 3) == 3


def test_drawable_replaces_only_what_no_font_can_draw():
    assert style.drawable("café, naïve – ok") == "café, naïve – ok"  # DejaVu Sans draws these
    assert style.drawable("a\u0378b") == f"a{style.PLACEHOLDER}b"  # an unassigned code point: no font has it
    assert style.drawable("a\tb") == "a\tb"


def test_place_labels_never_overlap_on_a_planted_crowd():
    """Twelve points crowded in one spot and four far apart: the far ones are all labelled, no two label boxes
    overlap, no label covers a point, and the crowd gets the labels that fit."""
    import numpy as np

    xs = [0.0, 10.0, 0.0, 10.0] + [5.0 + 0.02 * k for k in range(12)]
    ys = [0.0, 0.0, 10.0, 10.0] + [5.0 + 0.01 * k for k in range(12)]
    labels = [f"far{k}" for k in range(4)] + [f"5-{k}" for k in range(12)]
    fig = Figure(figsize=(3, 3))
    ax = fig.add_subplot()
    ax.scatter(xs, ys)
    ax.set_xlim(-2, 12)
    ax.set_ylim(-2, 12)
    placed = style.place_labels(ax, xs, ys, labels)
    texts = [t.get_text() for t in placed]
    assert {"far0", "far1", "far2", "far3"} <= set(texts)
    assert 4 < len(texts) < len(labels)  # some of the crowd, not all of it
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in placed]
    assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    points = ax.transData.transform(np.column_stack([xs, ys]))
    assert not any(box.contains(x, y) for box in boxes for x, y in points)
    assert all(t.get_fontsize() == style.MIN_FONT for t in placed)
    assert [t for t in ax.texts] == placed  # the labels that did not fit are removed, not hidden
