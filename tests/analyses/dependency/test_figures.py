"""Figures of the dependency analysis: drawn headless from tables, one mark per relation and per layer."""

from __future__ import annotations

import pandas as pd

from headstats.analyses.dependency.figures import best_per_layer_plot, dependency_table_plot


def test_table_plot_marks_rejections():
    table = pd.DataFrame({"relation": ["det", "amod"], "accuracy": [0.9, 0.5], "accuracy_ci_low": [0.85, 0.4],
                          "accuracy_ci_high": [0.95, 0.6], "offset_accuracy": [0.5, 0.55],
                          "offset_accuracy_ci_low": [0.45, 0.45], "offset_accuracy_ci_high": [0.55, 0.65],
                          "reject": [True, False]})
    fig = dependency_table_plot(table)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["det *", "amod"]
    assert len(ax.lines) >= 2


def test_best_per_layer_takes_the_maximum_of_each_layer():
    heads = pd.DataFrame({"relation": "det", "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1],
                          "accuracy": [0.1, 0.3, 0.8, 0.2]})
    fig = best_per_layer_plot(heads, ["det"])
    line = fig.axes[0].lines[0]
    assert list(line.get_ydata()) == [0.3, 0.8]
