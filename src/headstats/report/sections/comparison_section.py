"""Pretrained against fine-tuned: the models headstats fine-tuned, the generated summary of the changes, and per
(fine-tuned model, data set) the change maps, heads per layer before and after, similarity, [SEP] mass and role
transitions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from headstats.assignment.changes import change_direction

from headstats.report.blocks import Report, figure_tag
from headstats.report.figures import FigureRenderer
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


def _fmt_layers(frame: pd.DataFrame, col: str, k: int = 3) -> str:
    top = frame.sort_values([col, "layer"], ascending=[False, True]).head(k)
    return ", ".join(f"{int(r.layer)} ({getattr(r, col):.2f})" for r in top.itertuples())


def comparison_summaries(tables: Mapping[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """A short generated summary of a comparison: which heads changed, how many significantly, and where.

    Takes the dict of :func:`headstats.assignment.changes.run_comparison`; returns one ``(title, paragraph)``
    per (fine-tuned model, base, data set), the paragraph a Markdown list.
    """
    paired = tables["paired_tests"]
    summary = tables["layer_summary"]
    summaries: list[tuple[str, str]] = []
    for (mb, ma, ds), part in paired.groupby(["model_before", "model_after", "dataset"], sort=False):
        lines: list[str] = []
        tested = int(np.isfinite(part["p_unc"]).sum())
        sig = part[part["reject"]]
        test = part["test"].iloc[0]
        direction = change_direction(sig)
        corr = part["correction"].iloc[0]
        fam = ", ".join(sorted(part["family"].unique()))
        lines.append(
            f"- {len(sig)} of {tested} head x role tests show a significant change ({test}, "
            f"{part['alternative'].iloc[0]}, {corr} over {fam}, alpha {part['alpha'].iloc[0]:g}): "
            f"{int((direction == 'up').sum())} up, {int((direction == 'down').sum())} down "
            f"({'mean difference' if test == 't' else 'Hodges-Lehmann pseudo-median'} and its interval); "
            f"{sig[['layer', 'head']].drop_duplicates().shape[0]} of "
            f"{part[['layer', 'head']].drop_duplicates().shape[0]} heads changed in at least one role."
        )
        s = summary[(summary["model_after"] == ma) & (summary["dataset"] == ds)]
        if len(s):
            lines.append(f"- Layers with the largest share of significant changes: {_fmt_layers(s, 'share_significant')}.")
            lines.append(f"- Layers with the largest mean |estimated change|: {_fmt_layers(s, 'mean_abs_estimate')}.")
            if s["cosine_mean"].notna().any():
                low = s.sort_values("cosine_mean").head(3)
                lines.append("- Least similar attention maps (mean cosine per layer): "
                             + ", ".join(f"{int(r.layer)} ({r.cosine_mean:.2f})" for r in low.itertuples()) + ".")
        by_role = (sig.assign(up=(direction == "up").to_numpy()).groupby("role")["up"].agg(["size", "sum"]))
        if len(by_role):
            lines.append("- Significant changes by role: " + "; ".join(
                f"{role} {int(r['size'])} ({int(r['sum'])} up)" for role, r in by_role.iterrows()) + ".")
        if "transitions" in tables:
            t = tables["transitions"]
            t = t[(t["model_after"] == ma) & (t["dataset"] == ds)]
            if len(t):
                agg = t.groupby("role", sort=False)[["before", "after", "gained", "lost"]].sum()
                lines.append("- Role assignment before -> after (gained / lost): " + "; ".join(
                    f"{role} {r.before} -> {r.after} (+{r.gained} / -{r.lost})" for role, r in agg.iterrows()) + ".")
        if "special_mass_per_layer" in tables:
            m = tables["special_mass_per_layer"]
            m = m[(m["dataset"] == ds) & (m["target"] == "sep")]
            before, after = m[m["model"] == mb], m[m["model"] == ma]
            if len(before) and len(after):
                lines.append(
                    f"- Mean attention mass on [SEP]: {before['mass'].mean():.3f} before, {after['mass'].mean():.3f} "
                    "after (mean over layers)."
                )
        summaries.append((f"{ma} vs {mb} on {ds}", "\n".join(lines).strip()))
    return summaries


def comparison_section(report: Report, root: Path, tables: dict, manifest: dict, *,
                       formats: Sequence[str] | None = None, figures: FigureRenderer | None = None) -> None:
    """Pretrained vs fine-tuned: generated summary, change maps, transitions, per-layer figures (drawn by
    ``figures``, default: here, now)."""
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
    for title, paragraph in comparison_summaries(tables):
        report.text(f"**{title}**\n\n{paragraph}")
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
