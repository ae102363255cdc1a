"""Figures of the dependency analysis (Clark et al. 2019, section 4.2 and Table 1; METHODS 2.3).

- :func:`dependency_table_plot`: per relation, the best head's accuracy against the best offset's, with their
  confidence intervals; relations where the paired test rejects are marked.
- :func:`best_per_layer_plot`: per relation, the best head's accuracy in each layer (where in depth the
  relation is found).

The functions draw what the tables hold; they compute no statistic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from headstats.plots import style


@style.styled
def dependency_table_plot(table: pd.DataFrame, *, title: str = "", ax: Axes | None = None) -> Figure:
    """Best head (filled) against best offset (open) per relation, with interval bars; ``*`` marks a rejection.

    ``table`` is one (model, dataset)'s ``dependency_table``: ``relation, accuracy, accuracy_ci_low,
    accuracy_ci_high, offset_accuracy, offset_accuracy_ci_low, offset_accuracy_ci_high, reject``.
    """
    table = table.reset_index(drop=True)
    fig, ax = style.axes_for(ax, (6.5, 0.3 * len(table) + 1.2))
    y = np.arange(len(table))[::-1]
    colours = style.OKABE_ITO
    for value, colour, label, shift, fill in (("accuracy", colours["blue"], "best head", 0.15, True),
                                              ("offset_accuracy", colours["orange"], "best offset", -0.15, False)):
        x = table[value].to_numpy(float)
        err = np.vstack([x - table[f"{value}_ci_low"].to_numpy(float), table[f"{value}_ci_high"].to_numpy(float) - x])
        ax.errorbar(x, y + shift, xerr=err, fmt="o", color=colour, mfc=colour if fill else "white", label=label,
                    capsize=2, ms=5)
    names = [f"{r}{' *' if bool(rej) else ''}" for r, rej in zip(table["relation"], table["reject"])]
    ax.set_yticks(y, names)
    ax.set_xlim(0, 1)
    ax.set_xlabel("accuracy (share of words whose head is predicted)")
    ax.legend(loc="lower right", frameon=False)
    ax.set_title(title or "best head against best offset (* head better, corrected)")
    fig.tight_layout()
    return fig


@style.styled
def best_per_layer_plot(heads: pd.DataFrame, relations: Sequence[str], *, title: str = "",
                        ax: Axes | None = None) -> Figure:
    """Highest accuracy of any head (either direction) in each layer, one line per relation.

    ``heads`` is one (model, dataset)'s ``dependency_heads``.
    """
    fig, ax = style.axes_for(ax, (6.5, 3.6))
    palette = [*style.SERIES, *style.TOL_MUTED]
    for k, relation in enumerate(relations):
        part = heads[heads["relation"] == relation]
        if part.empty:
            continue
        best = part.groupby("layer")["accuracy"].max()
        ax.plot(best.index, best.to_numpy(), marker="o", label=relation,
                color=palette[k % len(palette)], linestyle="-" if k < len(palette) else "--")
    ax.set_xlabel("layer")
    ax.set_ylabel("best head's accuracy")
    ax.set_ylim(0, 1)
    ax.legend(ncol=2, fontsize="small", frameon=False)
    ax.set_title(title or "best head per layer")
    fig.tight_layout()
    return fig
