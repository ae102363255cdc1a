"""Pictures of one head's attention on one input: a heat map, a BertViz-style line view, and an offline
interactive view for the HTML report.

Inputs are plain arrays: ``weights`` (n, n) with ``weights[i, j]`` the weight of key j in query i's row, and
the n piece strings. The interactive view is a self-contained fragment of HTML, SVG and inline JavaScript (no
library, no network): choose a head and input, hover a token on the left to see where it attends, on the
right to see what attends to it. BertViz (Vig 2019) draws the same views but fetches d3 from the network.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from collections.abc import Sequence  # noqa: E402

import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from headstats.plots import style  # noqa: E402

#: Lines lighter than this are not drawn in the line view (they would be invisible anyway).
MIN_LINE_WEIGHT = 0.01
LINE_COLOUR = "#0072B2"


def _check(weights: np.ndarray, tokens: Sequence[str]) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or w.shape[0] != len(tokens):
        raise ValueError(f"weights must be (n, n) with n = {len(tokens)} tokens, got {w.shape}")
    return w


#: Line height of a tick label or token, in multiples of its font size (7 pt labels one every 8.4 pt).
LINE_SPACING = 1.2
#: The tallest line view, in inches (a printed page's text height): longer inputs label every k-th piece.
MAX_LINE_VIEW_HEIGHT = 9.0


def label_step(n: int, room: float, fontsize: float = style.MIN_FONT) -> int:
    """Label every k-th of ``n`` evenly spaced pieces so that labels of ``fontsize`` points, one line each,
    fit in ``room`` inches without overlapping: the smallest k with ``ceil(n / k) * fontsize * LINE_SPACING
    <= room * 72`` (1 when every label fits)."""
    per_label = fontsize * LINE_SPACING / 72
    fits = max(1, int(room // per_label))
    return max(1, -(-n // fits))


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _every(k: int) -> str:
    """``""`` for 1, else ``", every 3rd piece labelled"``."""
    return "" if k == 1 else f", every {_ordinal(k)} piece labelled"


@style.styled
def attention_heatmap(weights: np.ndarray, tokens: Sequence[str], *, title: str = "", ax: Axes | None = None
                      ) -> Figure:
    """Heat map of one head's map: queries down, keys across, the pieces as tick labels.

    The figure is the preset's printed width (:func:`headstats.plots.style.figure_width`) and every label is
    :data:`headstats.plots.style.MIN_FONT` points: when the pieces of a long input do not all fit at that
    size, every k-th piece is labelled (:func:`label_step`) and the axis labels say so.
    """
    w = _check(weights, tokens)
    n = len(tokens)
    shown = [style.drawable(t) for t in tokens]
    font = style.MIN_FONT
    width = style.figure_width()
    # margins (inches): the widest label beside the map and under it, the axis labels, the colour bar
    label_w = style.widest(shown, font) + style.tick_space()
    around = label_w + style.label_space(8) + 0.85  # the colour bar, its ticks and label: about 0.85 in
    side = max(1.0, min(width - around, 6.5, max(2.2, 0.12 * n + 0.5)))  # short inputs: a small map
    width = side + around
    k = label_step(n, side)
    height = side + label_w + style.label_space(8) + (style.title_space(8) if title else 0) + 0.1
    fig, ax = style.axes_for(ax, (width, height))
    image = ax.imshow(w, cmap=style.SEQUENTIAL_CMAP, vmin=0.0, vmax=max(float(w.max()), 1e-9),
                      interpolation="none")  # PDF and SVG hold the n x n weights themselves, not a 300 dpi copy
    ticks = np.arange(0, n, k)
    ax.set_xticks(ticks, [shown[i] for i in ticks], rotation=90, fontsize=font)
    ax.set_yticks(ticks, [shown[i] for i in ticks], fontsize=font)
    ax.set_xlabel(f"key (attended to{_every(k)})")
    ax.set_ylabel(f"query (attending{_every(k)})")
    ax.spines[:].set_visible(False)
    fig.colorbar(image, ax=ax, fraction=0.04, label="attention weight")
    if title:
        ax.set_title(style.fitted_title(style.drawable(title), matplotlib.rcParams["axes.titlesize"], width - 0.2))
    fig.tight_layout(pad=0.3)
    return fig


@style.styled
def line_view(weights: np.ndarray, tokens: Sequence[str], *, title: str = "", segment: Sequence[int] | None = None,
              ax: Axes | None = None) -> Figure:
    """BertViz-style lines from each query (left) to each key (right), opacity = weight.

    Lines under :data:`MIN_LINE_WEIGHT` are left out. ``segment`` (0/1 per piece) greys sentence B's labels,
    so that attention between the sentences of a pair is easy to see. Labels are
    :data:`headstats.plots.style.MIN_FONT` points; an input too long for :data:`MAX_LINE_VIEW_HEIGHT` labels
    every k-th piece (every line is drawn).
    """
    w = _check(weights, tokens)
    n = len(tokens)
    font = style.MIN_FONT
    rows = min(n * font * LINE_SPACING / 72, MAX_LINE_VIEW_HEIGHT - 0.6)
    k = label_step(n, rows, font)
    fig, ax = style.axes_for(ax, (min(3.6, style.figure_width()), max(2.0, rows + 0.6)))
    seg = np.zeros(n, int) if segment is None else np.asarray(segment, int)
    queries, keys = np.nonzero(w >= MIN_LINE_WEIGHT)
    colours = np.tile(matplotlib.colors.to_rgba(LINE_COLOUR), (len(queries), 1))
    colours[:, 3] = np.minimum(w[queries, keys], 1.0)  # one artist for all lines: drawn once, not n^2 times
    segments = np.stack([np.column_stack([np.zeros(len(queries)), -queries]),
                         np.column_stack([np.ones(len(keys)), -keys])], axis=1)
    ax.add_collection(LineCollection(segments, colors=colours, linewidths=1.2, capstyle="butt"))
    for i in range(0, n, k):
        colour = style.EDGE if seg[i] == 0 else style.OKABE_ITO["vermillion"]
        token = style.drawable(tokens[i])
        ax.text(-0.04, -i, token, ha="right", va="center", fontsize=font, color=colour)
        ax.text(1.04, -i, token, ha="left", va="center", fontsize=font, color=colour)
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(-n + 0.5, 0.5)
    ax.axis("off")
    if title or k > 1:
        text = style.drawable(title) + (f" ({_every(k)[2:]})" if k > 1 else "")
        ax.set_title(style.fitted_title(text.strip(), matplotlib.rcParams["axes.titlesize"],
                                        fig.get_size_inches()[0] - 0.2))
    fig.tight_layout(pad=0.3)
    return fig
