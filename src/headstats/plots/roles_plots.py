"""Figures of role assignment: the layer x head grid, heads per role per layer, co-location, mean scores.

Every function takes the tables of :mod:`headstats.assign` or the tests table and returns a
``matplotlib.figure.Figure`` (object-oriented API, headless, no ``plt.show``).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from headstats.assign import role_columns  # noqa: E402

ROLE_COLOURS = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf", "#393b79", "#637939",
]


def role_colours(roles: list[str]) -> dict[str, str]:
    """A fixed colour per role, in the order given."""
    return {role: ROLE_COLOURS[i % len(ROLE_COLOURS)] for i, role in enumerate(roles)}


def role_grid(roles: pd.DataFrame, *, title: str = "") -> Figure:
    """Layer x head grid of one model on one data set; each role held is a coloured stripe in its cell.

    Parameters
    ----------
    roles : DataFrame
        Rows of :func:`headstats.assign.role_table` for one (model, dataset).
    """
    cols = role_columns(roles)
    colours = role_colours(cols)
    n_layers = int(roles["layer"].max()) + 1
    n_heads = int(roles["head"].max()) + 1
    fig = Figure(figsize=(max(6.0, 0.55 * n_heads + 2.5), max(3.0, 0.45 * n_layers + 1.2)))
    ax = fig.add_subplot()
    width = 1.0 / max(1, len(cols))
    held = roles[cols].fillna(False).astype(bool)
    for (_, row), (_, held_row) in zip(roles.iterrows(), held.iterrows()):
        for k, role in enumerate(cols):
            if held_row[role]:
                ax.add_patch(Rectangle((row["head"] + k * width, row["layer"]), width, 1, color=colours[role], lw=0))
    ax.set_xlim(0, n_heads)
    ax.set_ylim(n_layers, 0)
    ax.set_xticks(np.arange(n_heads) + 0.5, [str(h) for h in range(n_heads)])
    ax.set_yticks(np.arange(n_layers) + 0.5, [str(layer) for layer in range(n_layers)])
    ax.set_xticks(np.arange(n_heads + 1), minor=True)
    ax.set_yticks(np.arange(n_layers + 1), minor=True)
    ax.grid(which="minor", color="#444", lw=0.6)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(title or "roles assigned per head (stripes: roles held)")
    handles = [Rectangle((0, 0), 1, 1, color=colours[c]) for c in cols]
    ax.legend(handles, cols, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def heads_per_layer_plot(per_layer: pd.DataFrame, *, title: str = "") -> Figure:
    """Number of heads per role in each layer (the paper's distribution over layers).

    Parameters
    ----------
    per_layer : DataFrame
        Rows of :func:`headstats.assign.heads_per_role_per_layer` for one (model, dataset).
    """
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    roles = list(dict.fromkeys(per_layer["role"]))
    colours = role_colours(roles)
    for role in roles:
        part = per_layer[per_layer["role"] == role].sort_values("layer")
        ax.plot(part["layer"], part["n_heads"], marker="o", label=role, color=colours[role])
    ax.set_xlabel("layer")
    ax.set_ylabel("heads assigned")
    ax.set_xticks(sorted(per_layer["layer"].unique()))
    ax.set_title(title or "heads per role per layer")
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def colocation_plot(coloc: pd.DataFrame, *, top: int = 15, title: str = "") -> Figure:
    """Horizontal bars: heads per exact combination of roles (one model, one data set)."""
    exact = coloc[coloc["kind"] == "exact"].sort_values("n_heads", ascending=True).tail(top)
    fig = Figure(figsize=(7, max(2.5, 0.3 * len(exact) + 1)))
    ax = fig.add_subplot()
    ax.barh(exact["combination"], exact["n_heads"], color="#4c72b0")
    ax.set_xlabel("heads")
    ax.set_title(title or "co-location: heads per combination of roles")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    return fig


def mean_score_maps(tests: pd.DataFrame, *, tau: float | None = None, title: str = "") -> Figure:
    """Small multiples, one per role: layer x head heat map of the mean score, assigned heads outlined."""
    roles = list(dict.fromkeys(tests["role"]))
    ncols = min(4, len(roles))
    nrows = int(np.ceil(len(roles) / ncols))
    fig = Figure(figsize=(3.2 * ncols, 2.6 * nrows + 0.6))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, role in zip(axes.flat, roles):
        part = tests[tests["role"] == role]
        grid = part.pivot(index="layer", columns="head", values="mean")
        image = ax.imshow(grid.to_numpy(dtype=float), cmap="viridis", aspect="auto")
        for r in part[part["reject"].fillna(False).astype(bool)].itertuples():
            ax.add_patch(Rectangle((r.head - 0.5, r.layer - 0.5), 1, 1, fill=False, ec="red", lw=1.2))
        ax.set_title(role, fontsize=9)
        ax.set_xlabel("head", fontsize=8)
        ax.set_ylabel("layer", fontsize=8)
        ax.tick_params(labelsize=7)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    for ax in list(axes.flat)[len(roles):]:
        ax.set_visible(False)
    suffix = f" (red: assigned, tau = {tau:g})" if tau is not None else " (red: assigned)"
    fig.suptitle((title or "mean sieve bias score per head") + suffix, fontsize=10)
    fig.tight_layout()
    return fig
