"""Figure of the gradient-importance analysis (Clark et al. 2019, Figure 3; METHODS 2.1): the mean |dL/dA|
per layer for attention to [CLS], [SEP], punctuation and other tokens. It draws the table; it computes no
statistic beyond the mean over a layer's heads that the figure shows."""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from headstats.plots import style

TARGET_COLOURS = {"cls": style.OKABE_ITO["reddish_purple"], "sep": style.OKABE_ITO["blue"],
                  "punct": style.OKABE_ITO["orange"], "other": style.OKABE_ITO["bluish_green"]}


@style.styled
def gradient_layers_plot(gradients: pd.DataFrame, *, title: str = "", ax: Axes | None = None) -> Figure:
    """One line per target kind: the mean over a layer's heads of ``mean_abs_grad`` (one model, data set)."""
    if ax is None:
        fig = Figure(figsize=(6, 3.4))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    for target, part in gradients.groupby("target", sort=False):
        per_layer = part.groupby("layer")["mean_abs_grad"].mean()
        ax.plot(per_layer.index, per_layer.to_numpy(), marker="o", label=str(target),
                color=TARGET_COLOURS.get(str(target)))
    ax.set_xlabel("layer")
    ax.set_ylabel("mean |dL/dA|")
    ax.legend(frameon=False)
    ax.set_title(title or "gradient importance of attention by target")
    fig.tight_layout()
    return fig
