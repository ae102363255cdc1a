"""Surface and clustering figures draw headless from the tables and show what the tables hold."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from headstats.analyses.surface import SURFACE_COLUMNS
from headstats.plots.surface_plots import entropy_by_layer, js_heatmap, mds_plot, surface_by_layer


def surface(layers=3, heads=4, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for layer in range(layers):
        for head in range(heads):
            row = {"model": "m", "dataset": "d", "layer": layer, "head": head}
            row.update({c: float(rng.uniform(0, 1)) for c in SURFACE_COLUMNS[4:]})
            row["entropy_uniform"] = 4.5
            rows.append(row)
    return pd.DataFrame(rows)[list(SURFACE_COLUMNS)]


def test_surface_by_layer_one_point_per_head_filled_when_passing():
    s = surface()
    tests = s[["model", "dataset", "layer", "head"]].assign(measure="prev", reject=s["head"] == 0)
    fig = surface_by_layer(s, ["prev", "self", "next"], tests=tests, title="t")
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    ax = fig.axes[0]
    hollow, filled = ax.collections[:2]
    assert len(filled.get_offsets()) == 3 and len(hollow.get_offsets()) == 9  # head 0 of each layer passes
    np.testing.assert_allclose(sorted(np.asarray(filled.get_offsets())[:, 1]),
                               sorted(s.loc[s["head"] == 0, "prev"]))
    line = ax.lines[0]
    np.testing.assert_allclose(line.get_ydata(), s.groupby("layer")["prev"].mean())


def test_entropy_by_layer_has_the_uniform_reference():
    fig = entropy_by_layer(surface())
    refs = [line for line in fig.axes[0].lines if len(set(line.get_ydata())) == 1]
    assert refs and refs[-1].get_ydata()[0] == 4.5


def test_mds_and_js_heatmap():
    s = surface()
    mds = s[["model", "dataset", "layer", "head"]].assign(x=np.arange(12.0), y=np.arange(12.0) ** 0.5, stress=0.1,
                                                           behaviour=["prev", "broad", "mixed"] * 4)
    for by in ("layer", "behaviour"):
        fig = mds_plot(mds, colour_by=by)
        assert len(fig.axes[0].collections[0].get_offsets()) == 12
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert labels == (["layer 0", "layer 1", "layer 2"] if by == "layer" else ["prev", "broad", "mixed"])
    k = np.arange(12)
    a, b = np.meshgrid(k, k, indexing="ij")
    js = pd.DataFrame({"layer_a": (a // 4).ravel(), "head_a": (a % 4).ravel(), "layer_b": (b // 4).ravel(),
                       "head_b": (b % 4).ravel(), "js_mean": np.abs(a - b).ravel() / 10.0})
    fig = js_heatmap(js)
    grid = fig.axes[0].images[0].get_array()
    assert grid.shape == (12, 12) and grid[0, 11] == 1.1


def test_mds_labels_do_not_overlap_and_the_axis_says_how_many_are_shown():
    # 3 layers x 4 heads: the heads of layer 1 planted in a row a marker apart, the others spread out
    s = surface()
    crowd = (s["layer"] == 1).to_numpy()
    x = np.where(crowd, 5.0 + 0.3 * s["head"], np.arange(12.0) * 2)
    y = np.where(crowd, 5.0, (np.arange(12) % 3) * 4.0)
    mds = s[["model", "dataset", "layer", "head"]].assign(x=x, y=y, stress=0.1, behaviour="mixed")
    fig = mds_plot(mds)
    ax = fig.axes[0]
    shown = [t.get_text() for t in ax.texts]
    spread = [f"{r.layer}-{r.head}" for r in mds.itertuples() if r.layer != 1]
    assert set(spread) <= set(shown) and len(shown) < 12  # the planted row cannot hold 4 labels
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert ax.get_xlabel() == f"MDS 1\n({len(shown)} of 12 heads labelled; others overlap)"
    assert {t.get_fontsize() for t in ax.texts} == {7.0}
