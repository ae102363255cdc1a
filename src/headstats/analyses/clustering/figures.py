"""The clustering analysis' figures (Clark et al. 2019, Figure 6): the heads in two dimensions (MDS of the JS
divergences) and the JS divergence matrix. Drawing only."""

from __future__ import annotations

import matplotlib
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from headstats.plots import style  # noqa: E402


#: Colours of the dominant behaviours (:func:`headstats.analyses.surface.collect.dominant_behaviour`).
BEHAVIOUR_COLOURS = {
    "prev": style.OKABE_ITO["vermillion"], "next": style.OKABE_ITO["blue"], "self": style.OKABE_ITO["bluish_green"],
    "cls": style.OKABE_ITO["reddish_purple"], "sep": style.OKABE_ITO["orange"], "punct": style.OKABE_ITO["sky_blue"],
    "broad": style.OKABE_ITO["black"], "mixed": "#BBBBBB",
}


@style.styled
def mds_plot(mds: pd.DataFrame, *, colour_by: str = "layer", ax: Axes | None = None, title: str = "") -> Figure:
    """The heads in the 2-D MDS of their JS divergence (Clark et al. Figure 6), labelled ``layer-head``.

    ``colour_by="layer"`` (a sequential colour per layer) or ``"behaviour"`` (the dominant behaviour). Labels
    are placed without overlap (:func:`headstats.plots.style.place_labels`); when some heads cannot be
    labelled so, the x axis says how many were (every head is in ``mds.csv``).
    """
    width = min(5.2, style.figure_width())
    fig, ax = style.axes_for(ax, (width, 0.85 * width))
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
