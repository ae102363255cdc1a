"""Report section of the ``gradients`` analysis (Clark et al. 2019, section 3): gradient importance of attention per
layer and kind of token, or why it was skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from headstats.analyses.gradients.tables import GRADIENTS, GRADIENTS_SKIPPED
from headstats.report.blocks import figure_tag
from headstats.report.figures import draw_figure
from headstats.tables import RunTables


def gradients_section(report: Any, root: Path, tables: RunTables) -> None:
    """Gradient importance: the per-layer figure and table, or the reason the analysis was skipped."""
    from headstats.analyses.gradients import figures

    report.heading("Gradient importance of attention (Clark et al. 2019)")
    report.text(
        "The magnitude of the gradient of the model's loss with respect to each attention weight, averaged per "
        "input over the weights on [CLS], on [SEP], on \".\" and \",\", and on every other token, then over "
        "inputs. Clark et al. found attention to [SEP] large but its gradient small after the middle layers: "
        "attending to [SEP] there works as a no-op. Every head: `gradients.csv`."
    )
    skipped = tables.get(GRADIENTS_SKIPPED)
    if skipped is not None and len(skipped):
        where = ", ".join(f"{m} on {d}" for m, d in skipped[["model", "dataset"]].itertuples(index=False))
        report.text(f"Not run for {where}: the reason and the fix are at the top of the report.")
    grads = tables.get(GRADIENTS)
    if grads is None or grads.empty:
        return
    for (model, dataset), part in grads.groupby(["model", "dataset"], sort=False):
        report.figure(draw_figure(root, f"gradients_{figure_tag(model, dataset)}", figures.gradient_layers_plot, part, title=f"{model} / {dataset}"),
                      f"Mean |dL/dA| per layer by the kind of token attended to ({part['loss'].iat[0]}); a line "
                      "for [SEP] far below the others means attention to [SEP] barely changes the loss.",
                      alt="gradient importance per layer")
        per_layer = part.pivot_table(index="layer", columns="target", values="mean_abs_grad", aggfunc="mean")
        report.table(per_layer.reset_index(), f"{model} / {dataset}: mean |dL/dA| over each layer's heads.",
                     csv="gradients.csv")
