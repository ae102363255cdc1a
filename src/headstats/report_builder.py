"""The study report: a methods paragraph generated from the resolved protocol, role-assignment figures and
tables per model and data set, inputs used and skipped, and the statistics that qualify the roles.

Report layer: takes tables (never computes statistics) and figures from :mod:`headstats.plots`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from headstats.analysis import Analysis
from headstats.assign import role_columns
from headstats.plots import roles_plots
from headstats.report import Report, save_figure, write_report

TEST_NAMES = {
    "t": "one-sample t-test (ddof = 1)",
    "wilcoxon": "Wilcoxon signed-rank test on score - tau",
    "sign": "sign test (median above tau)",
    "bootstrap": "bootstrap test of the mean",
    "permutation": "sign-flip permutation test",
}
CORRECTION_NAMES = {
    "holm": "Holm's step-down correction (family-wise error rate)",
    "bonferroni": "Bonferroni correction (family-wise error rate)",
    "fdr_bh": "Benjamini-Hochberg correction (false discovery rate)",
    "fdr_by": "Benjamini-Yekutieli correction (false discovery rate under dependence)",
    "none": "no multiple-comparison correction (as in the paper's code)",
}


def methods_paragraph(protocol, manifest: dict) -> str:
    """A methods paragraph, in words, from the resolved protocol and the manifest."""
    sc, st = protocol.scoring, protocol.statistics
    models = ", ".join(
        f"{name} ({p.get('architecture', '?')}, {p.get('n_layers')} layers x {p.get('n_heads')} heads)"
        for name, p in manifest["models"].items()
    )
    datasets = []
    for name, info in manifest["datasets"].items():
        parses = info.get("parses", "none")
        parse_text = {"gold": "gold dependency parses", "spacy": f"parsed with spaCy {info.get('parser')}",
                      "gold+spacy": "gold parses, the rest parsed with spaCy", "none": "not parsed"}[parses]
        datasets.append(f"{name} ({info['n_read']} inputs, {info.get('pairs', 0)} of them pairs; {parse_text})")
    family = " x ".join(st.family) if st.family else "all hypotheses of the study"
    special = "counted" if sc.count_special_queries else "not counted"
    return (
        f"We scored every attention head of {models} on {'; '.join(datasets)}. "
        f"For each input, layer and head we computed the sieve bias score of Pande et al. (2021) for the roles "
        f"{', '.join(f'`{r}`' for r in sc.roles)}: the mean attention inside the role's sieve over the mean "
        f"attention over all keys, averaged over queries (1 = uniform attention). The local window was "
        f"w = {sc.window}; [CLS]/[SEP] queries were {special}; syntactic arcs ran {sc.arc_direction.replace('_', ' ')} "
        f"over the relations {', '.join(sc.relations)}, words aligned to word pieces by character offsets. "
        f"Inputs longer than {sc.max_length} pieces were {'skipped' if sc.too_long == 'skip' else 'truncated'}. "
        f"For every model, data set, role, layer and head we tested H0: mean score <= tau = {st.tau:g} against "
        f"H1: mean score > tau with a one-sided {TEST_NAMES.get(st.test, st.test)}, and controlled multiple "
        f"comparisons with {CORRECTION_NAMES.get(st.correction, st.correction)} over families of "
        f"{family}. A head was assigned a role when its corrected p-value was below alpha = {st.alpha:g}. "
        f"Each result reports the mean score, a one-sided {st.confidence:.0%} lower confidence bound, the "
        f"effect size, the number of inputs that took part (N), the power at the observed effect and the N "
        f"needed for {st.power_target:.0%} power. Seed {protocol.seed}; protocol sha256 "
        f"`{manifest['protocol_sha256'][:16]}`."
    )


def inputs_section(report: Report, manifest: dict, analysis: Analysis) -> None:
    report.heading("Inputs used and skipped")
    rows = []
    for key, counts in manifest["inputs"].items():
        model, dataset = key.split("/", 1)
        skipped = ", ".join(f"{reason}: {n}" for reason, n in counts["skipped"].items() if n) or "none"
        notes = ", ".join(f"{reason}: {n}" for reason, n in counts["notes"].items() if n) or "none"
        dropped = "; ".join(f"{r} ({why})" for r, why in counts["roles_not_applicable"].items()) or "none"
        rows.append(dict(model=model, dataset=dataset, read=counts["n_records"], scored=counts["n_scored"],
                         skipped=skipped, notes=notes, roles_not_applicable=dropped))
    report.table(pd.DataFrame(rows), "inputs read, scored and skipped, with reasons")
    part = analysis.tables.get("participation")
    if part is not None:
        report.table(part, "inputs taking part per role (an input without an arc of a relation takes no part in it)")


def role_sections(report: Report, root: Path, analysis: Analysis, protocol) -> None:
    tests, roles = analysis.tests, analysis.roles
    per_layer = analysis.tables["heads_per_layer"]
    coloc = analysis.tables["colocation"]
    counts = (
        per_layer.groupby(["model", "dataset", "role"], sort=False)["n_heads"].sum().unstack("role").reset_index()
    )
    report.heading("Heads assigned per role")
    report.table(counts, "number of heads assigned each role (of all heads of the model)")
    for (model, dataset), part in roles.groupby(["model", "dataset"], sort=False):
        tag = f"{model}__{dataset}".replace("/", "_").replace(":", "_")
        report.heading(f"{model} on {dataset}", level=3)
        fig = roles_plots.role_grid(part, title=f"roles per head: {model} on {dataset}")
        report.figure(save_figure(fig, root, f"roles_grid_{tag}"), "role-assignment grid (layer x head)")
        sub_tests = tests[(tests["model"] == model) & (tests["dataset"] == dataset)]
        fig = roles_plots.mean_score_maps(sub_tests, tau=protocol.statistics.tau, title=f"{model} on {dataset}")
        report.figure(save_figure(fig, root, f"mean_scores_{tag}"), "mean score per head and role; assigned heads outlined")
        pl = per_layer[(per_layer["model"] == model) & (per_layer["dataset"] == dataset)]
        fig = roles_plots.heads_per_layer_plot(pl, title=f"heads per role per layer: {model} on {dataset}")
        report.figure(save_figure(fig, root, f"heads_per_layer_{tag}"), "heads per role per layer")
        wide = pl.pivot(index="layer", columns="role", values="n_heads").reset_index()
        report.table(wide[["layer", *[c for c in role_columns(part) if c in wide.columns]]], "heads per role per layer")
        co = coloc[(coloc["model"] == model) & (coloc["dataset"] == dataset)]
        fig = roles_plots.colocation_plot(co, title=f"co-location: {model} on {dataset}")
        report.figure(save_figure(fig, root, f"colocation_{tag}"), "heads per exact combination of roles")
        pairs = co[co["kind"] == "pair"].sort_values("n_heads", ascending=False)
        report.table(pairs[["combination", "n_heads", "share"]], "co-location: heads holding both roles of a pair", max_rows=15)


def build_report(root: Path, protocol, analysis: Analysis, manifest: dict, *, comparison: dict | None = None,
                 analyses: dict[str, dict[str, pd.DataFrame]] | None = None) -> Report:
    """Build the report of a study and write ``report.md`` and ``report.html`` into ``root``.

    ``analyses``: analysis name -> its tables (:mod:`headstats.analyses`); each adds its own section.
    """
    report = Report(title=f"headstats report: {protocol.name}")
    if protocol.description:
        report.text(protocol.description)
    report.heading("Methods")
    report.text(methods_paragraph(protocol, manifest))
    inputs_section(report, manifest, analysis)
    role_sections(report, root, analysis, protocol)
    statistics_sections(report, root, analysis, protocol)
    report.heading("Strongest heads per role")
    report.table(analysis.tables["strongest_heads"], f"top {protocol.report.top_k} heads by mean score", max_rows=60)
    if comparison:
        comparison_section(report, root, comparison, manifest)
    files = analysis_sections(report, root, analyses or {})
    report.heading("Files and reproduction")
    report.text(
        "- `scores.parquet`: one row per input, layer, head and role (column `score`)\n"
        "- `tests.csv` / `tests.parquet`: one row per model, data set, role, layer and head\n"
        "- `roles.csv`: one row per head, a boolean column per role\n"
        + "".join(f"- `{name}.csv`: {what}\n" for name, what in files.items())
        + "- `manifest.json`: versions, model weight hashes, data hashes, seed, counts\n"
        "- `protocol.resolved.yaml`: rerun with `headstats run protocol.resolved.yaml`"
    )
    write_report(report, root, html_too=protocol.report.html)
    return report


def analysis_sections(report: Report, root: Path, analyses: dict[str, dict[str, pd.DataFrame]]) -> dict[str, str]:
    """The section of each analysis of the protocol (its registered ``report`` hook); returns table -> what."""
    from headstats.analyses import get_analysis

    files = {}
    for name, tables in analyses.items():
        spec = get_analysis(name)
        if spec.report is not None:
            spec.report(report, root, tables)
        files.update({table: spec.description for table in tables})
    return files


def statistics_sections(report: Report, root: Path, analysis: Analysis, protocol) -> None:
    """p-values, power and sensitivity (figures from :mod:`headstats.plots.stats_plots`)."""
    from headstats.plots import stats_plots

    tests = analysis.tests
    st = protocol.statistics
    report.heading("p-values, power and sensitivity")
    fig = stats_plots.plot_pvalue_histogram(tests, alpha=st.alpha)
    report.figure(save_figure(fig, root, "pvalue_histogram"), "uncorrected p-values of all hypotheses")
    summary = analysis.tables.get("power_summary")
    if summary is not None:
        report.table(summary, f"per role: heads assigned, not assigned, and underpowered (power < {st.power_target:.0%} "
                     "at the observed effect); max_n_for_power = inputs a protocol would need", max_rows=60)
    weak = analysis.tables.get("underpowered")
    if weak is not None and len(weak):
        report.text(
            f"{len(weak)} head-role pairs have a mean above tau but were not assigned, with power below "
            f"{st.power_target:.0%}: their non-assignment may only mean too few inputs. `n_for_power` is the "
            "number of inputs at which each would have that power at its observed effect (NaN: more than 10 million)."
        )
        cols = ["model", "dataset", "role", "layer", "head", "n", "mean", "effect_size", "power", "n_for_power"]
        report.table(weak[cols], "heads above tau but not assigned: power and inputs needed", max_rows=20)
    if "tau_sensitivity" in analysis.tables:
        sens = analysis.tables["tau_sensitivity"]
        for (model, dataset), _ in sens.groupby(["model", "dataset"], sort=False):
            fig = stats_plots.plot_tau_sensitivity(sens, model=model, dataset=dataset, alpha=st.alpha, tau_used=st.tau)
            tag = f"{model}__{dataset}".replace("/", "_")
            report.figure(save_figure(fig, root, f"tau_sensitivity_{tag}"),
                          f"heads assigned per role as tau varies (alpha = {st.alpha:g}): {model} on {dataset}")
        rob = analysis.tables["robustness"]
        unstable = rob[~rob["stable"]] if "stable" in rob else rob
        report.text(
            f"Robustness: {len(unstable)} of {len(rob)} head-role pairs change assignment between tests or "
            "corrections (`robustness.csv`)."
        )
        report.table(unstable, "heads whose assignment depends on the test or correction", max_rows=20)


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


def comparison_section(report: Report, root: Path, tables: dict, manifest: dict) -> None:
    """Pretrained vs fine-tuned: generated summary, change maps, transitions, per-layer figures."""
    from headstats.compare import comparison_markdown
    from headstats.plots import compare_plots

    report.heading("Pretrained vs fine-tuned")
    finetuned = finetuned_models_table(manifest)
    if len(finetuned):
        report.table(finetuned, "models fine-tuned by headstats: recipe and metrics on held-out rows")
    report.heading("Summary", level=3)
    for chunk in comparison_markdown(tables).split("### ")[1:]:
        title, _, body = chunk.partition("\n")
        report.text(f"**{title.strip()}**\n\n{body.strip()}")
    paired = tables["paired_tests"]
    for (model_after, dataset), part in paired.groupby(["model_after", "dataset"], sort=False):
        tag = f"{model_after}__{dataset}".replace("/", "_")
        report.heading(f"{model_after} vs {part['model_before'].iloc[0]} on {dataset}", level=3)
        for role in dict.fromkeys(part["role"]):
            if role in ("local", "delimiter_sep", "delimiter_cls", "syntactic", "block"):
                fig = compare_plots.change_map(part, role=role)
                report.figure(save_figure(fig, root, f"change_{tag}_{role}"),
                              f"median change of the {role} score per head (after - before); significant heads marked")
        if "heads_per_layer" in tables:
            hpl = tables["heads_per_layer"]
            hpl = hpl[hpl["dataset"] == dataset]
            hpl = hpl[hpl["model"].isin([part["model_before"].iloc[0], model_after])]
            fig = compare_plots.heads_per_layer_before_after(hpl, dataset=dataset, model_after=model_after)
            report.figure(save_figure(fig, root, f"heads_per_layer_before_after_{tag}"),
                          "heads per role per layer, before and after fine-tuning")
        if "similarity" in tables:
            fig = compare_plots.similarity_map(tables["similarity"], dataset=dataset, model_b=model_after)
            report.figure(save_figure(fig, root, f"similarity_{tag}"),
                          "mean cosine similarity of the two models' attention maps per head (Kovaleva et al. 2019)")
        if "special_mass_per_layer" in tables:
            fig = compare_plots.special_mass_plot(tables["special_mass_per_layer"], dataset=dataset,
                                                  models=[part["model_before"].iloc[0], model_after])
            report.figure(save_figure(fig, root, f"special_mass_{tag}"), "attention mass on [CLS] and [SEP] per layer")
        if "transitions" in tables:
            t = tables["transitions"]
            t = t[(t["model_after"] == model_after) & (t["dataset"] == dataset) & ((t["before"] > 0) | (t["after"] > 0))]
            report.table(t, "role transitions per layer (gained, lost, kept; layer-role pairs with no head before "
                         "or after left out)", max_rows=60)
        sig = part[part["reject"].astype(bool)].sort_values("p_corr")
        report.table(sig, "heads whose score changed significantly", max_rows=25)
