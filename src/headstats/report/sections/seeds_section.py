"""Seeds as replicates: the answer (what fine-tuning changed beyond seed noise), right after the claims, and its detail
(dev metrics over seeds, maps of the mean change, [SEP] mass and role transitions per seed) under the comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from headstats.report.blocks import Report, figure_tag
from headstats.report.figures import FigureRenderer
from headstats.report.sections import add_subsections_as_text


def has_seeds(comparison: dict | None) -> bool:
    """Whether a study's comparison has replicate groups (seeds as replicates)."""
    return bool(comparison) and "seed_changes" in comparison and len(comparison["seed_changes"]) > 0


def seeds_answer_section(report: Report, tables: dict, claims: pd.DataFrame | None = None) -> None:
    """Right after the claims table when seeds are replicates: per replicate group and data set, the changes
    beyond seed noise and the margin, the heads shown unchanged, and the fine-tuning claims with their verdicts
    from ``claims`` (the registry's, :mod:`headstats.assignment.replicates`)."""
    from headstats.assignment.replicates import seeds_markdown

    report.heading("The answer: what fine-tuning changed beyond seed noise")
    report.text("Seeds are the replicates: each seed's change of a head is its paired change over the same "
                "inputs, averaged; the mean over seeds gets a t interval from the between-seed variation and a "
                "per-cell test over seeds (the empirical-Bayes moderated t unless compare: seed_test says "
                "otherwise), corrected over the family; the claims over seeds use the exact sign-flip test (see "
                "docs/statistics.md, 'Seeds as replicates'). Figures, per-seed tables and the per-input detail are "
                "under 'Pretrained vs fine-tuned'.")
    add_subsections_as_text(report, seeds_markdown(tables, claims=claims))


def seeds_section(report: Report, root: Path, tables: dict, *, formats: Sequence[str] | None = None,
                  figures: FigureRenderer | None = None) -> None:
    """Seeds as replicates, in detail (the answer itself leads the report: :func:`seeds_answer_section`): the
    dev metrics over seeds, maps of the mean change over seeds, [SEP] mass and role transitions per seed
    (figures drawn by ``figures``, default: here, now)."""
    from headstats.plots import compare_plots

    figures = figures or FigureRenderer(root, formats=formats, workers=1)

    report.heading("Seeds as replicates: metrics, maps and per-seed tables", level=3)
    if "seed_metrics" in tables and len(tables["seed_metrics"]):
        report.table(tables["seed_metrics"], "Dev metrics of every seed and their spread over seeds.",
                     max_rows=60, csv="compare_seed_metrics.csv")
    changes = tables["seed_changes"]
    for (group, dataset), part in changes.groupby(["group", "dataset"], sort=False):
        marked = part.assign(estimate=part["mean_change"], model_after=f"{group} (mean of seeds)", model_before="base",
                             reject=part["exceeds"] if part["min_change"].notna().any() else part["reject"])
        for role in dict.fromkeys(part["role"]):
            if role in ("local", "delimiter_sep", "syntactic"):
                report.figure(figures.add(f"seed_change_{figure_tag(group, dataset, role)}",
                                          compare_plots.change_map, marked, role=role, dataset=dataset),
                              f"{group} on {dataset}: mean over seeds of the {role} score change per head; stars "
                              "mark heads whose change is beyond seed noise and the margin.",
                              alt=f"mean change over seeds of {role}")
    if "seed_special_mass" in tables and len(tables["seed_special_mass"]):
        report.table(tables["seed_special_mass"], "Change of attention mass on [SEP], other tokens and [CLS] per "
                     "layer over seeds (layer -1: mean over layers).", max_rows=120,
                     csv="compare_seed_special_mass.csv")
    if "seed_transitions" in tables and len(tables["seed_transitions"]):
        report.table(tables["seed_transitions"], "Role transitions per seed: heads before, mean after, gained, lost "
                     "and net over seeds with the t interval of net.", max_rows=120,
                     csv="compare_seed_transitions.csv")
    shown = changes[changes["exceeds"] | changes["unchanged"]].sort_values(["unchanged", "p_corr"])
    report.table(shown, "Head x role changes beyond seed noise and the margin, then those shown unchanged.",
                 max_rows=100, csv="compare_seed_changes.csv")
