"""Report section of the ``importance`` analysis: which heads matter to the task, the pruning curve, and the notes of
models without a task head."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from headstats.analyses.importance.tables import (IMPORTANCE, IMPORTANCE_NOTES, IMPORTANCE_PRUNING,
                                                  IMPORTANCE_REMOVABLE, IMPORTANCE_SEEDS, IMPORTANCE_TESTS)
from headstats.report.blocks import figure_tag, save_figure
from headstats.report.sections import head_list
from headstats.tables import RunTables


def importance_summary(heads: pd.DataFrame, tests: pd.DataFrame | None) -> pd.DataFrame:
    """Per model and data set: the ablation, the measure, the unablated accuracy, the heads whose ablation
    significantly raises the loss ("not tested" for a model measured task-free: the test is of the task loss),
    and the three most important heads."""
    rows = []
    held = None
    if tests is not None and len(tests):
        held = tests[tests["reject"].fillna(False).astype(bool)]
    for (model, dataset), part in heads.groupby(["model", "dataset"], sort=False):
        top = part.sort_values("importance", ascending=False).head(3)
        row = {"model": model, "dataset": dataset, "ablation": part["ablation"].iat[0],
               "measure": part["importance_measure"].iat[0], "n": int(part["n"].iat[0]),
               "base_accuracy": part["base_accuracy"].iat[0], "top_heads": head_list(top)}
        if held is not None:
            mine = held[(held["model"] == model) & (held["dataset"] == dataset)]
            # the test is of the task loss: a model measured task-free (cosine distance) has none to test
            row["heads_that_matter"] = (f"{len(mine)} of {len(part)}" if row["measure"] == "delta_loss"
                                        else "not tested (no task loss)")
        rows.append(row)
    return pd.DataFrame(rows)


def importance_section(report: Any, root: Path, tables: RunTables) -> None:
    """Importance per head (table and grid), the seeds' tests, the pruning curve and the removable share."""
    from headstats.analyses.importance import figures

    report.heading("Head importance (ablation and gradients)")
    report.text(
        "Per input and head, the change of the task loss when the head's output is replaced by its mean over the "
        "data set (`mean` ablation) or by zeros (`zero`), named in each table, and Michel et al.'s (2019) gradient "
        "|dL/d xi| of a gate on the head's output. A head *matters* when its ablation raises the loss: a one-sided "
        "test over inputs per head, corrected over heads (`importance_tests.csv`). Ablation is one counterfactual "
        "among several: a head can matter only through what the others do without it, and a large effect of zero "
        "ablation may come from moving the model off its inputs' distribution, which mean ablation avoids. Every "
        "head: `importance.csv`."
    )
    notes = tables.get(IMPORTANCE_NOTES)
    if notes is not None and len(notes):
        for row in notes.itertuples():
            report.text(f"**{row.status}** for {row.model} on {row.dataset}: {row.reason}.")
    heads = tables.get(IMPORTANCE)
    if heads is None or heads.empty:
        return
    report.table(importance_summary(heads, tables.get(IMPORTANCE_TESTS)),
                 "Per model and data set: the unablated accuracy, the heads whose ablation raises the loss (after "
                 "correction) and the three with the largest mean effect.", csv="importance.csv")
    for (model, dataset), part in heads.groupby(["model", "dataset"], sort=False):
        fig = figures.importance_grid_plot(part, title=f"{model} / {dataset}")
        report.figure(save_figure(fig, root, f"importance__{figure_tag(model, dataset)}"),
                      f"Mean importance per head ({part['importance_measure'].iat[0]}, {part['ablation'].iat[0]} "
                      "ablation).", alt="head importance grid")
    seeds = tables.get(IMPORTANCE_SEEDS)
    if seeds is not None and len(seeds):
        held = seeds[seeds["reject"].fillna(False).astype(bool)]
        per = (seeds.groupby(["model", "dataset"], sort=False)
               .apply(lambda p: pd.Series({"seeds": int(p["n_seeds"].max()),
                                           "heads_that_matter": head_list(held[(held["model"] == p.name[0])
                                                                               & (held["dataset"] == p.name[1])])}))
               .reset_index())
        report.text("Over fine-tuning seeds (each seed's mean loss change is one replicate; moderated t, one-sided, "
                    "corrected over heads; `importance_seeds.csv`):")
        report.table(per, "Heads whose ablation raises the loss over seeds.", csv="importance_seeds.csv")
    removable = tables.get(IMPORTANCE_REMOVABLE)
    curve = tables.get(IMPORTANCE_PRUNING)
    if curve is not None and len(curve):
        tolerance = float(removable["tolerance"].iat[0]) if removable is not None and len(removable) else None
        for dataset, part in curve.groupby("dataset", sort=False):
            fig = figures.pruning_plot(part, tolerance=tolerance, title=f"pruning / {dataset}")
            report.figure(save_figure(fig, root, f"importance_pruning__{figure_tag('all', dataset)}"),
                          "Accuracy with a share of the heads removed, least important first (the order estimated "
                          "on the other half of the inputs); bands: intervals over inputs (thin) or seeds (thick).",
                          alt="pruning curve")
    if removable is not None and len(removable):
        report.text(f"The largest share of heads removable with accuracy falling by at most "
                    f"{float(removable['tolerance'].iat[0]):g} (Michel et al.'s question; `importance_removable.csv`).")
        report.table(removable, "Largest removable share: from the mean drop, and from its upper confidence bound; "
                     "percentile bootstrap interval over inputs; over seeds, the mean of the seeds' shares with a "
                     "two-stage bootstrap interval over seeds and inputs.", csv="importance_removable.csv")
