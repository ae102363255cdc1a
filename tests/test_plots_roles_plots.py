"""Role figures from a hand-made tests table: one stripe per role held, bars per combination, outlined heads."""

from __future__ import annotations

import matplotlib.colors as mcolors
import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from headstats.assign import colocation, heads_per_role_per_layer, role_table
from headstats.plots.roles_plots import (
    colocation_plot,
    heads_per_layer_plot,
    mean_score_maps,
    role_colours,
    role_grid,
)

# 3 layers x 2 heads; roles held by hand
HELD = {
    "local": {(0, 0), (0, 1), (2, 1)},
    "syntactic": {(0, 0), (1, 1)},
    "delimiter": {(1, 0), (0, 0)},
}


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


def grid_stripes(fig: Figure) -> list[Rectangle]:
    (ax,) = fig.axes
    return [p for p in ax.patches if isinstance(p, Rectangle)]


def test_role_grid_one_stripe_per_role_held(tests_table):
    roles = role_table(tests_table)
    fig = role_grid(roles, title="grid")
    assert isinstance(fig, Figure)
    stripes = grid_stripes(fig)
    assert len(stripes) == sum(len(h) for h in HELD.values()) == 7
    colours = role_colours(list(HELD))
    width = 1 / 3
    expected = set()
    for k, (role, heads) in enumerate(HELD.items()):
        for layer, head in heads:
            expected.add((round(head + k * width, 6), layer, mcolors.to_hex(colours[role])))
    got = {(round(p.get_x(), 6), round(p.get_y()), mcolors.to_hex(p.get_facecolor())) for p in stripes}
    assert got == expected
    assert all(p.get_width() == pytest.approx(width) and p.get_height() == 1 for p in stripes)
    (ax,) = fig.axes
    assert ax.get_title() == "grid"
    assert ax.get_xlim() == (0, 2) and ax.get_ylim() == (3, 0)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(HELD)


def test_role_grid_nothing_held(tests_table):
    fig = role_grid(role_table(tests_table.assign(reject=False)))
    assert grid_stripes(fig) == []


def test_heads_per_layer_plot(tests_table):
    per_layer = heads_per_role_per_layer(role_table(tests_table))
    fig = heads_per_layer_plot(per_layer)
    (ax,) = fig.axes
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    # heads held per layer 0, 1, 2
    assert lines == {"local": [2, 0, 1], "syntactic": [1, 1, 0], "delimiter": [1, 1, 0]}


def test_colocation_plot(tests_table):
    coloc = colocation(role_table(tests_table))
    fig = colocation_plot(coloc)
    (ax,) = fig.axes
    bars = {t.get_text(): p.get_width() for t, p in zip(ax.get_yticklabels(), ax.patches)}
    # (0,0): all three; (0,1), (2,1): local; (1,0): delimiter; (1,1): syntactic; (2,0): none
    assert bars == {"local+syntactic+delimiter": 1, "local": 2, "delimiter": 1, "syntactic": 1, "none": 1}
    assert len(colocation_plot(coloc, top=2).axes[0].patches) == 2


def test_mean_score_maps(tests_table):
    fig = mean_score_maps(tests_table, tau=3.0)
    maps = [ax for ax in fig.axes if ax.get_visible() and ax.get_title() in HELD]
    assert [ax.get_title() for ax in maps] == list(HELD)
    assert fig._suptitle.get_text().endswith("(red: assigned, tau = 3)")
    for ax, (role, heads) in zip(maps, HELD.items()):
        (image,) = ax.get_images()
        grid = image.get_array()
        assert grid.shape == (3, 2)
        assert grid[1, 0] == (5.0 if (1, 0) in heads else 2.0)
        outlined = {(round(p.get_y() + 0.5), round(p.get_x() + 0.5)) for p in ax.patches}
        assert outlined == heads
