"""Figures of role assignment: the layer x head role grid, mean-score maps, heads per role per layer, and
co-location as an UpSet plot.

Every function takes the role tables (:mod:`headstats.tables.study_tables`, or the tests table) and returns a
``matplotlib.figure.Figure`` (object-oriented API, headless, no ``plt.show``). Nothing here computes a
statistic: the figures draw the numbers the tables hold. Colours, role order and fonts come from
:mod:`headstats.plots.style`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.colors import Normalize, TwoSlopeNorm  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.legend_handler import HandlerBase  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from headstats.tables.study_tables import role_columns  # noqa: E402
from headstats.plots import style  # noqa: E402
from headstats.plots.style import role_colours  # noqa: E402,F401  (re-exported: the figures' role colours)

#: Margin inside a cell and gap between slots, as fractions of the cell and of a slot.
CELL_PAD = 0.08
SLOT_GAP = 0.16


# ----------------------------------------------------------------------------------------------- role grid

def slot_rectangle(layer: float, head: float, index: int, shape: tuple[int, int]) -> Rectangle:
    """The rectangle of role slot ``index`` in the cell of (layer, head), in data units (cell = 1 x 1).

    Slots fill the cell row by row, inside a margin, with a gap between them, so that no mark ever crosses
    into a neighbouring cell.
    """
    rows, cols = shape
    r, c = divmod(index, cols)
    width, height = (1 - 2 * CELL_PAD) / cols, (1 - 2 * CELL_PAD) / rows
    x = head + CELL_PAD + c * width + SLOT_GAP * width / 2
    y = layer + CELL_PAD + r * height + SLOT_GAP * height / 2
    return Rectangle((x, y), width * (1 - SLOT_GAP), height * (1 - SLOT_GAP))


class _SlotKey:
    """Legend handle: a miniature cell with one role's slot filled."""

    def __init__(self, index: int, shape: tuple[int, int], colour: str):
        self.index, self.shape, self.colour = index, shape, colour


class _SlotKeyHandler(HandlerBase):
    def legend_artist(self, legend, orig_handle: _SlotKey, fontsize, handlebox):
        x0, y0 = -handlebox.xdescent, -handlebox.ydescent
        w, h = handlebox.width, handlebox.height
        rows, cols = orig_handle.shape
        transform = handlebox.get_transform()
        outline = Rectangle((x0, y0), w, h, fill=False, ec=style.GRID, lw=0.6, transform=transform)
        handlebox.add_artist(outline)
        sw, sh = w / cols, h / rows
        for k in range(rows * cols):
            r, c = divmod(k, cols)
            filled = k == orig_handle.index
            patch = Rectangle((x0 + c * sw + 0.12 * sw, y0 + h - (r + 1) * sh + 0.12 * sh), 0.76 * sw, 0.76 * sh,
                              fc=orig_handle.colour if filled else style.EMPTY,
                              ec=style.EDGE if filled else "none", lw=0.4, transform=transform)
            handlebox.add_artist(patch)
        return outline


def grid_layout(n_layers: int, n_heads: int, n_roles: int, width: float) -> tuple[tuple[int, int], float, float]:
    """Slot shape (rows, columns) and cell width and height in inches of a role grid drawn ``width`` inches
    wide: cells as wide as the width allows (at most 0.5 in), square slots as large as they can be while the
    grid stays at most ``max(0.75 width, 4)`` inches tall (fewer slots per row give larger slots)."""
    cell_w = min(0.5, max(0.1, (width - 0.55) / max(n_heads, 1)))
    most = max(0.75 * width, 4.0)
    inner = 1 - 2 * CELL_PAD
    for cols in range(1, max(n_roles, 1) + 1):
        rows = math.ceil(max(n_roles, 1) / cols)
        side = cell_w * inner / cols
        cell_h = max(rows * side / inner, 0.1)
        if n_layers * cell_h <= most or cols == max(n_roles, 1):
            return (rows, cols), cell_w, cell_h
    raise AssertionError("unreachable")


@style.styled
def role_grid(roles: pd.DataFrame, *, title: str = "", legend: bool = True) -> Figure:
    """Layer x head grid of one model on one data set; each role has its own slot in every cell.

    Every cell is one head; inside it, each role has a fixed slot (the same position in every cell and in
    every run, :func:`headstats.plots.style.role_slots`, shown in the legend) that is filled with the role's colour when the head holds the role, light grey when the
    role was tested but not assigned, and left blank when the role was not tested on this data set (``block``
    on single sentences). Position and colour both identify a role, so the grid reads in grey scale too.

    Parameters
    ----------
    roles : DataFrame
        Rows of the role table (``roles``) for one (model, dataset): ``layer``, ``head`` and a
        boolean (or NA) column per role.
    title : str
        Axes title.
    legend : bool
        Draw the key (one miniature cell per role) under the grid.

    Returns
    -------
    Figure
        One axes; its collections are labelled by role (held slots) and ``_tested, not held``.
    """
    cols = style.order_roles(role_columns(roles))
    colours = style.role_colours(cols)
    slots = style.role_slots(cols)  # fixed between runs: an absent built-in role leaves its slot empty
    n_layers = int(roles["layer"].max()) + 1 if len(roles) else 1
    n_heads = int(roles["head"].max()) + 1 if len(roles) else 1
    shape, cell_w, cell_h = grid_layout(n_layers, n_heads, max(slots.values(), default=0) + 1,
                                        style.figure_width())
    width, height = n_heads * cell_w, n_layers * cell_h
    fig_w = min(style.figure_width(), max(width + 0.6, 2.6))
    key_w = style.widest(cols, style.MIN_FONT) + 0.35 + 0.15
    key_cols = max(1, min(len(cols) or 1, int((fig_w - 0.1) // key_w)))
    legend_rows = math.ceil(len(cols) / key_cols) if legend and cols else 0
    title = style.fitted_title(title or "roles held per head", 8, fig_w - 0.1)
    fig = Figure(figsize=(fig_w, height + 0.75 + style.title_height(title, 8) + 0.2 * legend_rows
                          + (0.25 if legend_rows else 0)))
    ax = fig.add_subplot()
    layers = roles["layer"].to_numpy(int)
    heads = roles["head"].to_numpy(int)
    empty = []
    for role in cols:
        k = slots[role]
        values = roles[role]
        tested = values.notna().to_numpy(bool)
        held = values.fillna(False).to_numpy(bool) & tested
        patches = [slot_rectangle(lay, hd, k, shape) for lay, hd in zip(layers[held], heads[held])]
        empty += [slot_rectangle(lay, hd, k, shape) for lay, hd in zip(layers[tested & ~held], heads[tested & ~held])]
        ax.add_collection(PatchCollection(patches, facecolor=colours[role], edgecolor=style.EDGE,
                                          linewidth=0.3, label=role))
    ax.add_collection(PatchCollection(empty, facecolor=style.EMPTY, edgecolor="none", label="_tested, not held",
                                      zorder=0.5))
    ax.set_xlim(0, n_heads)
    ax.set_ylim(n_layers, 0)
    fontsize = style.MIN_FONT
    ax.set_xticks(np.arange(n_heads) + 0.5, [str(h) for h in range(n_heads)], fontsize=fontsize)
    ax.set_yticks(np.arange(n_layers) + 0.5, [str(layer) for layer in range(n_layers)], fontsize=fontsize)
    ax.set_xticks(np.arange(n_heads + 1), minor=True)
    ax.set_yticks(np.arange(n_layers + 1), minor=True)
    ax.grid(which="minor", color=style.GRID, lw=0.6)
    ax.tick_params(which="both", length=0)
    for side in ("top", "right"):
        ax.spines[side].set_visible(True)
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(title)
    key = None
    if legend and cols:
        handles = [_SlotKey(slots[role], shape, colours[role]) for role in cols]
        aspect = cell_w / cell_h
        key = fig.legend(handles, cols, handler_map={_SlotKey: _SlotKeyHandler()},
                         loc="lower center", bbox_to_anchor=(0.5, style.PAD / fig.get_size_inches()[1]),
                         borderaxespad=0.0, ncol=key_cols, handlelength=1.6 * aspect, handleheight=1.6,
                         columnspacing=0.8, handletextpad=0.4, title="slot of each role in a cell",
                         fontsize=style.MIN_FONT, title_fontsize=style.MIN_FONT)
    return style.fit(fig, ax, below=key)


# ------------------------------------------------------------------------------------------ mean-score maps

def _layer_head_grid(part: pd.DataFrame, value: str, n_layers: int, n_heads: int) -> np.ndarray:
    grid = np.full((n_layers, n_heads), np.nan)
    grid[part["layer"].to_numpy(int), part["head"].to_numpy(int)] = part[value].to_numpy(float)
    return grid


class CentredNorm(Normalize):
    """Colours centred at ``tau`` (white) and symmetric about it, so that one colour means one distance from
    tau in every panel that shares the norm; the colour bar shows only ``[vmin, vmax]``, the data's range."""

    def __init__(self, tau: float, halfrange: float, vmin: float, vmax: float):
        super().__init__(vmin=vmin, vmax=vmax)
        self.tau, self.halfrange = float(tau), float(halfrange)

    def __call__(self, value, clip=None):
        value = np.ma.asarray(value, dtype=float)
        out = np.ma.clip(0.5 + (value - self.tau) / (2 * self.halfrange), 0.0, 1.0)
        return out if np.ndim(value) else float(out)

    def inverse(self, value):
        return self.tau + (np.asarray(value, dtype=float) - 0.5) * 2 * self.halfrange


def _norm(values: np.ndarray, tau: float | None) -> Normalize:
    """The colour scale of ``values`` (every grid sharing it): centred at tau when given, its bar spanning
    the values' own range (tau included: the reader sees where tau sits)."""
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if high <= low:
        high = low + 1e-9
    if tau is None:
        return Normalize(low, high)
    half = max(high - tau, tau - low, 1e-9)
    return CentredNorm(tau, half, min(low, tau), max(high, tau))


def integer_ticks(low: float, high: float, *, nbins: int | str = 10) -> list[int]:
    """The integer ticks matplotlib's ``MaxNLocator(integer=True)`` puts on ``[low, high]``, found once (fixed
    ticks cost less to draw than a locator asked again at every draw)."""
    values = MaxNLocator(integer=True, nbins=nbins).tick_values(low, high)
    return [int(round(v)) for v in values if low - 1e-9 <= v <= high + 1e-9]


def plain(value: float, span: float) -> str:
    """``value`` as a plain decimal with the digits its scale's ``span`` needs (3 significant digits of the
    span, never scientific notation): ``3.06``, ``10.2``, ``0.00`` for 7.9e-07 on a span of 3."""
    span = abs(span) if np.isfinite(span) and span > 0 else max(abs(value), 1.0)
    decimals = int(np.clip(2 - math.floor(math.log10(span)), 0, 6))
    text = f"{value:.{decimals}f}"
    return "0" + text[2:] if text.startswith("-0") and float(text) == 0 else text


def _colour_bar_ticks(norm: Normalize, tau: float | None) -> list[float]:
    """The bar's ends, and tau when it is inside and not crowding an end (12 % of the range)."""
    ticks = [float(norm.vmin), float(norm.vmax)]
    span = ticks[1] - ticks[0]
    if tau is not None and all(abs(tau - t) > 0.12 * span for t in ticks):
        ticks.insert(1, float(tau))
    return ticks


def scale_groups(roles: Sequence[str], scale: str) -> dict[str, str]:
    """Which colour scale each role's map uses: its ``family`` (local, block, delimiter, syntactic), one
    ``shared`` by all, or its own (``role``)."""
    if scale not in ("family", "shared", "role"):
        raise ValueError(f"scale {scale!r} is not one of family, shared, role")
    return {r: (style.role_family(r) if scale == "family" else "all" if scale == "shared" else r) for r in roles}


@style.styled
def mean_score_maps(tests: pd.DataFrame, *, tau: float | None = None, title: str = "",
                    ncols: int | None = None, scale: str | None = None) -> Figure:
    """Small multiples, one per role: layer x head heat map of the mean score, assigned heads outlined.

    With ``tau`` the colours are centred at tau (white), red above and blue below, symmetric about tau, so
    that a reader sees at once which heads score above the threshold and which of those were assigned
    (outlined in black). Roles of one family (``scale="family"``, the default of the preset) share one colour
    scale, so one red is one value across them; each bar spans the data's real range (tau included) with
    plain tick labels. The panels are placed with margins computed from their few texts
    (:func:`headstats.plots.style.panel_rects`), at the preset's printed width.

    Parameters
    ----------
    tests : DataFrame
        The tests table of one (model, dataset): ``role, layer, head, mean, reject``.
    tau : float, optional
        The threshold of the tests; centre of the colour scale.
    title : str
        Figure title.
    ncols : int, optional
        Panels per row (default: as many 1.6 in panels as the printed width holds).
    scale : {"family", "shared", "role"}, optional
        Colour scales (:func:`scale_groups`; default: the preset's ``scale``).
    """
    roles = style.order_roles(tests["role"])
    width = style.figure_width()
    ncols = max(1, min(ncols or style.columns_for(1.6, len(roles), most=5), len(roles)))
    nrows = max(1, math.ceil(len(roles) / ncols))
    n_layers, n_heads = int(tests["layer"].max()) + 1, int(tests["head"].max()) + 1
    panel_w = width / ncols
    panel_h = max(0.9, (panel_w - 0.45) * n_layers / n_heads * 1.25 + 0.35)
    heading = style.fitted_title(title or "mean sieve bias score per head", 9, width - 0.1)
    note = "black outline: assigned" + (f"; white: tau = {tau:g}" if tau is not None else "")
    size = (width, panel_h * nrows + 0.25 + style.title_height(heading, 9) + style.text_size("lp", 7)[1])
    fig = Figure(figsize=size)
    cmap = style.DIVERGING_CMAP_CENTRED if tau is not None else style.SEQUENTIAL_CMAP
    grids = {role: _layer_head_grid(tests[tests["role"] == role], "mean", n_layers, n_heads) for role in roles}
    groups = scale_groups(roles, scale or style.preset().scale)
    shared = {g: _norm(np.concatenate([grids[r].ravel() for r in roles if groups[r] == g]), tau)
              for g in dict.fromkeys(groups.values())}
    norms = {role: shared[groups[role]] for role in roles}
    bar_labels = {}
    for role in roles:
        ticks = _colour_bar_ticks(norms[role], tau)
        bar_labels[role] = [plain(v, norms[role].vmax - norms[role].vmin) for v in ticks]
    x_ticks = integer_ticks(-0.5, n_heads - 0.5, nbins=4)
    y_ticks = integer_ticks(-0.5, n_layers - 0.5, nbins=4)

    # margins (inches) from the texts around the panels
    labelled = [k + ncols >= len(roles) for k in range(len(roles))]  # no panel below: x tick labels and label
    x_labels = style.tick_space("x") + style.text_size("0", 7)[1] + style.label_space(7)
    bare = matplotlib.rcParams["xtick.major.size"] / 72
    row_top = max(style.title_space(7), style.text_size("0", 7)[1] / 2)
    bar_gap, bar_w = 0.04, 0.07
    bar_text = style.tick_space("y") + style.widest((t for ts in bar_labels.values() for t in ts), 7)
    left = style.PAD + style.label_space(7) + style.tick_space("y") + style.widest(map(str, y_ticks), 7)
    top = style.PAD + style.title_height(heading, 9) + style.text_size("lp", 7)[1] + style.PAD + row_top
    row_gaps = [(x_labels if any(labelled[r * ncols:(r + 1) * ncols]) else bare) + style.PAD + row_top
                for r in range(nrows - 1)]
    inside = bar_gap + bar_w + bar_text  # the colour bar and its labels, inside each panel's cell (inches)
    cells = style.panel_rects(size, len(roles), ncols, left=left, right=style.PAD, top=top,
                              bottom=x_labels + style.PAD, col_gap=2 * style.PAD + bare, row_gaps=row_gaps)

    for k, (role, (x0, y0, w, h)) in enumerate(zip(roles, cells)):
        map_w = w - inside / size[0]
        ax = fig.add_axes((x0, y0, map_w, h))
        image = ax.imshow(np.ma.masked_invalid(grids[role]), cmap=cmap, norm=norms[role], aspect="auto",
                          interpolation="nearest")
        part = tests[(tests["role"] == role) & tests["reject"].fillna(False).astype(bool)]
        outlines = [Rectangle((hd - 0.5, lay - 0.5), 1, 1) for lay, hd in
                    zip(part["layer"].to_numpy(int), part["head"].to_numpy(int))]
        ax.add_collection(PatchCollection(outlines, facecolor="none", edgecolor=style.ASSIGNED_EDGE, linewidth=1.0,
                                          label="assigned"), autolim=False)
        ax.set_title(style.fitted_title(role, 7, map_w * size[0]), fontsize=7, pad=2)
        ax.set_xticks(x_ticks, [str(t) for t in x_ticks])
        ax.set_yticks(y_ticks, [str(t) for t in y_ticks])
        ax.tick_params(labelsize=7, length=2)
        # the panels share their axes: label the outer ones only (less to read, and less text to draw)
        if k % ncols == 0:
            ax.set_ylabel("layer", fontsize=7)
        else:
            ax.tick_params(labelleft=False)
        if labelled[k]:
            ax.set_xlabel("head", fontsize=7)
        else:
            ax.tick_params(labelbottom=False)
        cax = fig.add_axes((x0 + map_w + bar_gap / size[0], y0, bar_w / size[0], h))
        bar = fig.colorbar(image, cax=cax)
        bar.ax.set_ylim(norms[role].vmin, norms[role].vmax)
        bar.set_ticks(_colour_bar_ticks(norms[role], tau), labels=bar_labels[role])
        bar.ax.tick_params(labelsize=7, length=2)
        bar.ax.minorticks_off()
        if tau is not None:
            bar.ax.axhline(tau, color="k", lw=0.8)
    fig.suptitle(heading, fontsize=9, x=0.01, ha="left", y=1 - style.PAD / size[1], va="top")
    scales = {"family": "one colour scale per role family", "shared": "one colour scale for all roles",
              "role": "one colour scale per role"}[scale or style.preset().scale]
    fig.text(0.01, 1 - (style.PAD + style.title_height(heading, 9)) / size[1], f"{note}; {scales}", fontsize=7,
             ha="left", va="top")
    return style.laid_out(fig)


# ---------------------------------------------------------------------------------- heads per role per layer

@style.styled
def heads_per_layer_plot(per_layer: pd.DataFrame, *, title: str = "", ncols: int | None = None,
                         label_bars: bool | None = None) -> Figure:
    """Small multiples, one panel per role: heads holding the role in each layer (bars, shared y axis).

    Parameters
    ----------
    per_layer : DataFrame
        Rows of :func:`headstats.tables.study_tables.heads_per_role_per_layer` for one (model, dataset):
        ``layer, role, n_heads`` (and ``n_total``, heads per layer).
    title : str
        Figure title.
    ncols : int, optional
        Panels per row (default 5 for more than 8 roles, else 4).
    label_bars : bool, optional
        Write each count above its bar (default: when the model has at most 16 layers).
    """
    roles = style.order_roles(per_layer["role"])
    colours = style.role_colours(roles)
    layers = sorted(int(x) for x in per_layer["layer"].unique())
    label_bars = len(layers) <= 16 if label_bars is None else label_bars
    width = style.figure_width()
    ncols = max(1, min(ncols or style.columns_for(max(1.25, 0.1 * len(layers) + 0.5), len(roles), most=5),
                       len(roles)))
    nrows = max(1, math.ceil(len(roles) / ncols))
    top = float(per_layer["n_heads"].max()) if len(per_layer) else 1.0
    heading = style.fitted_title(title or "heads per role per layer", 9, width - 0.1)
    size = (width, 1.2 * nrows + 0.35 + style.title_height(heading, 9))
    fig = Figure(figsize=size)
    y_max = max(1.0, top) * 1.18
    y_ticks = integer_ticks(0, y_max, nbins=4)
    first, last = (layers[0], layers[-1]) if layers else (0, 0)
    margin = 0.375 + 0.05 * (last - first + 0.75)  # matplotlib's 5 % around bars of width 0.75
    x_ticks = integer_ticks(first - margin, last + margin)

    # margins (inches) from the texts around the panels (fonts of the style: ticks 8, labels 9, titles 9)
    labelled = [k + ncols >= len(roles) for k in range(len(roles))]  # no panel below: layer numbers and label
    x_labels = style.tick_space("x") + style.text_size("0", 7)[1] + style.label_space(8)
    bare = matplotlib.rcParams["xtick.major.size"] / 72
    left = style.PAD + style.label_space(8) + style.tick_space("y") + style.widest(map(str, y_ticks), 7)
    top_margin = style.PAD + style.title_height(heading, 9) + style.PAD + style.title_space(8)
    row_gaps = [(x_labels if any(labelled[r * ncols:(r + 1) * ncols]) else bare) + style.PAD + style.title_space(8)
                for r in range(nrows - 1)]
    rects = style.panel_rects(size, len(roles), ncols, left=left, right=style.PAD, top=top_margin,
                              bottom=x_labels + style.PAD, col_gap=2 * style.PAD + bare, row_gaps=row_gaps)
    first_ax = None
    for k, (role, rect) in enumerate(zip(roles, rects)):
        ax = fig.add_axes(rect, sharex=first_ax, sharey=first_ax)
        first_ax = first_ax or ax
        part = per_layer[per_layer["role"] == role].sort_values("layer")
        bars = ax.bar(part["layer"].to_numpy(int), part["n_heads"].to_numpy(int), width=0.75,
                      color=colours[role], edgecolor=style.EDGE, linewidth=0.4, label=role)
        if label_bars:
            ax.bar_label(bars, labels=[str(int(v)) if v else "" for v in part["n_heads"]], fontsize=7, padding=1)
        ax.set_title(role, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        if k % ncols == 0:
            ax.set_ylabel("heads")
        else:
            ax.tick_params(labelleft=False)
        if labelled[k]:
            ax.set_xlabel("layer")
        else:
            ax.tick_params(labelbottom=False)
    if first_ax is not None:  # shared by every panel
        first_ax.set_ylim(0, y_max)
        first_ax.set_xlim(first - margin, last + margin)
        first_ax.set_yticks(y_ticks, [str(t) for t in y_ticks])
        first_ax.set_xticks(x_ticks, [str(t) for t in x_ticks])
    fig.suptitle(heading, fontsize=9, x=0.01, ha="left", y=1 - style.PAD / size[1], va="top")
    return style.laid_out(fig)


# ------------------------------------------------------------------------------------------- co-location

def _members(combination: str) -> list[str]:
    return [] if combination in ("", "none") else str(combination).split("+")


@style.styled
def upset_plot(coloc: pd.DataFrame, *, roles: Sequence[str] | None = None, max_intersections: int = 20,
               show_none: bool = True, title: str = "") -> Figure:
    """Co-location of roles as an UpSet plot (Lex et al. 2014): heads per exact combination of roles.

    The top bars are the intersections, largest first (combinations held by no head are left out); the dots
    under each bar show which roles make it; the bars on the left are the heads holding each role, whatever
    else they hold (the sum of the intersections that contain it).

    Parameters
    ----------
    coloc : DataFrame
        ``colocation`` rows for one (model, dataset); only ``kind == "exact"`` rows are
        drawn (``combination`` joins roles with ``+``; ``none`` is heads without any role).
    roles : sequence of str, optional
        Roles to show as rows, also those no head holds (default: the roles named in the combinations).
    max_intersections : int
        Draw at most this many intersections (the largest); the title says how many were left out.
    show_none : bool
        Draw the column of heads without any role.
    title : str
        Figure title.
    """
    exact = coloc[coloc["kind"] == "exact"] if "kind" in coloc.columns else coloc
    exact = exact[exact["n_heads"] > 0]
    if not show_none:
        exact = exact[~exact["combination"].isin(["", "none"])]
    members = {c: _members(c) for c in exact["combination"]}
    named = [r for m in members.values() for r in m]
    roles = style.order_roles([*(roles or []), *named])
    colours = style.role_colours(roles)
    ranked = exact.assign(_k=exact["combination"].map(lambda c: len(members[c]))) \
        .sort_values(["n_heads", "_k", "combination"], ascending=[False, True, True])
    width = style.figure_width()
    fixed = style.widest(roles, 7) + 1.45  # role labels, the bars of heads per role, the margins
    max_intersections = min(max_intersections, max(3, int((width - fixed) / 0.2)))
    shown = ranked.head(max_intersections)
    set_sizes = {r: int(exact.loc[exact["combination"].map(lambda c, r=r: r in members[c]), "n_heads"].sum())
                 for r in roles}
    n_int, n_roles = len(shown), len(roles)
    fig_size = (min(width, fixed + 0.3 * max(n_int, 3)), 1.7 + 0.17 * max(n_roles, 1))
    fig = Figure(figsize=fig_size)
    x = np.arange(n_int)
    heights = shown["n_heads"].to_numpy(int)
    sizes = [set_sizes[r] for r in roles]
    bar_top = max(1, heights.max() if n_int else 1) * 1.15
    sets_left = max(1, max(sizes, default=1)) * 1.35
    heading = style.fitted_title((title or "co-location: heads per exact combination of roles") + (
        f" ({len(ranked) - n_int} smaller combinations not shown)" if len(ranked) > n_int else ""), 9,
        fig_size[0] * 0.99 - style.PAD)
    # margins (inches) from the texts around the three axes: bars of intersections over the dots, role sizes left
    bar_ticks, set_ticks = integer_ticks(0, bar_top, nbins=4), integer_ticks(0, sets_left, nbins=3)
    tick_pad = matplotlib.rcParams["ytick.major.pad"] / 72
    none_label = any(not members[c] for c in shown["combination"])
    gap = max(tick_pad + style.widest(roles, 7),
              style.label_space(8) + style.tick_space("y") + style.widest(map(str, bar_ticks), 7)) + 2 * style.PAD
    bottom = max(style.tick_space("x") + style.text_size("0", 7)[1] + matplotlib.rcParams["axes.labelpad"] / 72
                 + style.text_size("heads\nper role", 8)[1],
                 matplotlib.rcParams["xtick.major.pad"] / 72 + style.text_size("no role", 7)[1] * none_label)
    left = style.PAD + style.widest(map(str, set_ticks), 7) / 2
    top = style.PAD + style.title_height(heading, 9) + style.PAD + style.text_size("0", 7)[1] / 2
    wide = fig_size[0] - left - style.PAD - gap
    tall = fig_size[1] - top - bottom - style.PAD - style.PAD
    w_sets = min(0.9, wide * 1.1 / (1.1 + 0.3 * max(n_int, 3)))
    h_bar = tall * 1.7 / (1.7 + 0.17 * max(n_roles, 1))
    x_dots, y_dots = left + w_sets + gap, bottom + style.PAD
    h_dots = tall - h_bar

    def rect(x0, y0, w, h):
        return (x0 / fig_size[0], y0 / fig_size[1], w / fig_size[0], h / fig_size[1])

    ax_bar = fig.add_axes(rect(x_dots, y_dots + h_dots + style.PAD, wide - w_sets, h_bar))
    ax_dots = fig.add_axes(rect(x_dots, y_dots, wide - w_sets, h_dots), sharex=ax_bar)
    ax_sets = fig.add_axes(rect(left, y_dots, w_sets, h_dots))
    bars = ax_bar.bar(x, heights, width=0.6, color=style.EDGE, label="intersection")
    ax_bar.bar_label(bars, fontsize=7, padding=1)
    ax_bar.set_ylabel("heads")
    ax_bar.set_ylim(0, bar_top)
    ax_bar.set_yticks(bar_ticks, [str(t) for t in bar_ticks])
    ax_bar.tick_params(axis="x", bottom=False, labelbottom=False)
    ax_bar.spines["bottom"].set_visible(False)
    y = {r: i for i, r in enumerate(roles)}
    for i in range(0, n_roles, 2):
        ax_dots.axhspan(i - 0.5, i + 0.5, color="#F4F4F4", zorder=0)
    filled_x, filled_y = [], []
    for xi, combo in zip(x, shown["combination"]):
        ys = sorted(y[r] for r in members[combo])
        filled_x += [xi] * len(ys)
        filled_y += ys
        if len(ys) > 1:
            ax_dots.plot([xi, xi], [ys[0], ys[-1]], color=style.EDGE, lw=1.6, zorder=1)
    grey_x, grey_y = np.meshgrid(x, np.arange(n_roles))
    ax_dots.scatter(grey_x.ravel(), grey_y.ravel(), s=16, color=style.EMPTY, zorder=1, label="_not in")
    ax_dots.scatter(filled_x, filled_y, s=16, color=style.EDGE, zorder=2, label="in")
    ax_dots.set_ylim(n_roles - 0.5, -0.5)
    ax_sets.set_ylim(n_roles - 0.5, -0.5)
    ax_dots.set_xlim(-0.6, max(n_int, 1) - 0.4)
    none_at = [xi for xi, c in zip(x, shown["combination"]) if not members[c]]
    ax_dots.set_xticks(none_at, ["no role"] * len(none_at), fontsize=7)
    ax_dots.tick_params(axis="both", length=0)
    for side in ("left", "bottom"):
        ax_dots.spines[side].set_visible(False)
    ax_dots.set_yticks(np.arange(n_roles), roles)
    ax_sets.barh(np.arange(n_roles), sizes, height=0.6, color=[colours[r] for r in roles],
                 edgecolor=style.EDGE, linewidth=0.4)
    for i, size in enumerate(sizes):
        ax_sets.annotate(str(size), (size, i), xytext=(-2, 0), textcoords="offset points", ha="right",
                         va="center", fontsize=7)
    ax_sets.set_xlim(sets_left, 0)
    ax_sets.tick_params(axis="y", left=False, labelleft=False)
    ax_sets.spines["left"].set_visible(False)
    ax_sets.set_xlabel("heads\nper role")
    ax_sets.set_xticks(set_ticks, [str(t) for t in set_ticks])
    fig.suptitle(heading, fontsize=9, x=0.01, ha="left", y=1 - style.PAD / fig_size[1], va="top")
    return style.laid_out(fig)
