"""Figures of the surface patterns and of the clustering of heads (Clark et al. 2019, Figures 1-4 and 6).

Tables of :mod:`headstats.analyses.surface.collect` (``surface.csv``, ``surface_tests.csv``) and
:mod:`headstats.analyses.clustering.collect` (``mds.csv``, ``js_distance.csv``) in, ``Figure`` out: one point per head
per layer, as the paper draws them, with the heads that pass a declared hypothesis filled and the others
hollow; the 2-D MDS of the heads coloured by layer or by dominant behaviour. Object-oriented matplotlib,
headless; nothing here computes a statistic (the layer means drawn are means of the table's values).
"""

from __future__ import annotations



import matplotlib

matplotlib.use("Agg")

from collections.abc import Mapping, Sequence  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from headstats.plots import style  # noqa: E402

#: Titles of the surface measures in figures.
TITLES = {
    "prev": "previous token", "self": "current token", "next": "next token", "cls": "[CLS]", "sep": "[SEP]",
    "punct": '". " and ", "', "sep_to_sep": "[SEP] -> [SEP]", "other_to_sep": "other -> [SEP]",
    "entropy": "row entropy (nats)", "entropy_cls": "[CLS] row entropy (nats)",
}


def _jitter(n: int, width: float = 0.28, seed: int = 0) -> np.ndarray:
    """Fixed horizontal offsets (the same for every figure), so that points of one layer do not overlap."""
    return np.random.default_rng(seed).uniform(-width, width, n)


def points_by_layer(ax: Axes, frame: pd.DataFrame, column: str, *, passed: np.ndarray | None = None,
                    colour: str = "#0072B2", reference: float | None = None, title: str | None = None) -> None:
    """One point per head at its layer (x) and value of ``column`` (y), with the layer means as a line.

    ``passed`` (a boolean per row) fills the heads that pass a test and leaves the others hollow.
    """
    x = frame["layer"].to_numpy(float) + _jitter(len(frame))
    y = frame[column].to_numpy(float)
    filled = np.ones(len(frame), bool) if passed is None else np.asarray(passed, bool)
    ax.scatter(x[~filled], y[~filled], s=14, facecolors="none", edgecolors=colour, linewidths=0.8)
    ax.scatter(x[filled], y[filled], s=14, color=colour, linewidths=0)
    means = frame.groupby("layer")[column].mean()
    ax.plot(means.index, means.to_numpy(), color=style.DARK_GREY, lw=1, zorder=0)
    if reference is not None:
        ax.axhline(reference, color=style.DARK_GREY, ls="--", lw=0.8)
    layers = sorted(frame["layer"].unique())
    ax.set_xticks(layers[::layer_step(len(layers), ax)])
    ax.set_xlabel("layer")
    ax.set_title(title or TITLES.get(column, column))


def _passed(surface: pd.DataFrame, tests: pd.DataFrame | None, measure: str) -> np.ndarray | None:
    """Per row of ``surface``: does the head pass a hypothesis about ``measure``? None when none was tested."""
    if tests is None or tests.empty:
        return None
    t = tests[tests["measure"] == measure]
    if t.empty:
        return None
    held = t[t["reject"].fillna(False).astype(bool)]
    keys = set(zip(held["model"], held["dataset"], held["layer"], held["head"]))
    return np.array([k in keys for k in zip(surface["model"], surface["dataset"], surface["layer"],
                                            surface["head"])])


#: Narrowest panel of a surface figure, in inches: 12 layers' tick labels and the points of 12 heads per layer.
PANEL_INCHES = 1.6


def layer_step(n_layers: int, ax: Axes) -> int:
    """Label every k-th layer, the smallest k for which the labels (two digits of 7 pt and a gap, 0.2 in each)
    fit the axes' width: BERT-base's 12 layers on a panel of a column-wide figure."""
    fig_w = ax.figure.get_size_inches()[0]
    panel_w = ax.get_position().width * fig_w
    per_label = style.text_size("00", style.MIN_FONT)[0] + 0.08
    return max(1, int(np.ceil(n_layers * per_label / max(panel_w, 0.1))))


def _panels(n: int, title: str, *, height: float = 2.1) -> tuple[Figure, list[Axes]]:
    """A figure of the preset's printed width with ``n`` panels sharing the y axis, as many per row as get
    :data:`PANEL_INCHES` each (one column of three at 3.5 in, one row of three at 7 in), rows balanced;
    constrained layout, so the saved figure is exactly the preset's width; the title fitted to that width."""
    width = style.figure_width()
    most = style.columns_for(PANEL_INCHES, n, width=width)
    rows = -(-n // most)
    ncols = -(-n // rows)
    fig = Figure(figsize=(width, height * rows + (0.3 if title else 0.0)), layout="constrained")
    grid = fig.subplots(rows, ncols, squeeze=False, sharey=True)
    axes = list(grid.ravel())
    for ax in axes[n:]:
        ax.remove()
    if title:
        fig.suptitle(style.fitted_title(title, matplotlib.rcParams["figure.titlesize"], width - 0.1))
    return fig, axes[:n]


@style.styled
def surface_by_layer(surface: pd.DataFrame, columns: Sequence[str], *, tests: pd.DataFrame | None = None,
                     references: Mapping[str, float] | None = None, title: str = "",
                     ylabel: str = "mean attention") -> Figure:
    """Panels of :func:`points_by_layer`, one per column, sharing the y axis (Clark et al. Figures 1, 2 and 4).

    Filled points: heads that pass a declared hypothesis on that measure (``tests``: ``surface_tests.csv``);
    hollow: the others (all filled when the measure was not tested). The figure is the preset's printed width
    (:func:`headstats.plots.style.figure_width`); panels that do not fit side by side are stacked.
    """
    references = dict(references or {})
    fig, axes = _panels(len(columns), title)
    for i, (ax, column) in enumerate(zip(axes, columns)):
        points_by_layer(ax, surface, column, passed=_passed(surface, tests, column),
                        colour=style.SERIES[i % len(style.SERIES)], reference=references.get(column))
        if ax.get_subplotspec().is_first_col():
            ax.set_ylabel(ylabel)
    return fig


@style.styled
def entropy_by_layer(surface: pd.DataFrame, *, tests: pd.DataFrame | None = None, title: str = "") -> Figure:
    """Mean row entropy and the [CLS] row's entropy per head by layer, against the uniform reference (dashed;
    Clark et al. Figure 4). Filled: heads that pass the ``entropy_ratio`` hypothesis (broad attention). The
    figure is the preset's printed width; at column width the two panels sit side by side."""
    uniform = float(surface["entropy_uniform"].mean())
    width = style.figure_width()
    fig = Figure(figsize=(width, 2.3 + (0.3 if title else 0.0)), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    passed = _passed(surface, tests, "entropy_ratio")
    points_by_layer(axes[0], surface, "entropy", passed=passed, reference=uniform, title="all rows")
    points_by_layer(axes[1], surface, "entropy_cls", colour=style.SERIES[1], reference=uniform, title="[CLS] row")
    axes[0].set_ylabel("entropy (nats)")
    if title:
        fig.suptitle(style.fitted_title(title, matplotlib.rcParams["figure.titlesize"], width - 0.1))
    return fig


