"""Pretrained against fine-tuned: the models headstats fine-tuned, the generated summary of the changes, and per
(fine-tuned model, data set) the change maps, heads per layer before and after, similarity, [SEP] mass and role
transitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from headstats.report.blocks import Report, figure_tag
from headstats.report.figures import FigureRenderer
from headstats.report.sections import add_subsections_as_text
from headstats.report.sections.seeds_section import has_seeds, seeds_section


def finetuned_models_table(manifest: dict) -> pd.DataFrame:
    """Recipe and dev metrics of each model that headstats fine-tuned."""
    rows = []
    for name, prov in manifest["models"].items():
        info = prov.get("finetune")
        if not info:
            continue
        recipe, metrics = info["recipe"], info.get("metrics") or {}
        row = {"model": name, "base": recipe["base"], "task": recipe["task"], "epochs": recipe["epochs"],
               "learning_rate": recipe["learning_rate"], "train_rows": recipe["train_rows"], "seed": recipe["seed"]}
        row.update({k: v for k, v in metrics.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)})
        rows.append(row)
    return pd.DataFrame(rows)


def comparison_section(report: Report, root: Path, tables: dict, manifest: dict, *,
                       formats: Sequence[str] | None = None, figures: FigureRenderer | None = None) -> None:
    """Pretrained vs fine-tuned: generated summary, change maps, transitions, per-layer figures (drawn by
    ``figures``, default: here, now)."""
    from headstats.assignment.changes import comparison_markdown
    from headstats.plots import compare_plots

    figures = figures or FigureRenderer(root, formats=formats, workers=1)

    report.heading("Pretrained vs fine-tuned")
    finetuned = finetuned_models_table(manifest)
    if len(finetuned):
        report.table(finetuned, "Models fine-tuned by headstats: recipe and metrics on held-out rows.", fold=False)
    seeds = has_seeds(tables)
    if seeds:
        seeds_section(report, root, tables, formats=formats, figures=figures)
    report.heading("Detail: per-input paired tests of each fine-tuned model" if seeds else "Summary of the changes",
                   level=3)
    if seeds:
        report.text("Each fine-tuned model (each seed) against the base, tested input by input. Two deterministic "
                    "models differ on almost every input, so with a few hundred paired inputs nearly every head "
                    "changes 'significantly' here; whether a change goes beyond what any fine-tuning run "
                    "changes is answered above, with seeds as replicates.")
    add_subsections_as_text(report, comparison_markdown(tables))
    paired = tables["paired_tests"]
    # figures for one seed of each replicate group (the others' numbers are in the tables)
    later_seeds: set[str] = set()
    if seeds and "seed_per_seed" in tables:
        for _, members in tables["seed_per_seed"].groupby("group", sort=False)["model_after"]:
            later_seeds |= set(list(dict.fromkeys(members))[1:])
    for (model_after, dataset), part in paired.groupby(["model_after", "dataset"], sort=False):
        if model_after in later_seeds:
            continue
        tag = figure_tag(model_after, dataset)
        before = part["model_before"].iloc[0]
        report.heading(f"{model_after} vs {before} on {dataset}", level=3)
        for role in dict.fromkeys(part["role"]):
            if role in ("local", "delimiter_sep", "delimiter_cls", "syntactic", "block"):
                report.figure(figures.add(f"change_{figure_tag(model_after, dataset, role)}",
                                          compare_plots.change_map, part, role=role),
                              f"The tested estimate of the change of the {role} score per head (after - before; "
                              "Hodges-Lehmann for the Wilcoxon test, the mean difference for the t-test); stars mark "
                              "heads whose change is significant (p_corr <= alpha). Look for layers where the colour "
                              "is strongest.",
                              alt=f"change map of {role}")
        if "heads_per_layer" in tables:
            hpl = tables["heads_per_layer"]
            hpl = hpl[hpl["dataset"] == dataset]
            hpl = hpl[hpl["model"].isin([before, model_after])]
            report.figure(figures.add(f"heads_per_layer_before_after_{tag}",
                                      compare_plots.heads_per_layer_before_after, hpl, dataset=dataset,
                                      model_after=model_after),
                          "Heads per role per layer before and after fine-tuning (the paper's figure); look for "
                          "the layers where the lines part.", alt="heads per layer before and after")
        if "similarity" in tables:
            report.figure(figures.add(f"similarity_{tag}", compare_plots.similarity_map, tables["similarity"],
                                      dataset=dataset, model_b=model_after),
                          "Mean cosine similarity of the two models' attention maps per head (Kovaleva et al. "
                          "2019); low values are heads whose attention changed most.", alt="attention similarity")
        if "special_mass_per_layer" in tables:
            report.figure(figures.add(f"special_mass_{tag}", compare_plots.special_mass_plot,
                                      tables["special_mass_per_layer"], dataset=dataset,
                                      models=[before, model_after]),
                          "Attention mass on [CLS] and [SEP] per layer before and after; the paper finds "
                          "attention to [SEP] falls after fine-tuning.", alt="attention to special tokens")
        if "transitions" in tables:
            t = tables["transitions"]
            t = t[(t["model_after"] == model_after) & (t["dataset"] == dataset)
                  & ((t["before"] > 0) | (t["after"] > 0))]
            report.table(t, "Role transitions per layer: heads gained, lost and kept (layer-role pairs with no head "
                         "before or after left out).", max_rows=200, csv="compare_transitions.csv")
        sig = part[part["reject"].astype(bool)].sort_values("p_corr")
        report.table(sig, "Heads whose score changed significantly, smallest corrected p-value first.",
                     max_rows=100, csv="compare_paired_tests.csv")
