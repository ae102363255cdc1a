"""Tests of headstats.plots.stats_plots: each figure draws from the stats tables, headless."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from headstats.plots.stats_plots import (  # noqa: E402
    plot_effect_grid,
    plot_n_for_power,
    plot_power,
    plot_pvalue_histogram,
    plot_tau_sensitivity,
)
from headstats.stats.onesample import test_roles  # noqa: E402
from headstats.stats.sensitivity import tau_sensitivity  # noqa: E402
from headstats.stats.simulation import planted_scores  # noqa: E402


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


def test_pvalue_histogram(tests_table, tmp_path):
    fig = plot_pvalue_histogram(tests_table)
    assert fig.axes[0].get_xlim() == (0.0, 1.0)
    plot_pvalue_histogram(tests_table, column="p_corr", by_role=False).savefig(tmp_path / "p.png")


def test_power_views(tests_table, tmp_path):
    plot_power(tests_table).savefig(tmp_path / "power.png")
    plot_power(tests_table, role="local")
    plot_n_for_power(tests_table).savefig(tmp_path / "n.png")
    fig = plot_effect_grid(tests_table, role="local")
    assert len(fig.axes) == 2  # the map and its colour bar
    fig.savefig(tmp_path / "grid.png")


def test_missing_columns_raise(tests_table):
    with pytest.raises(ValueError, match="n_heads_assigned"):
        plot_tau_sensitivity(tests_table)


def test_pvalue_histogram_stacks_one_shape_per_role_and_is_laid_out(tests_table):
    import numpy as np

    from headstats.plots import style

    fig = plot_pvalue_histogram(tests_table, bins=10)
    ax = fig.axes[0]
    shapes = ax.patches
    assert [s.get_label() for s in shapes] == style.order_roles(tests_table["role"])
    p = tests_table["p_unc"].to_numpy(float)
    top = shapes[-1].get_data().values  # the last role's top is the count of every role: p-values per bin
    assert top.tolist() == [int(v) for v in np.histogram(p, bins=np.linspace(0, 1, 11))[0]]
    first = tests_table[tests_table["role"] == shapes[0].get_label()]["p_unc"].to_numpy(float)
    assert shapes[0].get_data().values.tolist() == np.histogram(first, bins=np.linspace(0, 1, 11))[0].tolist()
    assert style.is_laid_out(fig) and fig.get_layout_engine() is None
