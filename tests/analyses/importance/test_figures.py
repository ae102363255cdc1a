"""Figures of the importance analysis draw headless from the tables, one line per model and unit."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.analyses.importance.figures import importance_grid_plot, pruning_plot


def test_pruning_plot_draws_a_line_per_model_and_unit():
    shares = [0.0, 0.5]
    rows = [{"model": m, "unit": u, "share": s, "accuracy": 0.9 - s / 2, "accuracy_ci_low": 0.8 - s / 2,
             "accuracy_ci_high": 0.95 - s / 2} for m, u in (("a", "inputs"), ("g", "seeds")) for s in shares]
    fig = pruning_plot(pd.DataFrame(rows), tolerance=0.01)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")] == \
        ["a (over inputs)", "g (over seeds)"]
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [0.9, 0.65])


def test_importance_grid_plot_shows_the_layer_by_head_grid():
    layer, head = np.divmod(np.arange(6), 3)
    heads = pd.DataFrame({"layer": layer, "head": head, "importance": np.arange(6.0),
                          "importance_measure": "delta_loss"})
    fig = importance_grid_plot(heads)
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), np.arange(6.0).reshape(2, 3))
