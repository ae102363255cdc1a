"""The gradient figure: one line per target, each point the mean over a layer's heads."""

from __future__ import annotations

import pandas as pd

from headstats.analyses.gradients.figures import gradient_layers_plot


def test_one_line_per_target_with_layer_means():
    table = pd.DataFrame({"target": ["sep"] * 4 + ["other"] * 4, "layer": [0, 0, 1, 1] * 2,
                          "mean_abs_grad": [1.0, 3.0, 0.5, 0.5, 2.0, 2.0, 4.0, 6.0]})
    ax = gradient_layers_plot(table).axes[0]
    assert [list(line.get_ydata()) for line in ax.lines] == [[2.0, 0.5], [2.0, 5.0]]
