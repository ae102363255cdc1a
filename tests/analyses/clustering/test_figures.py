"""The clustering figures draw headless: the heads in two dimensions and the JS divergence matrix."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.analyses.clustering.figures import js_heatmap, mds_plot


def surface(layers=3, heads=4):
    """The keys of a surface table: one row per head."""
    return pd.DataFrame([{"model": "m", "dataset": "d", "layer": layer, "head": head}
                         for layer in range(layers) for head in range(heads)])


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
