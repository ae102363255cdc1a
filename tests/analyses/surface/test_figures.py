"""Surface and clustering figures draw headless from the tables and show what the tables hold."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from headstats.analyses.surface.collect import SURFACE_COLUMNS
from headstats.analyses.surface.figures import entropy_by_layer, surface_by_layer


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


