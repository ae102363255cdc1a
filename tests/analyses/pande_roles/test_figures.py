"""Role figures from hand-made tables: what each figure draws (slots, outlines, bars, dots) is counted."""

from __future__ import annotations

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from headstats.analyses.pande_roles.finish.role_assignment import colocation, role_table
from headstats.tables.study_tables import heads_per_role_per_layer
from headstats.plots import style
from headstats.analyses.pande_roles.figures import (
    CELL_PAD,
    grid_layout,
    heads_per_layer_plot,
    mean_score_maps,
    role_grid,
    slot_rectangle,
    upset_plot,
)

# 3 layers x 2 heads; roles held by hand
HELD = {
    "local": {(0, 0), (0, 1), (2, 1)},
    "syntactic": {(0, 0), (1, 1)},
    "delimiter": {(1, 0), (0, 0)},
}
ORDER = ["local", "delimiter", "syntactic"]  # the figures' role order (style.order_roles)


@pytest.fixture
def tests_table() -> pd.DataFrame:
    rows = []
    for role, heads in HELD.items():
        for layer in range(3):
            for head in range(2):
                reject = (layer, head) in heads
                rows.append(dict(model="m", dataset="d", role=role, layer=layer, head=head, n=10,
                                 mean=4.0 + layer + head / 10 if reject else 1.0 + layer, reject=reject))
    return pd.DataFrame(rows)


def role_collections(fig: Figure) -> dict[str, int]:
    ax = fig.axes[0]
    return {c.get_label(): len(c.get_paths()) for c in ax.collections}


# ------------------------------------------------------------------------------------------------ role grid

def test_grid_layout_square_slots_as_large_as_the_width_allows():
    # column (3.5 in), 6 x 12 heads, 10 roles: cells (3.5 - 0.55) / 12 = 0.2458 in wide; 1 slot per row would
    # make the grid 6 x 10 x 0.2458 = 14.7 in tall (over 4 in); 2 per row: 6 x 5 x 0.2458 / 2 = 3.69 in
    shape, cell_w, cell_h = grid_layout(6, 12, 10, 3.5)
    assert shape == (5, 2)
    assert cell_w == pytest.approx(2.95 / 12) and cell_h == pytest.approx(5 * cell_w / 2)
    # text (7 in): cells capped at 0.5 in; 2 per row would be 7.5 in tall (over 0.75 x 7 = 5.25), 3 per row 4.0
    shape, cell_w, cell_h = grid_layout(6, 12, 10, 7.0)
    assert shape == (4, 3) and cell_w == 0.5 and cell_h == pytest.approx(4 * 0.5 / 3)
    shape = (2, 5)
    for k in range(10):
        rect = slot_rectangle(4, 7, k, shape)
        assert 7 + CELL_PAD <= rect.get_x() and rect.get_x() + rect.get_width() <= 8 - CELL_PAD + 1e-12
        assert 4 + CELL_PAD <= rect.get_y() and rect.get_y() + rect.get_height() <= 5 - CELL_PAD + 1e-12
    # slot 6 of a 2 x 5 cell: second row, second column
    rect = slot_rectangle(0, 0, 6, shape)
    width, height = (1 - 2 * CELL_PAD) / 5, (1 - 2 * CELL_PAD) / 2
    assert rect.get_x() > CELL_PAD + width and rect.get_x() < CELL_PAD + 2 * width
    assert rect.get_y() > CELL_PAD + height


def test_role_grid_one_slot_per_role_held(tests_table):
    roles = role_table(tests_table)
    fig = role_grid(roles, title="grid")
    assert isinstance(fig, Figure)
    counts = role_collections(fig)
    assert counts == {"local": 3, "delimiter": 2, "syntactic": 2, "_tested, not held": 3 * 6 - 7}
    (ax,) = fig.axes
    colours = style.role_colours(ORDER)
    # slots fixed by style.ROLE_ORDER: local 0, delimiter 2, syntactic 5 (block's 1 and the delimiter parts'
    # 3, 4 left empty), so 6 slots per cell
    shape = grid_layout(3, 2, 6, style.figure_width())[0]
    for collection in ax.collections:
        role = collection.get_label()
        if role.startswith("_"):
            continue
        assert mcolors.to_hex(collection.get_facecolor()[0]) == mcolors.to_hex(colours[role]).lower()
        k = {"local": 0, "delimiter": 2, "syntactic": 5}[role]
        got = {tuple(np.round(p.vertices[0], 6)) for p in collection.get_paths()}
        expected = {tuple(np.round(slot_rectangle(layer, head, k, shape).get_xy(), 6)) for layer, head in HELD[role]}
        assert got == expected
    assert ax.get_title() == "grid"
    assert ax.get_xlim() == (0, 2) and ax.get_ylim() == (3, 0)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ORDER


def test_role_grid_untested_role_leaves_its_slots_blank(tests_table):
    roles = role_table(tests_table)
    roles["block"] = pd.array([pd.NA] * len(roles), dtype="boolean")
    counts = role_collections(role_grid(roles))
    assert counts["block"] == 0
    assert counts["_tested, not held"] == 3 * 6 - 7  # no grey slot for block either


def test_role_slots_stay_put_when_a_role_is_absent(tests_table):
    assert style.role_slots(["syntactic", "local", "mine", "syntactic:xcomp"]) == {
        "local": 0, "syntactic": 5, "syntactic:xcomp": 6, "mine": 7}
    assert style.role_slots(ROLES10) == {role: k for k, role in enumerate(ROLES10)}

    def corners(fig, role):
        (collection,) = [c for c in fig.axes[0].collections if c.get_label() == role]
        return sorted(tuple(np.round(p.vertices[0] - np.floor(p.vertices[0]), 6)) for p in collection.get_paths())

    with_block = role_table(tests_table.assign(role=tests_table["role"].replace({"delimiter": "block"})))
    without = role_table(tests_table.assign(role=tests_table["role"].replace({"delimiter": "local"})))
    a, b = role_grid(with_block), role_grid(without)
    assert corners(a, "syntactic") and corners(a, "syntactic") == corners(b, "syntactic")


def test_role_grid_nothing_held(tests_table):
    counts = role_collections(role_grid(role_table(tests_table.assign(reject=False))))
    assert counts == {"local": 0, "delimiter": 0, "syntactic": 0, "_tested, not held": 18}


ROLES10 = list(style.ROLE_ORDER)


@pytest.mark.parametrize("n_layers,n_heads,width", [(6, 12, 3.5), (6, 12, 7.0), (12, 12, 3.5), (12, 12, 7.0),
                                                    (24, 16, 7.0)])
def test_role_grid_legible_at_model_sizes(n_layers, n_heads, width, tmp_path):
    rng = np.random.default_rng(n_layers)
    rows = [dict(model="m", dataset="d", layer=layer, head=head, **{r: bool(rng.random() < 0.3) for r in ROLES10})
            for layer in range(n_layers) for head in range(n_heads)]
    roles = pd.DataFrame(rows)
    with style.using(style.Preset(width=width, formats=("png", "svg"))):
        fig = role_grid(roles)
        paths = style.save(fig, tmp_path, "grid")
    counts = role_collections(fig)
    assert sum(v for k, v in counts.items() if not k.startswith("_")) == int(roles[ROLES10].to_numpy().sum())
    assert sum(counts.values()) == n_layers * n_heads * 10
    assert [p.suffix for p in paths] == [".png", ".svg"]
    assert (tmp_path / "grid.png").stat().st_size > 10_000
    fig_w, fig_h = fig.get_size_inches()
    assert fig_w <= width + 1e-9 and fig_h <= 1.2 * max(0.75 * width, 4.0) + 1.5
    # every role slot is square and at least 0.04 in (1 mm) a side in print
    shape, _, _ = grid_layout(n_layers, n_heads, 10, width)
    ax = fig.axes[0]
    corner = ax.transData.transform([(0, 0), (1, 1)])
    cell_w, cell_h = np.abs(corner[1] - corner[0]) / fig.dpi
    slot_w, slot_h = cell_w * (1 - 2 * CELL_PAD) / shape[1], cell_h * (1 - 2 * CELL_PAD) / shape[0]
    assert min(slot_w, slot_h) >= 0.04
    assert slot_w == pytest.approx(slot_h, rel=0.05) or slot_h > slot_w


# ------------------------------------------------------------------------------------------ mean-score maps

def test_mean_score_maps(tests_table):
    fig = mean_score_maps(tests_table, tau=3.0, scale="family")
    maps = [ax for ax in fig.axes if ax.get_visible() and ax.get_title() in HELD]
    assert [ax.get_title() for ax in maps] == ORDER
    assert fig.texts[-1].get_text() == "black outline: assigned; white: tau = 3; one colour scale per role family"
    for ax in maps:
        role = ax.get_title()
        (image,) = ax.get_images()
        grid = image.get_array()
        assert grid.shape == (3, 2)
        assert grid[1, 0] == (5.0 if (1, 0) in HELD[role] else 2.0)
        # centred at tau: tau is white (0.5 of the map), one step above or below tau the same distance from it
        assert image.norm(3.0) == 0.5
        assert image.norm(3.0 + 1) - 0.5 == pytest.approx(0.5 - image.norm(3.0 - 1))
        (outlines,) = [c for c in ax.collections if c.get_label() == "assigned"]
        corners = [path.vertices.min(axis=0) for path in outlines.get_paths()]  # (head - 0.5, layer - 0.5)
        assert {(round(y + 0.5), round(x + 0.5)) for x, y in corners} == HELD[role]
        assert all(np.allclose(np.ptp(p.vertices, axis=0), 1) for p in outlines.get_paths())  # one cell each


def test_mean_score_maps_one_scale_per_family_with_the_datas_range():
    from headstats.analyses.pande_roles.figures import plain

    rows = [dict(model="m", dataset="d", role=role, layer=layer, head=head, mean=base + layer + head / 10,
                 reject=False)
            for role, base in (("local", 0.5), ("delimiter", 1.0), ("delimiter_cls", 7.0), ("delimiter_sep", 2.0))
            for layer in range(3) for head in range(2)]
    tests = pd.DataFrame(rows)
    for scale, expected in (("family", {"local": (0.5, 3.0), "delimiter": (1.0, 9.1)}),
                            ("shared", {"local": (0.5, 9.1), "delimiter": (0.5, 9.1)}),
                            ("role", {"local": (0.5, 3.0), "delimiter": (1.0, 3.1)})):
        fig = mean_score_maps(tests, tau=3.0, scale=scale)
        maps = {ax.get_title(): ax for ax in fig.axes if ax.get_images()}
        norms = {role: ax.get_images()[0].norm for role, ax in maps.items()}
        for role, (low, high) in expected.items():  # the bar spans the data (tau included), nothing synthetic
            assert (norms[role].vmin, norms[role].vmax) == pytest.approx((low, high))
        if scale == "family":
            assert norms["delimiter"] is norms["delimiter_cls"] is norms["delimiter_sep"]
            assert norms["local"] is not norms["delimiter"]
    # ticks: the ends and tau, as plain decimals with the digits the span needs
    assert [plain(v, 8.6) for v in (0.5, 3.0, 9.1)] == ["0.50", "3.00", "9.10"]
    assert plain(7.93e-07, 3.0) == "0.00" and plain(10.2, 10.2) == "10.2" and plain(0.000108, 0.01) == "0.0001"
    assert plain(-1e-9, 3.0) == "0.00"


# ---------------------------------------------------------------------------------- heads per role per layer

def test_heads_per_layer_small_multiples(tests_table):
    per_layer = heads_per_role_per_layer(role_table(tests_table))
    fig = heads_per_layer_plot(per_layer, title="t")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ORDER
    # heads held per layer 0, 1, 2
    expected = {"local": [2, 0, 1], "syntactic": [1, 1, 0], "delimiter": [1, 1, 0]}
    for ax in panels:
        heights = [p.get_height() for p in ax.patches]
        assert heights == expected[ax.get_title()]
        assert [t.get_text() for t in ax.texts] == [str(v) if v else "" for v in expected[ax.get_title()]]
    assert len({ax.get_ylim() for ax in panels}) == 1  # one scale for every role
    assert fig.get_suptitle() == "t"


# ------------------------------------------------------------------------------------------------- UpSet

def test_upset_plot_intersections_sorted_zero_ones_dropped(tests_table):
    coloc = colocation(role_table(tests_table))
    fig = upset_plot(coloc, roles=["local", "syntactic", "delimiter", "block"])
    ax_bar, ax_dots, ax_sets = fig.axes
    # (0,0): all three; (0,1), (2,1): local; (1,0): delimiter; (1,1): syntactic; (2,0): none
    heights = [p.get_height() for p in ax_bar.patches]
    assert heights == [2, 1, 1, 1, 1]
    filled = next(c for c in ax_dots.collections if c.get_label() == "in")
    # local (2 heads) first; then ties by the number of roles, then name: delimiter, none, syntactic, all three
    assert len(filled.get_offsets()) == 1 + 1 + 0 + 1 + 3
    assert [t.get_text() for t in ax_dots.get_yticklabels()] == ["local", "block", "delimiter", "syntactic"]
    assert [t.get_text() for t in ax_dots.get_xticklabels()] == ["no role"]
    assert [p.get_width() for p in ax_sets.patches] == [3, 0, 2, 2]  # heads holding each role
    grey = next(c for c in ax_dots.collections if c.get_label() == "_not in")
    assert len(grey.get_offsets()) == 5 * 4


def test_upset_plot_caps_intersections_and_says_so(tests_table):
    coloc = colocation(role_table(tests_table))
    fig = upset_plot(coloc, max_intersections=2, show_none=False, title="co")
    assert [p.get_height() for p in fig.axes[0].patches] == [2, 1]
    assert fig.get_suptitle() == "co (2 smaller combinations not shown)"


# -------------------------------------------------------------------------------------- fixed layouts

def text_boxes(fig: Figure):
    """(owner axes, window box) of every visible text of the figure, drawn at the PNG's resolution."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig.set_dpi(style.PNG_DPI)
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    boxes = [(None, t.get_window_extent(renderer)) for t in (fig._suptitle, *fig.legends) if t is not None]
    for ax in fig.axes:
        texts = [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        texts += [t for tick in ax.xaxis.get_major_ticks() + ax.yaxis.get_major_ticks()
                  for t in (tick.label1, tick.label2) if t.get_visible() and tick.get_visible()]
        xmin, xmax = ax.get_xlim() if ax.get_xlim()[0] < ax.get_xlim()[1] else ax.get_xlim()[::-1]
        texts = [t for t in texts if t.get_visible() and t.get_text()]
        boxes += [(ax, t.get_window_extent(renderer)) for t in texts]
    return boxes


@pytest.mark.parametrize("draw", ["maps", "bars", "upset", "grid"])
@pytest.mark.parametrize("n_layers,n_heads,n_roles", [(3, 2, 3), (6, 12, 9), (24, 16, 10)])
def test_small_multiples_keep_their_text_inside_and_off_other_panels(draw, n_layers, n_heads, n_roles):
    rng = np.random.default_rng(n_layers)
    roles = ROLES10[:n_roles]
    tests = pd.DataFrame([dict(model="m", dataset="d", role=r, layer=layer, head=head, n=10,
                               mean=float(rng.gamma(2.0, 2.0 if r.startswith("delimiter") else 0.01)),
                               reject=bool(rng.random() < 0.2))
                          for r in roles for layer in range(n_layers) for head in range(n_heads)])
    if draw == "maps":
        fig = mean_score_maps(tests, tau=2.0, title="mean score per head: bert-base-uncased on a long data set name")
    elif draw == "bars":
        fig = heads_per_layer_plot(heads_per_role_per_layer(role_table(tests)), title="heads per role per layer")
    elif draw == "upset":
        fig = upset_plot(colocation(role_table(tests)), roles=roles, title="co-location: m on d")
    else:
        fig = role_grid(role_table(tests), title="roles held per head: m on d")
    assert style.is_laid_out(fig) and fig.get_layout_engine() is None
    boxes = text_boxes(fig)
    width, height = fig.bbox.width, fig.bbox.height
    for _, box in boxes:  # inside the canvas (1 px of rounding)
        assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= width + 1 and box.y1 <= height + 1, box
    axes = fig.axes
    partner = {}  # a map and its colour bar touch by design
    if draw == "maps":
        for a, b in zip(axes[0::2], axes[1::2]):
            partner[a], partner[b] = b, a
    checked = 0
    for owner, box in boxes:  # no text over another panel or colour bar
        for ax in axes:
            if ax is owner or partner.get(owner) is ax:
                continue
            assert not box.shrunk(0.98, 0.98).overlaps(ax.get_window_extent()), \
                (owner.get_title() if owner else "suptitle", ax.get_title(), box)
            checked += 1
    assert checked >= 1
    if draw in ("upset", "grid"):
        return
    panels = axes[0::2] if draw == "maps" else axes
    assert len(panels) == n_roles
    # at the default 7 in: maps of 1.6 in (4 a row); bars of 1.25 in, or 0.1 in a layer + 0.5 (5, at most, a row)
    ncols = min(n_roles, 4) if draw == "maps" else min(n_roles, 2 if n_layers == 24 else 5)
    # a grid: the panels of a column share their left edge
    assert len({round(ax.get_position().x0, 9) for ax in panels}) == ncols
    assert len({round(ax.get_position().width, 9) for ax in panels}) == 1
