"""Seeds as replicates: the answer (what fine-tuning changed beyond seed noise), right after the claims, and its detail
(dev metrics over seeds, maps of the mean change, [SEP] mass and role transitions per seed) under the comparison.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from headstats.report.blocks import Report, figure_tag
from headstats.report.figures import FigureRenderer
from headstats.report.sections import claim_family


def has_seeds(comparison: dict | None) -> bool:
    """Whether a study's comparison has replicate groups (seeds as replicates)."""
    return bool(comparison) and "seed_changes" in comparison and len(comparison["seed_changes"]) > 0


def seeds_answer_section(report: Report, tables: dict, claims: pd.DataFrame | None = None) -> None:
    """Right after the claims table when seeds are replicates: per replicate group and data set, the changes
    beyond seed noise and the margin, the heads shown unchanged, and the fine-tuning claims with their verdicts
    from ``claims`` (the registry's, :mod:`headstats.assignment.seed_evidence`)."""
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

    Takes the tables of :func:`headstats.assignment.replicates.replicate_comparison` (concatenated over groups)
    and the run's claims (:func:`headstats.stats.claims.evaluate_claims`, whose verdicts over seeds it repeats);
    returns one ``(title, paragraph)`` per group and data set, the paragraph a Markdown list.
    """
    from headstats.stats.seeds import describe_floor

    changes = tables["seed_changes"]
    answers: list[tuple[str, str]] = []
    for (group, ds), part in changes.groupby(["group", "dataset"], sort=False):
        lines: list[str] = []
        k = int(part["n_seeds"].max())
        alpha = float(part["alpha"].iloc[0])
        corr = part["correction"].iloc[0]
        n_cells = int(np.isfinite(part["p_unc"]).sum())
        n_layers = int(part["layer"].max()) + 1
        n_heads_all = part[["layer", "head"]].drop_duplicates().shape[0]
        metrics = tables.get("seed_metrics")
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
        dist = tables.get("seed_distance")
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
