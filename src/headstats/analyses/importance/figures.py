"""Figures of the ``importance`` analysis: the pruning curve (Michel et al. 2019, Figure 3) with its intervals, and
the per-head importance grid. They draw the tables of :mod:`headstats.analyses.importance.finish`; they compute nothing."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from headstats.plots import style

_COLOURS = list(style.OKABE_ITO.values())


@style.styled
def pruning_plot(curve: pd.DataFrame, *, tolerance: float | None = None, title: str = "",
                 ax: Axes | None = None) -> Figure:
    """Accuracy against the share of heads removed, one line per model (or replicate group) of one data set,
    with the interval of each point as a band (``accuracy_ci_low``/``accuracy_ci_high`` of ``importance_pruning``);
    a dashed line at the unpruned accuracy minus ``tolerance``."""
    if ax is None:
        fig = Figure(figsize=(6, 3.6))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    for i, ((model, unit), part) in enumerate(curve.groupby(["model", "unit"], sort=False)):
        part = part.sort_values("share")
        colour = _COLOURS[i % len(_COLOURS)]
        label = f"{model} (over {unit})"
        ax.plot(part["share"], part["accuracy"], marker="o", color=colour, label=label,
                linewidth=2.0 if unit == "seeds" else 1.0)
        ax.fill_between(part["share"], part["accuracy_ci_low"], part["accuracy_ci_high"], color=colour, alpha=0.15,
                        linewidth=0)
        if tolerance is not None and unit == "seeds":
            start = float(part.loc[part["share"] == 0, "accuracy"].iat[0])
            ax.axhline(start - tolerance, color=colour, linestyle="--", linewidth=0.8)
    ax.set_xlabel("share of heads removed (least important first)")
    ax.set_ylabel("accuracy")
    ax.set_ylim(max(0.0, float(np.nanmin(curve["accuracy_ci_low"].fillna(curve["accuracy"]))) - 0.05), 1.0)
    ax.legend(frameon=False, fontsize=7)
    ax.set_title(title or "pruning curve")
    fig.tight_layout()
    return fig


@style.styled
def importance_grid_plot(heads: pd.DataFrame, *, value: str = "importance", title: str = "",
                         ax: Axes | None = None) -> Figure:
    """The per-head importance of one model and data set as a layer x head grid."""
    if ax is None:
        fig = Figure(figsize=(5.5, 3.4))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    grid = heads.pivot_table(index="layer", columns="head", values=value)
    image = ax.imshow(grid.to_numpy(float), aspect="auto", cmap="viridis", origin="upper")
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_xticks(range(grid.shape[1]))
    ax.set_yticks(range(grid.shape[0]))
    fig.colorbar(image, ax=ax, label=str(heads["importance_measure"].iat[0]) if "importance_measure" in heads else value)
    ax.set_title(title or "head importance")
    fig.tight_layout()
    return fig
