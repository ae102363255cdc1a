"""Tests of headstats.plots.stats_plots: each figure draws from the stats tables, headless."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from headstats.plots.stats_plots import (  # noqa: E402
    plot_tau_sensitivity,
)
from headstats.stats.onesample import test_roles  # noqa: E402
from headstats.stats.sensitivity import tau_sensitivity  # noqa: E402
from simulations.planted import planted_scores  # noqa: E402


@pytest.fixture(scope="module")
def scores():
    return planted_scores(seed=5, n_sentences=15, effect=0.9, frac_alternative=0.5)


@pytest.fixture(scope="module")
def tests_table(scores):
    return test_roles(scores)


def test_tau_sensitivity_one_line_per_role(scores, tmp_path):
    table = tau_sensitivity(scores, taus=[2.0, 2.5, 3.0, 3.5])
    fig = plot_tau_sensitivity(table, tau_used=3.0)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert sorted(line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")) == [
        "delimiter", "local"]
    fig.savefig(tmp_path / "tau.png")
    assert (tmp_path / "tau.png").stat().st_size > 0


def test_tau_sensitivity_on_given_axes_and_needs_model_when_several(scores):
    import pandas as pd

    table = tau_sensitivity(scores, taus=[2.0, 3.0])
    fig = Figure()
    ax = fig.add_subplot()
    assert plot_tau_sensitivity(table, ax=ax, share=True) is fig
    two = pd.concat([table, table.assign(dataset="other")])
    with pytest.raises(ValueError, match="dataset"):
        plot_tau_sensitivity(two)
    plot_tau_sensitivity(two, dataset="other")


def test_missing_columns_raise(tests_table):
    with pytest.raises(ValueError, match="n_heads_assigned"):
        plot_tau_sensitivity(tests_table)


def test_the_power_figure_names_each_data_sets_band():
    import numpy as np
    import pandas as pd

    from headstats.plots.stats_plots import plot_mde

    # two data sets of different N: their smallest detectable effects form two bands per role
    rows = [dict(model="m", dataset=d, role=r, layer=0, head=h, mde=mde + h / 100, reject=h == 0)
            for d, mde in (("short", 0.8), ("long", 0.3)) for r in ("local", "block") for h in range(4)]
    fig = plot_mde(pd.DataFrame(rows), effect_of_interest=0.5)
    ax = fig.axes[0]
    legend = ax.get_legend() or fig.legends[0]  # beside the axes, or under a narrow figure
    assert [t.get_text() for t in legend.get_texts()] == ["short", "long"]
    assert legend.get_title().get_text() == "data set (left to right)"
    points = [(c.get_offsets(), c.get_paths()[0].vertices.shape) for c in ax.collections if len(c.get_offsets())]
    # the short data set's points (mde about 0.8) sit left of the long one's (0.3) in each role's column
    short = np.concatenate([o for o, _ in points if o[:, 1].mean() > 0.5])
    long = np.concatenate([o for o, _ in points if o[:, 1].mean() < 0.5])
    for column in (0, 1):
        assert short[np.round(short[:, 0]) == column][:, 0].max() < long[np.round(long[:, 0]) == column][:, 0].min()
    assert len({shape for _, shape in points}) == 2  # one marker shape per data set
    one = plot_mde(pd.DataFrame([r for r in rows if r["dataset"] == "long"]))
    assert one.axes[0].get_legend() is None and not one.legends  # one data set: nothing to tell apart
