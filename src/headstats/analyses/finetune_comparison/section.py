"""The comparison's report sections: the answer over seeds right after the claims (what fine-tuning changed beyond
seed noise: :func:`seeds_answer_section`, the spec's ``answer``), and "Pretrained vs fine-tuned"
(:func:`comparison_section`): the models headstats fine-tuned, seeds as replicates in detail (dev metrics over seeds,
maps of the mean change, [SEP] mass and role transitions per seed), the generated summary of the changes, and per
(fine-tuned model, data set) the change maps, heads per layer before and after, similarity, [SEP] mass and role
transitions.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from headstats.analyses.finetune_comparison import figures as compare_plots
from headstats.analyses.finetune_comparison.tables import (
    PAIRED_TESTS, TRANSITIONS, HEADS_PER_LAYER, SIMILARITY, SPECIAL_MASS_PER_LAYER, LAYER_SUMMARY,
    SEED_CHANGES, SEED_PER_SEED, SEED_METRICS, SEED_DISTANCE, SEED_SPECIAL_MASS, SEED_TRANSITIONS)
from headstats.analyses.finetune_comparison.finish.changes import change_direction
from headstats.report.blocks import Report, figure_tag
from headstats.report.figures import draw_figure
from headstats.report.sections import claim_family
from headstats.tables.study_tables import CLAIMS, MODELS


def has_seeds(comparison: dict | None) -> bool:
    """Whether a study's comparison has replicate groups (seeds as replicates)."""
    return bool(comparison) and SEED_CHANGES in comparison and len(comparison[SEED_CHANGES]) > 0


def seeds_answer_section(report: Report, root: Path, tables: Mapping[str, pd.DataFrame]) -> None:
    """Right after the claims table when seeds are replicates (else nothing): per replicate group and data set,
    the changes beyond seed noise and the margin, the heads shown unchanged, and the fine-tuning claims with their
    verdicts from ``tables["claims"]`` (the registry's, :mod:`.finish.seed_evidence`)."""
    if not has_seeds(tables):
        return
    claims = tables.get(CLAIMS)
    report.heading("The answer: what fine-tuning changed beyond seed noise")
    report.text("Seeds are the replicates: each seed's change of a head is its paired change over the same "
                "inputs, averaged; the mean over seeds gets a t interval from the between-seed variation and a "
                "per-cell test over seeds (the empirical-Bayes moderated t unless compare: seed_test says "
                "otherwise), corrected over the family; the claims over seeds use the exact sign-flip test (see "
                "docs/statistics.md, 'Seeds as replicates'). Figures, per-seed tables and the per-input detail are "
                "under 'Pretrained vs fine-tuned'.")
    for title, paragraph in seed_answers(tables, claims=claims):
        report.text(f"**{title}**\n\n{paragraph}")


def _head_list(frame: pd.DataFrame, k: int = 12) -> str:
    """``L-H role (+0.12 [0.05, 0.19])`` for the first k rows (sorted by the caller)."""
    items = [f"{int(r.layer)}-{int(r.head)} {r.role} ({r.mean_change:+.3g} [{r.ci_low:+.3g}, {r.ci_high:+.3g}])"
             for r in frame.head(k).itertuples()]
    more = f", and {len(frame) - k} more" if len(frame) > k else ""
    return ", ".join(items) + more if items else "none"


def _per_layer_counts(frame: pd.DataFrame, n_layers: int) -> str:
    heads = frame[["layer", "head"]].drop_duplicates()
    counts = heads.groupby("layer").size().reindex(range(n_layers), fill_value=0)
    return ", ".join(f"{layer}: {int(n)}" for layer, n in counts.items())


def _test_words(part: pd.DataFrame) -> str:
    """``moderated t (prior df 4.2)`` or ``t-test``: the per-cell test of a seed_changes block, in words."""
    if "seed_test" in part and part["seed_test"].iloc[0] == "moderated_t":
        return f"empirical-Bayes moderated t, prior df {float(part['df_prior'].iloc[0]):.3g},"
    return "t-test"


def seed_answers(tables: Mapping[str, pd.DataFrame], *, top_k: int = 12,
                 claims: pd.DataFrame | None = None) -> list[tuple[str, str]]:
    """The answer per replicate group and data set, first: which heads changed beyond seed noise (and beyond
    the margin), which are shown unchanged, and whether each of the paper's claims holds, with its test.

    Takes the tables of :func:`.replicate_comparison` (concatenated over groups)
    and the run's claims (:func:`headstats.stats.claims.evaluate_claims`, whose verdicts over seeds it repeats);
    returns one ``(title, paragraph)`` per group and data set, the paragraph a Markdown list.
    """
    from headstats.stats.seeds import describe_floor

    changes = tables[SEED_CHANGES]
    answers: list[tuple[str, str]] = []
    for (group, ds), part in changes.groupby(["group", "dataset"], sort=False):
        lines: list[str] = []
        k = int(part["n_seeds"].max())
        alpha = float(part["alpha"].iloc[0])
        corr = part["correction"].iloc[0]
        n_cells = int(np.isfinite(part["p_unc"]).sum())
        n_layers = int(part["layer"].max()) + 1
        n_heads_all = part[["layer", "head"]].drop_duplicates().shape[0]
        metrics = tables.get(SEED_METRICS)
        if metrics is not None and len(metrics):
            m = metrics[(metrics["group"] == group) & (metrics["metric"] == "accuracy")]
            seeds_only = m[~m["model"].astype(str).str.startswith("(")]
            if len(seeds_only):
                v = seeds_only["value"].to_numpy(float)
                lines.append(f"- Dev accuracy over {len(v)} seeds: mean {v.mean():.3f}, sd "
                             f"{(v.std(ddof=1) if len(v) > 1 else float('nan')):.3f}, range {v.min():.3f} to "
                             f"{v.max():.3f} ({', '.join(f'{x:.3f}' for x in v)}).")
        moved = part[part["reject"]].sort_values("p_corr")
        lines.append(
            f"- **Beyond seed noise**: {len(moved)} of {n_cells} head x role changes, in "
            f"{moved[['layer', 'head']].drop_duplicates().shape[0]} of {n_heads_all} heads ({_test_words(part)} "
            f"over {k} seeds of each seed's mean paired change, {corr} over the family, alpha {alpha:g}); heads per layer: "
            f"{_per_layer_counts(moved, n_layers)}.")
        has_margin = part["min_change"].notna().any()
        if has_margin:
            exceeds = part[part["exceeds"]].sort_values("p_exceeds_corr")
            unchanged = part[part["unchanged"]]
            tested_heads = part[np.isfinite(part["p_equivalent"])].groupby(["layer", "head"])["unchanged"].all()
            left_alone = tested_heads[tested_heads].index.tolist()
            lines.append(
                f"- **Beyond seed noise and the margin** (|change| > min_change, one-sided tests over seeds, "
                f"{corr}): {len(exceeds)} changes in {exceeds[['layer', 'head']].drop_duplicates().shape[0]} heads: "
                f"{_head_list(exceeds, top_k)}.")
            lines.append(
                f"- **Shown unchanged** (TOST over seeds: the change stays within the margin, {corr}): "
                f"{len(unchanged)} of {n_cells} head x role changes; heads left alone in every role: "
                f"{len(left_alone)} of {n_heads_all}"
                + (f" ({', '.join(f'{int(a)}-{int(b)}' for a, b in left_alone[:top_k])}"
                   f"{', ...' if len(left_alone) > top_k else ''})" if left_alone else "") + ".")
        else:
            lines.append(f"- Beyond seed noise, largest first: {_head_list(moved, top_k)}. No margin was given "
                         "(compare: min_change), so no head can be shown unchanged.")
        ratio = part["noise_ratio"].replace([np.inf, -np.inf], np.nan).median()
        lines.append(f"- Seed-to-seed against seed-to-base: the median over head x role of (mean |change between "
                     f"two seeds|) / (mean |change from the base|) is {ratio:.2f}.")
        dist = tables.get(SEED_DISTANCE)
        if dist is not None and len(dist):
            d = dist[(dist["group"] == group) & (dist["dataset"] == ds)]
            if len(d):
                lines.append(f"  Attention maps: median 1 - cosine between seeds {d['dist_seed_seed'].median():.3f}, "
                             f"between a seed and the base {d['dist_seed_base'].median():.3f}.")
        fam_m = int(part["family"].value_counts().max())
        lines.append("- What the seeds can show: " + describe_floor(k, alpha=alpha, m=fam_m, correction=corr,
                                                                     alternative=part["alternative"].iloc[0]) + ".")
        if "seeds_needed_t" in part:
            need_m = part["seeds_needed_moderated"].iloc[0]
            lines.append(f"- Seeds needed at {corr}'s level over {fam_m} tests: {int(part['seeds_needed'].iloc[0])} "
                         f"for the exact sign-flip test to reach it at all; {int(part['seeds_needed_t'].iloc[0])} for "
                         "80 % power of the t-test against a mean change of one run-to-run sd"
                         + (f", {int(need_m)} for the moderated t" if np.isfinite(need_m) else "") + ".")
        if claims is not None and len(claims):
            c = claims[(claims["model"].astype(str) == str(group)) & (claims["dataset"].astype(str) == str(ds))
                       & (claims["unit"] == "seeds")]
            for r in c.itertuples():
                why = f" ({r.reason})" if r.reason else ""
                lines.append(f"- Claim \"{r.sentence}\": **{r.verdict}**{why}; {r.measure} {r.estimate:+.3g} "
                             f"[{r.ci_low:+.3g}, {r.ci_high:+.3g}], p = {r.p:.3g} after {r.correction} over "
                             f"{claim_family(r._asdict())} ({r.test}). {r.detail}.")
        answers.append((f"{group} on {ds}", "\n".join(lines).strip()))
    return answers


def seeds_section(report: Report, root: Path, tables: Mapping[str, pd.DataFrame]) -> None:
    """Seeds as replicates, in detail (the answer itself leads the report: :func:`seeds_answer_section`): the
    dev metrics over seeds, maps of the mean change over seeds, [SEP] mass and role transitions per seed."""
    report.heading("Seeds as replicates: metrics, maps and per-seed tables", level=3)
    if SEED_METRICS in tables and len(tables[SEED_METRICS]):
        report.table(tables[SEED_METRICS], "Dev metrics of every seed and their spread over seeds.",
                     max_rows=60, csv=SEED_METRICS.files[0])
    changes = tables[SEED_CHANGES]
    for (group, dataset), part in changes.groupby(["group", "dataset"], sort=False):
        marked = part.assign(estimate=part["mean_change"], model_after=f"{group} (mean of seeds)", model_before="base",
                             reject=part["exceeds"] if part["min_change"].notna().any() else part["reject"])
        for role in dict.fromkeys(part["role"]):
            if role in ("local", "delimiter_sep", "syntactic"):
                report.figure(draw_figure(root, f"seed_change_{figure_tag(group, dataset, role)}",
                                          compare_plots.change_map, marked, role=role, dataset=dataset),
                              f"{group} on {dataset}: mean over seeds of the {role} score change per head; stars "
                              "mark heads whose change is beyond seed noise and the margin.",
                              alt=f"mean change over seeds of {role}")
    if SEED_SPECIAL_MASS in tables and len(tables[SEED_SPECIAL_MASS]):
        report.table(tables[SEED_SPECIAL_MASS], "Change of attention mass on [SEP], other tokens and [CLS] per "
                     "layer over seeds (layer -1: mean over layers).", max_rows=120,
                     csv=SEED_SPECIAL_MASS.files[0])
    if SEED_TRANSITIONS in tables and len(tables[SEED_TRANSITIONS]):
        report.table(tables[SEED_TRANSITIONS], "Role transitions per seed: heads before, mean after, gained, lost "
                     "and net over seeds with the t interval of net.", max_rows=120,
                     csv=SEED_TRANSITIONS.files[0])
    shown = changes[changes["exceeds"] | changes["unchanged"]].sort_values(["unchanged", "p_corr"])
    report.table(shown, "Head x role changes beyond seed noise and the margin, then those shown unchanged.",
                 max_rows=100, csv=SEED_CHANGES.files[0])


def finetuned_models_table(models: pd.DataFrame | None) -> pd.DataFrame:
    """Recipe and dev metrics of each model that headstats fine-tuned, from the study's ``models`` table (each model's
    ``provenance``)."""
    rows = []
    pairs = [] if models is None else zip(models["model"], models["provenance"])
    for name, prov in pairs:
        prov = prov or {}
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

    Takes the dict of :func:`.finish.changes.run_comparison`; returns one ``(title, paragraph)``
    per (fine-tuned model, base, data set), the paragraph a Markdown list.
    """
    paired = tables[PAIRED_TESTS]
    summary = tables[LAYER_SUMMARY]
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
        if TRANSITIONS in tables:
            t = tables[TRANSITIONS]
            t = t[(t["model_after"] == ma) & (t["dataset"] == ds)]
            if len(t):
                agg = t.groupby("role", sort=False)[["before", "after", "gained", "lost"]].sum()
                lines.append("- Role assignment before -> after (gained / lost): " + "; ".join(
                    f"{role} {r.before} -> {r.after} (+{r.gained} / -{r.lost})" for role, r in agg.iterrows()) + ".")
        if SPECIAL_MASS_PER_LAYER in tables:
            m = tables[SPECIAL_MASS_PER_LAYER]
            m = m[(m["dataset"] == ds) & (m["target"] == "sep")]
            before, after = m[m["model"] == mb], m[m["model"] == ma]
            if len(before) and len(after):
                lines.append(
                    f"- Mean attention mass on [SEP]: {before['mass'].mean():.3f} before, {after['mass'].mean():.3f} "
                    "after (mean over layers)."
                )
        summaries.append((f"{ma} vs {mb} on {ds}", "\n".join(lines).strip()))
    return summaries


def comparison_section(report: Report, root: Path, tables: Mapping[str, pd.DataFrame]) -> None:
    """Pretrained vs fine-tuned: the models fine-tuned here, seeds in detail, generated summary, change maps,
    transitions, per-layer figures (the section of the spec)."""
    if PAIRED_TESTS not in tables:
        return
    report.heading("Pretrained vs fine-tuned")
    finetuned = finetuned_models_table(tables.get(MODELS))
    if len(finetuned):
        report.table(finetuned, "Models fine-tuned by headstats: recipe and metrics on held-out rows.", fold=False)
    seeds = has_seeds(tables)
    if seeds:
        seeds_section(report, root, tables)
    report.heading("Detail: per-input paired tests of each fine-tuned model" if seeds else "Summary of the changes",
                   level=3)
    if seeds:
        report.text("Each fine-tuned model (each seed) against the base, tested input by input. Two deterministic "
                    "models differ on almost every input, so with a few hundred paired inputs nearly every head "
                    "changes 'significantly' here; whether a change goes beyond what any fine-tuning run "
                    "changes is answered above, with seeds as replicates.")
    for title, paragraph in comparison_summaries(tables):
        report.text(f"**{title}**\n\n{paragraph}")
    paired = tables[PAIRED_TESTS]
    # figures for one seed of each replicate group (the others' numbers are in the tables)
    later_seeds: set[str] = set()
    if seeds and SEED_PER_SEED in tables:
        for _, members in tables[SEED_PER_SEED].groupby("group", sort=False)["model_after"]:
            later_seeds |= set(list(dict.fromkeys(members))[1:])
    for (model_after, dataset), part in paired.groupby(["model_after", "dataset"], sort=False):
        if model_after in later_seeds:
            continue
        tag = figure_tag(model_after, dataset)
        before = part["model_before"].iloc[0]
        report.heading(f"{model_after} vs {before} on {dataset}", level=3)
        for role in dict.fromkeys(part["role"]):
            if role in ("local", "delimiter_sep", "delimiter_cls", "syntactic", "block"):
                report.figure(draw_figure(root, f"change_{figure_tag(model_after, dataset, role)}",
                                          compare_plots.change_map, part, role=role),
                              f"The tested estimate of the change of the {role} score per head (after - before; "
                              "Hodges-Lehmann for the Wilcoxon test, the mean difference for the t-test); stars mark "
                              "heads whose change is significant (p_corr <= alpha). Look for layers where the colour "
                              "is strongest.",
                              alt=f"change map of {role}")
        if HEADS_PER_LAYER in tables:
            hpl = tables[HEADS_PER_LAYER]
            hpl = hpl[hpl["dataset"] == dataset]
            hpl = hpl[hpl["model"].isin([before, model_after])]
            report.figure(draw_figure(root, f"heads_per_layer_before_after_{tag}",
                                      compare_plots.heads_per_layer_before_after, hpl, dataset=dataset,
                                      model_after=model_after),
                          "Heads per role per layer before and after fine-tuning (the paper's figure); look for "
                          "the layers where the lines part.", alt="heads per layer before and after")
        if SIMILARITY in tables:
            report.figure(draw_figure(root, f"similarity_{tag}", compare_plots.similarity_map, tables[SIMILARITY],
                                      dataset=dataset, model_b=model_after),
                          "Mean cosine similarity of the two models' attention maps per head (Kovaleva et al. "
                          "2019); low values are heads whose attention changed most.", alt="attention similarity")
        if SPECIAL_MASS_PER_LAYER in tables:
            report.figure(draw_figure(root, f"special_mass_{tag}", compare_plots.special_mass_plot,
                                      tables[SPECIAL_MASS_PER_LAYER], dataset=dataset,
                                      models=[before, model_after]),
                          "Attention mass on [CLS] and [SEP] per layer before and after; the paper finds "
                          "attention to [SEP] falls after fine-tuning.", alt="attention to special tokens")
        if TRANSITIONS in tables:
            t = tables[TRANSITIONS]
            t = t[(t["model_after"] == model_after) & (t["dataset"] == dataset)
                  & ((t["before"] > 0) | (t["after"] > 0))]
            report.table(t, "Role transitions per layer: heads gained, lost and kept (layer-role pairs with no head "
                         "before or after left out).", max_rows=200, csv=TRANSITIONS.files[0])
        sig = part[part["reject"].astype(bool)].sort_values("p_corr")
        report.table(sig, "Heads whose score changed significantly, smallest corrected p-value first.",
                     max_rows=100, csv=PAIRED_TESTS.files[0])
