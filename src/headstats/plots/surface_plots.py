"""Figures of the surface patterns and of the clustering of heads (Clark et al. 2019, Figures 1-4 and 6).

Tables of :mod:`headstats.analyses.surface` (``surface.csv``, ``surface_tests.csv``) and
:mod:`headstats.analyses.clustering` (``mds.csv``, ``js_distance.csv``) in, ``Figure`` out: one point per head
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
from matplotlib.lines import Line2D  # noqa: E402

from headstats.plots import style  # noqa: E402

#: Titles of the surface measures in figures.
TITLES = {
    "prev": "previous token", "self": "current token", "next": "next token", "cls": "[CLS]", "sep": "[SEP]",
    "punct": '". " and ", "', "sep_to_sep": "[SEP] -> [SEP]", "other_to_sep": "other -> [SEP]",
    "entropy": "row entropy (nats)", "entropy_cls": "[CLS] row entropy (nats)",
}
#: Colours of the dominant behaviours (:func:`headstats.analyses.surface.dominant_behaviour`).
BEHAVIOUR_COLOURS = {
    "prev": style.OKABE_ITO["vermillion"], "next": style.OKABE_ITO["blue"], "self": style.OKABE_ITO["bluish_green"],
    "cls": style.OKABE_ITO["reddish_purple"], "sep": style.OKABE_ITO["orange"], "punct": style.OKABE_ITO["sky_blue"],
    "broad": style.OKABE_ITO["black"], "mixed": "#BBBBBB",
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


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize)
    return fig, fig.add_subplot()


@style.styled
def mds_plot(mds: pd.DataFrame, *, colour_by: str = "layer", ax: Axes | None = None, title: str = "") -> Figure:
    """The heads in the 2-D MDS of their JS divergence (Clark et al. Figure 6), labelled ``layer-head``.

    ``colour_by="layer"`` (a sequential colour per layer) or ``"behaviour"`` (the dominant behaviour). Labels
    are placed without overlap (:func:`headstats.plots.style.place_labels`); when some heads cannot be
    labelled so, the x axis says how many were (every head is in ``mds.csv``).
    """
    width = min(5.2, style.figure_width())
    fig, ax = _axes(ax, (width, 0.85 * width))
    if colour_by == "layer":
        layers = sorted(mds["layer"].unique())
        cmap = matplotlib.colormaps[style.SEQUENTIAL_CMAP]
        colours = {layer: cmap(i / max(len(layers) - 1, 1)) for i, layer in enumerate(layers)}
        c = [colours[v] for v in mds["layer"]]
        handles = [Line2D([], [], marker="o", ls="", color=colours[v], label=f"layer {v}") for v in layers]
    elif colour_by == "behaviour":
        kinds = list(dict.fromkeys(mds["behaviour"].astype(str)))
        colours = {k: BEHAVIOUR_COLOURS.get(k, style.EXTRA_COLOURS[i % len(style.EXTRA_COLOURS)])
                   for i, k in enumerate(kinds)}
        c = [colours[str(v)] for v in mds["behaviour"]]
        handles = [Line2D([], [], marker="o", ls="", color=colours[k], label=k) for k in kinds]
    else:
        raise ValueError(f"colour_by must be 'layer' or 'behaviour', not {colour_by!r}")
    ax.scatter(mds["x"], mds["y"], c=c, s=26, edgecolors=style.EDGE, linewidths=0.3)
    ax.set_xticks([])
    ax.set_yticks([])
    n = len(mds)
    # the longest the note can be, so that the layout leaves room for it
    ax.set_xlabel(f"MDS 1\n({n} of {n} heads labelled; others overlap)")
    ax.set_ylabel("MDS 2")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title(style.fitted_title(title or f"heads by JS divergence, coloured by {colour_by}",
                                    matplotlib.rcParams["axes.titlesize"], 0.6 * width))
    fig.tight_layout()
    placed = style.place_labels(ax, mds["x"].to_numpy(float), mds["y"].to_numpy(float),
                                [f"{r.layer}-{r.head}" for r in mds.itertuples()])
    ax.set_xlabel("MDS 1" if len(placed) == n else
                  f"MDS 1\n({len(placed)} of {n} heads labelled; others overlap)")
    return fig


@style.styled
def js_heatmap(js: pd.DataFrame, *, ax: Axes | None = None, title: str = "") -> Figure:
    """The (K, K) mean JS divergence per query between heads, in layer-major order, layers outlined."""
    heads = int(js["head_a"].max()) + 1
    layers = int(js["layer_a"].max()) + 1
    k = heads * layers
    grid = np.full((k, k), np.nan)
    grid[js["layer_a"] * heads + js["head_a"], js["layer_b"] * heads + js["head_b"]] = js["js_mean"]
    own = ax is None
    width = style.figure_width()
    if own:  # the preset's printed width; the map square, at most 5 in tall (the colour bar beside it)
        fig = Figure(figsize=(width, min(0.85 * width, 5.0)), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    image = ax.imshow(grid, cmap=style.SEQUENTIAL_CMAP, interpolation="none")  # PDF/SVG: the K x K values
    for edge in range(heads, k, heads):
        ax.axhline(edge - 0.5, color="white", lw=0.6)
        ax.axvline(edge - 0.5, color="white", lw=0.6)
    ticks = np.arange(heads / 2 - 0.5, k, heads)
    ax.set_xticks(ticks, [str(i) for i in range(layers)])
    ax.set_yticks(ticks, [str(i) for i in range(layers)])
    ax.set_xlabel("layer (heads in order)")
    ax.set_ylabel("layer (heads in order)")
    # the colour bar an inset of the map's axes: it stays beside the (square) map at any figure width
    fig.colorbar(image, cax=ax.inset_axes((1.04, 0.05, 0.04, 0.9)), label="JS divergence per query (nats)")
    ax.set_title(style.fitted_title(title or "JS divergence between heads", matplotlib.rcParams["axes.titlesize"],
                                    width - 0.9))
    return fig
