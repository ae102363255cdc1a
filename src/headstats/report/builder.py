"""The study report: first the claims, tested (the claims table of ``claims.csv``, claim by data set), then a
summary of what was found per data set, a table of contents, a methods paragraph generated from the resolved
protocol, role-assignment figures and tables per model and data set, inputs used and skipped, and the statistics
that qualify the roles.

Report layer: takes tables (never tests anything) and figures from :mod:`headstats.plots`. Every verdict it
prints comes from the registry of claims (:mod:`headstats.stats.claims`, written to ``claims.csv`` by the run);
the summary's counts and medians of assigned heads are descriptions of the role table (:func:`role_summary`).

:func:`rebuild_report` rebuilds the report and figures of a finished run folder from its tables, without
any model (and without importing torch).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import warnings
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from headstats.assignment.tables import Analysis
from headstats.assignment.role_assignment import role_columns
from headstats.errors import HeadstatsError, OutputError
from headstats.plots import roles_plots
from headstats.plots.style import order_roles, role_family
from headstats.report.blocks import Report, figure_tag, render_tables, write_report
from headstats.report.figures import FigureRenderer, active_renderer
from headstats.stats.corrections import CORRECTIONS
from headstats.stats.onesample import ONE_SAMPLE_TESTS  # display names come from the registries


def tested_parameter(test: str) -> str:
    """The location a test's H0 is about, in words: ``mean``, ``median`` or ``pseudo-median`` (registry)."""
    from headstats.stats.onesample import ONE_SAMPLE_TESTS

    return ONE_SAMPLE_TESTS.get(test).parameter if test in ONE_SAMPLE_TESTS else "location"


def _resampling_sentence(st, tests: pd.DataFrame | None) -> str:
    from headstats.stats.onesample import ONE_SAMPLE_TESTS

    if st.test not in ONE_SAMPLE_TESTS or not ONE_SAMPLE_TESTS.get(st.test).resampling:
        return ""
    drawn = None
    if tests is not None and "n_resamples" in tests and tests["n_resamples"].notna().any():
        drawn = int(pd.to_numeric(tests["n_resamples"], errors="coerce").max())
    how = ("chosen from the family size and alpha so that the smallest attainable corrected p-value is "
           "alpha / 10" if st.n_resamples == "auto" else "as set in the protocol")
    return f"The test drew {drawn if drawn is not None else st.n_resamples} resamples ({how}). "


# ============================================================================================ summary tables

def _tested(group: pd.DataFrame, role: str) -> bool:
    return bool(group[role].notna().any())


def _held(group: pd.DataFrame, role: str) -> np.ndarray:
    return group[role].fillna(False).to_numpy(dtype=bool)


def _layers_with_most(layers: pd.Series) -> str:
    """``"1, 2, 4 (12 each)"``: the layer(s) holding most of ``layers`` and how many each holds."""
    if layers.empty:
        return ""
    counts = layers.value_counts()
    most = sorted(int(layer) for layer in counts[counts == counts.max()].index)
    return f"{', '.join(map(str, most))} ({int(counts.max())} each)" if len(most) > 1 else \
        f"{most[0]} ({int(counts.max())})"


def role_summary(roles: pd.DataFrame) -> pd.DataFrame:
    """Where the heads of each role sit, per (model, dataset, role) tested.

    Parameters
    ----------
    roles : DataFrame
        :func:`headstats.assignment.role_assignment.role_table` output (a boolean or NA column per role).

    Returns
    -------
    DataFrame
        ``model, dataset, role, n_heads`` (heads holding the role), ``n_tested`` (heads it was tested on),
        ``share`` (``n_heads / n_tested``), ``median_layer`` (median layer of the heads holding it; NaN when
        none does), ``layers_with_most`` (the layer(s) with most such heads, and how many) and ``n_layers``.
        Roles not tested on a data set (all NA) are left out.
    """
    rows = []
    for (model, dataset), group in roles.groupby(["model", "dataset"], sort=False):
        n_layers = int(group["layer"].max()) + 1
        for role in order_roles(role_columns(roles)):
            if not _tested(group, role):
                continue
            held = _held(group, role)
            layers = group.loc[held, "layer"].astype(int)
            rows.append(dict(
                model=model, dataset=dataset, role=role, n_heads=int(held.sum()),
                n_tested=int(group[role].notna().sum()), share=float(held.mean()),
                median_layer=float(np.median(layers)) if len(layers) else float("nan"),
                layers_with_most=_layers_with_most(layers), n_layers=n_layers,
            ))
    columns = ["model", "dataset", "role", "n_heads", "n_tested", "share", "median_layer", "layers_with_most",
               "n_layers"]
    return pd.DataFrame(rows, columns=columns)


def _family_held(group: pd.DataFrame, family: str) -> np.ndarray:
    cols = [c for c in role_columns(group) if role_family(c) == family and _tested(group, c)]
    if not cols:
        return np.zeros(len(group), dtype=bool)
    return np.logical_or.reduce([_held(group, c) for c in cols])


def _tested_families(group: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(role_family(c) for c in order_roles(role_columns(group)) if _tested(group, c)))


def multi_role_heads(group: pd.DataFrame) -> np.ndarray:
    """Per head of one (model, dataset): whether it holds roles of two or more kinds (:func:`role_family`:
    ``delimiter_cls`` and ``delimiter`` are one kind, ``syntactic:nsubj`` and ``syntactic`` another)."""
    families = _tested_families(group)
    if not families:
        return np.zeros(len(group), dtype=bool)
    return np.sum([_family_held(group, f) for f in families], axis=0) >= 2


# ============================================================================================ the claims

#: The verdicts of :mod:`headstats.stats.claims`, in the order a reader weighs them.
_VERDICT_ORDER = ("supported", "contradicted", "not shown", "cannot tell")


def _where(model: str, dataset: str, one_model: bool) -> str:
    return str(dataset) if one_model else f"{model} / {dataset}"


def _reason_kind(reason: str) -> str:
    """``role out of reach`` from ``role out of reach: local out of reach (mean ceiling 2.71 <= tau 3)``."""
    return str(reason).split(":", 1)[0].strip()


def _p_text(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-3 else f"{p:.1e}"


def claim_cell(row) -> str:
    """One cell of the claims table: ``supported (p = 0.0047)``, ``not shown (p = 0.31)`` or
    ``cannot tell (role out of reach)``; ``p`` is corrected over the run's claims."""
    verdict, p, reason = str(row["verdict"]), float(row["p"]), row["reason"]
    if verdict == "cannot tell":
        return f"cannot tell ({_reason_kind(reason)})" if isinstance(reason, str) and reason else verdict
    return f"{verdict} (p = {_p_text(p)})" if np.isfinite(p) else verdict


def claims_by_dataset(claims: pd.DataFrame) -> pd.DataFrame:
    """The report's claims table: one row per claim (its sentence and source), one column per data set
    (``model / dataset`` when the run has several models or replicate groups), each cell :func:`claim_cell`.

    Parameters
    ----------
    claims : DataFrame
        ``claims.csv`` (:func:`headstats.stats.claims.evaluate_claims`).
    """
    if claims is None or claims.empty:
        return pd.DataFrame(columns=["claim", "source"])
    one_model = claims["model"].astype(str).nunique() == 1
    where = [_where(m, d, one_model) for m, d in zip(claims["model"], claims["dataset"])]
    cells = claims.assign(where=where, cell=[claim_cell(r) for _, r in claims.iterrows()])
    table = cells.pivot_table(index=["sentence", "source"], columns="where", values="cell", aggfunc="first",
                              sort=False).reset_index()
    table.columns.name = None
    order = list(dict.fromkeys(claims["sentence"]))
    table = table.set_index("sentence").loc[order].reset_index().rename(columns={"sentence": "claim"})
    return table[["claim", "source", *dict.fromkeys(where)]].fillna("")


def claim_line(row) -> str:
    """One claim as a line of the summary: the verdict in bold, the sentence, the numbers, the test and the
    corrected p-value (or the reason the data cannot decide)."""
    detail = f": {row['detail']}" if isinstance(row["detail"], str) and row["detail"] else ""
    line = f"- **{row['verdict']}**: {row['sentence']}{detail}"
    p = float(row["p"])
    if np.isfinite(p):
        line += f" ({row['test']}; p = {_p_text(p)} after {CORRECTIONS.describe(row['correction'], 'short')})"
    reason = row["reason"]
    if isinstance(reason, str) and reason:
        line += f"; {reason}"
    return line + "."


def claims_family_text(claims: pd.DataFrame) -> str:
    """What the verdicts are: tests, with their family and correction."""
    if claims is None or claims.empty:
        return ("No claim was tested in this run (no `claims.csv`: a run folder written before claims were "
                "tested); rerun `headstats run` to test them.")
    alpha = float(claims["alpha"].iloc[0])
    correction = str(claims["correction"].iloc[0])
    m = int((claims["family"] != "none (cannot reject)").sum())
    counts = claims["verdict"].value_counts()
    tally = ", ".join(f"{int(counts[v])} {v}" for v in _VERDICT_ORDER if v in counts)
    return (
        f"Each verdict is a test of a registered claim (`claims.csv`: its hypothesis H0/H1 with thresholds, unit of "
        f"replication, test, estimate with its interval, p-value and what the design could detect; "
        f"docs/statistics.md, 'Claims'). Family: the {m} claims of this run whose test can reject, "
        f"{CORRECTIONS.describe(correction)}, alpha = {alpha:g} (p <= alpha after correction). "
        "**supported**: significant in the claimed direction; **contradicted**: significant in the other "
        "direction; **not shown**: tested, not significant; **cannot tell**: the data cannot decide (a role out "
        "of reach or not tested, too few heads, a design whose smallest p-value is above alpha): a reason, never "
        f"a verdict. This run: {tally}."
    )


def claims_section(report: Report, claims: pd.DataFrame | None) -> None:
    """The report's first section: the claims table (claim by data set) from ``claims.csv``."""
    report.heading("Claims, tested")
    report.text(claims_family_text(claims))
    if claims is None or claims.empty:
        return
    report.table(claims_by_dataset(claims), "The claims of the papers (and any registered claim) by data set: "
                 "verdict and p-value after correction over the run's claims, or why the data cannot tell.",
                 fold=False, latex="claims.tex")
    cols = ["claim", "model", "dataset", "unit", "test", "measure", "estimate", "ci_low", "ci_high", "p_unc", "p",
            "floor", "verdict", "reason", "detectable"]
    report.table(claims[[c for c in cols if c in claims.columns]], "Every claim's test: estimate with its interval, "
                 "p before (p_unc) and after correction (p), the smallest p the design can give (floor), and what it "
                 "could detect.", max_rows=200, csv="claims.csv", fold=True)


# =============================================================================================== sections

def by_model_and_dataset(frame: pd.DataFrame, protocol=None):
    """``((model, dataset), rows)`` of a table, in the protocol's order of models and data sets when given
    (else in table order)."""
    groups = dict(list(frame.groupby(["model", "dataset"], sort=False)))
    if protocol is None:
        return list(groups.items())
    models = [m.name for m in protocol.models]
    datasets = [d.name for d in protocol.datasets]

    def rank(key):
        model, dataset = key
        return (models.index(model) if model in models else len(models),
                datasets.index(dataset) if dataset in datasets else len(datasets))

    return sorted(groups.items(), key=lambda item: rank(item[0]))


def _adjusted_words(correction: str) -> str:
    from headstats.stats.corrections import CORRECTIONS

    kind = CORRECTIONS.get(correction).kind if correction in CORRECTIONS else "none"
    return {"fwer": "Bonferroni-adjusted level 1 - (1 - confidence) / m, simultaneous over the family",
            "fdr": "Benjamini-Yekutieli false-coverage-rate level 1 - R (1 - confidence) / m, for the R "
                   "assigned heads only",
            }.get(kind, "equal to the marginal bound, as there is no correction")


def methods_paragraph(protocol, manifest: dict, tests: pd.DataFrame | None = None) -> str:
    """A methods paragraph, in words, from the resolved protocol and the manifest (and the tests table, for
    the number of resamples a resampling test drew)."""
    sc, st = protocol.scoring, protocol.statistics
    param = tested_parameter(st.test)
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
        f"{_scale_text(sc)}{_variants_text(sc, st)}"
        f"For every model, data set, role, layer and head we tested H0: {param} score <= tau = {_tau_text(st)} "
        f"against H1: {param} score > tau with a one-sided {ONE_SAMPLE_TESTS.describe(st.test)}, and controlled "
        f"multiple comparisons with {CORRECTIONS.describe(st.correction)} over families of "
        f"{family}. A head was assigned a role when its corrected p-value was at most alpha = {st.alpha:g} "
        f"(p_corr <= alpha, as statsmodels decides). {_resampling_sentence(st, tests)}"
        f"Each result reports the {param} score, a one-sided {st.confidence:.0%} lower confidence bound of the "
        f"{param} (marginal, `ci_low`) and the same bound adjusted to the correction (`ci_low_adj`: "
        f"{_adjusted_words(st.correction)}), the effect size, the skewness of the scores, the number of inputs "
        f"that took part (N), and, at the head's N and corrected level, the minimum detectable standardised "
        f"effect with {st.power_target:.0%} power and the power and N needed at the declared effect of "
        f"interest d = {st.effect_of_interest:g} (design power, not power at the observed effect, which only "
        f"restates the p-value). {_ceiling_text(manifest)}Seed {protocol.seed}; protocol sha256 "
        f"`{manifest['protocol_sha256'][:16]}`. Definitions and defaults: `docs/methods.md` of headstats."
    )


def _tau_text(st) -> str:
    """tau as written in the protocol: ``3`` or ``3 (block: 1.5)``."""
    return st.tau_text() if hasattr(st, "tau_text") else f"{st.tau:g}"


def _scale_text(sc) -> str:
    scale = getattr(sc, "scale", "bias")
    if scale == "bias":
        return ""
    words = {"bias": "the sieve bias score", "mass": "the attention mass inside the sieve (0 to 1)",
             "ceiling": "the sieve bias score divided by its ceiling (0 to 1)"}
    if isinstance(scale, dict):
        roles = [r for r in sc.roles if sc.scale_of(r) != "bias"]
        return ("Scores on another scale, tau in the same unit: " + "; ".join(
            f"`{r}`: {words[sc.scale_of(r)]}" for r in roles) + ". ") if roles else ""
    return f"Every role was scored as {words[scale]}, tau in the same unit. "


def _variants_text(sc, st) -> str:
    """The published code's variants a protocol switched on (METHODS 1.6), in words."""
    on = []
    if getattr(sc, "block_entropy", False):
        on.append("block multiplies each query's ratio by the entropy (nats) of its attention row")
    if getattr(sc, "first_sep_segment", "A") == "B":
        on.append("the first [SEP] of a pair queries segment B")
    if getattr(sc, "local_edges", "exact") == "published":
        on.append(f"the last {sc.window} local queries divide their window sum by its size + 1")
    if getattr(sc, "alignment", "offsets") == "first_occurrence":
        on.append("words are parsed on a regex-cleaned copy of the text and found among the pieces by first "
                  "occurrence")
    if st.test == "t_ddof0":
        on.append("the t statistic uses the sd with ddof 0")
    if st.correction == "none":
        on.append("no multiple-comparison correction")
    return ("As in the published code of Pande et al. (2021): " + "; ".join(on) + ". ") if on else ""


def _ceiling_text(manifest: dict) -> str:
    """The ceilings in words, with the roles whose tau was out of reach (from the run's warnings)."""
    text = ("A sieve bias score cannot exceed n / |S_f(i)| per query, so each input has a ceiling (the score of a "
            "perfect head, averaged as the score is; METHODS 1.6): `tests.csv` gives each head's mean ceiling "
            "(`score_ceiling`) and the share of it reached (`ceiling_share`), `ceilings.csv` each role's. ")
    warnings = manifest.get("warnings") or []
    if warnings:
        text += (f"**tau was at or above the mean ceiling of {len(warnings)} role(s) on a data set, where no head "
                 "can be assigned the role**: " + "; ".join(w.split(": no head")[0] for w in warnings) + ". ")
    return text


def _ceiling_notes(ceilings: pd.DataFrame | None, model: str, dataset: str) -> dict[str, str]:
    """Per role of one (model, dataset): its mean ceiling, marked when tau is out of reach."""
    if ceilings is None or ceilings.empty:
        return {}
    part = ceilings[(ceilings["model"].astype(str) == str(model)) & (ceilings["dataset"].astype(str) == str(dataset))]
    return {str(r.role): f"{r.mean_ceiling:.3g}" + ("" if bool(r.tau_reachable) else f" (tau = {r.tau:g} out of reach)")
            for r in part.itertuples()}


def _n_scored(manifest: dict, model: str, dataset: str) -> int | None:
    for key, counts in manifest.get("inputs", {}).items():
        m, d = counts.get("model"), counts.get("dataset")
        if m is None or d is None:
            m, _, d = key.rpartition("/")
        if m == model and d == dataset:
            return counts.get("n_scored")
    return None


def _dataset_sentence(group: pd.DataFrame, summary: pd.DataFrame, n_inputs: int | None) -> str:
    n_layers, n_heads = int(group["layer"].max()) + 1, int(group["head"].max()) + 1
    any_role = group[[c for c in role_columns(group) if _tested(group, c)]].fillna(False).astype(bool).any(axis=1)
    multi = multi_role_heads(group)
    inputs = f", {n_inputs} inputs" if n_inputs is not None else ""
    held = summary[summary["n_heads"] > 0].sort_values("n_heads", ascending=False, kind="stable")
    largest = "; ".join(f"{r.role} {r.n_heads} (median layer {r.median_layer:g})" for r in held.head(3).itertuples())
    untested = [c for c in role_columns(group) if not _tested(group, c)]
    parts = [f"{n_layers} layers x {n_heads} heads{inputs}. **{int(any_role.sum())} of {len(group)} heads** hold at "
             f"least one role; {int(multi.sum())} hold roles of two or more kinds."]
    parts.append(f"Most held: {largest}." if largest else "No head holds any role.")
    if untested:
        parts.append(f"Not tested on this data set: {', '.join(untested)}.")
    return " ".join(parts)


def _summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "role": summary["role"], "heads": summary["n_heads"],
        "share of heads (fraction)": summary["share"].astype(float),
        "median layer": ["" if np.isnan(m) else f"{m:g}" for m in summary["median_layer"]],
        "layer(s) with most": summary["layers_with_most"],
    })


def summary_section(report: Report, root: Path, analysis: Analysis, protocol, manifest: dict, *,
                    formats: Sequence[str] | None = None, figures: FigureRenderer | None = None,
                    heading: str = "Summary") -> None:
    """What was found, per (model, dataset): heads per role, where in depth, the claims tested there (from
    ``claims.csv``, the registry's verdicts) and the role grid (drawn by ``figures``, default: here, now)."""
    figures = figures or FigureRenderer(root, formats=formats, workers=1)
    roles = analysis.roles
    st = protocol.statistics
    report.heading(heading)
    n_roles = len(role_columns(roles))
    report.text(
        f"Every head was tested for {n_roles} roles: H0 {tested_parameter(st.test)} sieve bias score <= "
        f"tau = {_tau_text(st)}, one-sided "
        f"{ONE_SAMPLE_TESTS.describe(st.test)}, {CORRECTIONS.describe(st.correction, 'short')} correction per "
        f"{' x '.join(st.family) or 'study'}, "
        f"alpha = {st.alpha:g}. Below, per data set: how many heads hold each role and where in depth they sit, "
        "and the claims tested on it (verdicts from `claims.csv`, as in the claims table above)."
    )
    summary = role_summary(roles)
    claims = analysis.tables.get("claims")
    for (model, dataset), group in by_model_and_dataset(roles, protocol):
        report.heading(f"{model} on {dataset}", level=3)
        part = summary[(summary["model"] == model) & (summary["dataset"] == dataset)]
        notes = _ceiling_notes(analysis.tables.get("ceilings"), model, dataset)
        out_of_reach = [f"{r} (mean ceiling {v.split(' ')[0]})" for r, v in notes.items() if "out of reach" in v]
        reach = (f" **tau is out of reach** for {', '.join(out_of_reach)}: not even a perfect head could be "
                 f"assigned {'this role' if len(out_of_reach) == 1 else 'these roles'} here." if out_of_reach else "")
        report.text(_dataset_sentence(group, part, _n_scored(manifest, model, dataset)) + reach)
        if claims is not None and len(claims):
            found = claims[(claims["model"].astype(str) == str(model)) & (claims["dataset"].astype(str) == str(dataset))]
            if len(found):
                report.text("Claims tested here:\n\n" + "\n".join(claim_line(r) for _, r in found.iterrows()))
        report.figure(figures.add(f"roles_grid_{figure_tag(model, dataset)}", roles_plots.role_grid, group,
                                  title=f"roles held per head: {model} on {dataset}"),
                      "Role grid: each cell is a head (layer x head); each role has a fixed slot in every cell "
                      "(key below the grid), filled when the head holds the role, grey when it was tested but not "
                      "assigned. Look for roles that fill whole layers and for heads with several filled slots.",
                      alt=f"role grid of {model} on {dataset}")
        table = _summary_table(part)
        if notes:
            table["mean ceiling"] = [notes.get(str(r), "") for r in table["role"]]
        report.table(table, "Heads holding each role, the median layer of those heads and the "
                     "layer(s) with most of them (share: of the heads the role was tested on); mean ceiling: the "
                     "mean score a perfect head would get on these inputs (tau must be below it).", fold=False)


def inputs_section(report: Report, manifest: dict, analysis: Analysis) -> None:
    """Inputs read, scored and skipped per (model, dataset), and inputs taking part per role."""
    report.heading("Inputs used and skipped")
    rows = []
    for key, counts in manifest["inputs"].items():
        model, dataset = counts.get("model"), counts.get("dataset")
        if model is None or dataset is None:  # manifests before model and dataset were recorded per entry
            model, dataset = key.rsplit("/", 1)
        skipped = ", ".join(f"{reason}: {n}" for reason, n in counts["skipped"].items() if n) or "none"
        notes = ", ".join(f"{reason}: {n}" for reason, n in counts["notes"].items() if n) or "none"
        dropped = "; ".join(f"{r} ({why})" for r, why in counts["roles_not_applicable"].items()) or "none"
        rows.append(dict(model=model, dataset=dataset, read=counts["n_records"], scored=counts["n_scored"],
                         skipped=skipped, notes=notes, roles_not_applicable=dropped))
    report.table(pd.DataFrame(rows), "Inputs read, scored and skipped, with the reasons; check that the skipped "
                 "ones are few.", fold=False)
    part = analysis.tables.get("participation")
    if part is not None:
        report.table(part, "Inputs taking part per role: an input without an arc of a relation takes no part in "
                     "its test, so N differs between roles.", max_rows=200, csv="participation.csv")


def role_counts(per_layer: pd.DataFrame, protocol=None) -> pd.DataFrame:
    """Heads assigned per role, one row per (model, dataset), one integer column per role (NA: not tested);
    rows in the protocol's order of models and data sets when it is given."""
    counts = per_layer.groupby(["model", "dataset", "role"], sort=False)["n_heads"].sum().unstack("role")
    counts = counts[order_roles(counts.columns)].astype("Int64").reset_index()
    counts.columns.name = None
    if protocol is not None:
        order = [key for key, _ in by_model_and_dataset(counts, protocol)]
        counts = counts.set_index(["model", "dataset"]).loc[order].reset_index()
    return counts


def role_sections(report: Report, root: Path, analysis: Analysis, protocol, *,
                  formats: Sequence[str] | None = None, figures: FigureRenderer | None = None) -> None:
    """Per (model, dataset): mean-score maps, heads per role per layer, co-location (UpSet); figures drawn by
    ``figures`` (default: here, now)."""
    figures = figures or FigureRenderer(root, formats=formats, workers=1)
    tests, roles = analysis.tests, analysis.roles
    per_layer = analysis.tables["heads_per_layer"]
    coloc = analysis.tables["colocation"]
    tau = protocol.statistics.tau_of("default") if hasattr(protocol.statistics, "tau_of") else protocol.statistics.tau
    report.heading("Heads assigned per role")
    report.table(role_counts(per_layer, protocol), "Heads assigned each role, of all heads of the model (blank: "
                 "the role was not tested on that data set, e.g. block on single sentences).", fold=False,
                 latex="role_counts.tex")
    ceilings = analysis.tables.get("ceilings")
    if ceilings is not None and not ceilings.empty:
        shown = ceilings[["model", "dataset", "role", "scale", "tau", "mean_ceiling", "min_ceiling", "max_ceiling",
                          "share_below_tau", "tau_reachable"]]
        report.table(shown, "Ceilings beside the counts: per role and data set the tau tested, the mean over inputs "
                     "of the score a perfect head would get (a head must average above tau, so tau_reachable is "
                     "False when tau >= mean_ceiling: no head can be assigned that role there), the smallest and "
                     "largest input ceiling, and the share of inputs on which even a perfect head scores at most "
                     "tau. The bias score's ceiling grows with length, so counts of data sets of different "
                     "lengths are not comparable; scoring.scale: mass is length-free.", max_rows=200,
                     csv="ceilings.csv", fold=False)
    for (model, dataset), part in by_model_and_dataset(roles, protocol):
        tag = figure_tag(model, dataset)
        report.heading(f"Roles of {model} on {dataset}", level=3)
        sub_tests = tests[(tests["model"] == model) & (tests["dataset"] == dataset)]
        one_tau = sub_tests["tau"].nunique() <= 1 if "tau" in sub_tests else True
        shown_tau = (float(sub_tests["tau"].iloc[0]) if len(sub_tests) and "tau" in sub_tests else tau) if one_tau \
            else None  # taus differ by role: one colour scale cannot diverge at each
        scale = {"family": "one colour scale per role family", "shared": "one colour scale for every role",
                 "role": "one colour scale per role"}[getattr(getattr(protocol.report, "figures", None), "scale", "family")]
        colours = (f"white at tau = {shown_tau:g}, red above, blue below, {scale} (`report.figures.scale`), each "
                   "bar spanning the scores' range" if shown_tau is not None
                   else f"tau differs by role ({_tau_text(protocol.statistics)}), so colours do not mark it")
        report.figure(figures.add(f"mean_scores_{tag}", roles_plots.mean_score_maps, sub_tests, tau=shown_tau,
                                  title=f"mean score per head: {model} on {dataset}"),
                      f"Mean score of every head for each role; {colours}; "
                      "black outlines are the assigned heads. Look for red cells without an outline: above tau on "
                      "average but not significant after correction.", alt=f"mean score maps of {model} on {dataset}")
        pl = per_layer[(per_layer["model"] == model) & (per_layer["dataset"] == dataset)]
        report.figure(figures.add(f"heads_per_layer_{tag}", roles_plots.heads_per_layer_plot, pl,
                                  title=f"heads per role per layer: {model} on {dataset}"),
                      "Heads holding each role in each layer (one panel per role, same scale). Look at where in "
                      "depth each role sits: the paper finds [CLS] heads early and [SEP] heads in the middle and "
                      "late layers.", alt=f"heads per layer of {model} on {dataset}")
        wide = pl.pivot(index="layer", columns="role", values="n_heads").reset_index()
        wide = wide[["layer", *order_roles(c for c in wide.columns if c != "layer")]]
        report.table(wide, f"Heads assigned each role per layer ({model} on {dataset}): the counts of the panels "
                     "above.", csv="heads_per_layer.csv", fold=True, latex=f"heads_per_layer_{tag}.tex")
        co = coloc[(coloc["model"] == model) & (coloc["dataset"] == dataset)]
        report.figure(figures.add(f"colocation_{tag}", roles_plots.upset_plot, co, roles=role_columns(part),
                                  title=f"co-location: {model} on {dataset}"),
                      "Co-location (UpSet plot): heads per exact combination of roles, largest first; the dots "
                      "under a bar are its roles, the bars on the left the heads holding each role. Look at how "
                      "many heads hold more than one role, and which roles go together.",
                      alt=f"co-location of {model} on {dataset}")
        pairs = co[(co["kind"] == "pair") & (co["n_heads"] > 0)].sort_values("n_heads", ascending=False)
        report.table(pairs[["combination", "n_heads", "share"]], "Heads holding both roles of each pair, whatever "
                     "else they hold (pairs held by no head left out).", csv="colocation.csv", fold=True)


def analysis_sections(report: Report, root: Path, analyses: dict[str, dict[str, pd.DataFrame]],
                      claims: pd.DataFrame | None = None) -> dict[str, str]:
    """The section of each analysis of the protocol (the ``report`` of its registry entry, see
    :mod:`headstats.report.sections`), given its tables and the run's ``claims`` (as ``tables["claims"]``: a
    section states verdicts only from there); returns table -> what."""
    from headstats.analyses import get_analysis
    from headstats.report.sections import SECTIONS

    files = {}
    for name, tables in analyses.items():
        spec = get_analysis(name)
        section = spec.report_section() or (SECTIONS.get(name) if name in SECTIONS else None)
        if section is not None:
            section(report, root, {**tables, "claims": claims} if claims is not None else tables)
        files.update({table: TABLE_FILES.get(table, f"a table of the {name} analysis ({spec.description})")
                      for table in tables})
    return files


#: What each table an analysis writes holds, for "Files and reproduction" (one line per file).
TABLE_FILES = {
    "surface": "per head, mean attention to the previous, current and next piece, to [CLS], [SEP] and punctuation, "
               "and entropy (means over inputs)",
    "surface_tests": "one row per head and declared hypothesis (`role`): the one-sided test of the surface measure",
    "js_distance": "Jensen-Shannon divergence between every pair of heads (means over queries and inputs)",
    "mds": "per head, its MDS coordinates from the JS divergences and its dominant behaviour",
    "clustering_tests": "the permutation test that heads of one layer attend more alike than heads of different layers",
    "gallery": "per BertViz pattern, the head that shows it best and the input drawn",
    "attention_maps": "the attention weights drawn in the pictures (model, data set, input, layer, head, query, key)",
    "attention_tokens": "the pieces of every input drawn, with their positions and segments",
    "dependency_table": "Table 1 of Clark et al.: per relation the best head and the best offset, with the test",
    "dependency_heads": "accuracy of every head, direction and relation (the rows Table 1 chooses from)",
    "coreference": "antecedent selection: accuracy of every head per mention type, and of the baselines",
    "coreference_tests": "every head against each baseline (McNemar), corrected",
    "probes": "UAS of each probing classifier, with intervals and the tests against the baselines",
    "gradients": "mean |dL/dA| per head and kind of token attended to",
    "gradients_skipped": "the models and data sets gradient importance could not run on, with the reason",
    "distance": "per head, the mean distance attended over (pieces), against the uniform reference",
    "distance_tests": "one row per head: the one-sided test of the attended distance",
    "entropy": "per head, the mean row entropy of attention and its ratio to ln n",
    "similarity": "per head, the similarity of its attention before and after fine-tuning",
    "special_mass": "per layer, the mass on [CLS], [SEP] and punctuation before and after fine-tuning",
}

#: How to make an analysis that was skipped run (by analysis name).
SKIP_FIXES = {
    "gradients": "give a model with a masked-LM or classification head (e.g. one from `headstats finetune`), or "
                 "leave `gradients` out of `analyses`",
}


def skipped_analyses(analyses: dict[str, dict[str, pd.DataFrame]]) -> list[str]:
    """One line per analysis and reason it was skipped for (``<analysis>_skipped`` tables: model, data set,
    reason), naming where and the fix; said once, at the top of the report."""
    lines = []
    for name, tables in analyses.items():
        for key, table in tables.items():
            if not key.endswith("_skipped") or table is None or table.empty or "reason" not in table:
                continue
            for reason, part in table.groupby("reason", sort=False):
                where = ", ".join(f"{m} on {d}" for m, d in part[["model", "dataset"]].drop_duplicates()
                                  .itertuples(index=False))
                fix = SKIP_FIXES.get(name, f"give it a model it can run on, or leave `{name}` out of `analyses`")
                lines.append(f"- **{name}** did not run ({where}): {str(reason).rstrip('.')}. Fix: {fix}.")
    return lines


def analyses_lead(protocol, analyses: dict | None) -> bool:
    """Whether the protocol's own analyses lead the report (it names analyses), the roles coming after them;
    a protocol of roles alone leads with the roles."""
    return bool(analyses) and bool(getattr(protocol, "analyses", None))


def statistics_sections(report: Report, root: Path, analysis: Analysis, protocol, *,
                        formats: Sequence[str] | None = None, figures: FigureRenderer | None = None) -> None:
    """p-values, power and sensitivity (figures from :mod:`headstats.plots.stats_plots`, drawn by ``figures``,
    default: here, now)."""
    from headstats.plots import stats_plots

    figures = figures or FigureRenderer(root, formats=formats, workers=1)

    tests = analysis.tests
    st = protocol.statistics
    report.heading("p-values, power and sensitivity")
    report.figure(figures.add("pvalue_ecdf", stats_plots.plot_pvalue_ecdf, tests, alpha=st.alpha),
                  f"Every uncorrected p-value of the {len(tests)} hypotheses, as the share of each role's hypotheses "
                  "with p at most x, on a log axis (dotted: uniform p-values, H0 at its boundary; dashed: alpha; "
                  "solid: the largest p-value the correction rejected). A role whose line rises at the left has "
                  "heads far above tau; a line that stays at 0 until p = 1 is heads far below it.",
                  alt="p-value distribution")
    summary = analysis.tables.get("power_summary")
    d0 = st.effect_of_interest
    if summary is not None:
        report.table(summary, f"Per role: heads assigned, not assigned, and underpowered (not assigned, with "
                     f"less than {st.power_target:.0%} power to detect the effect of interest d = {d0:g} at their "
                     f"N and corrected level); median_mde is the median minimum detectable effect (standardised, "
                     f"{st.power_target:.0%} power), max_n_for_power the inputs a protocol would need for "
                     f"{st.power_target:.0%} power at d = {d0:g}.", max_rows=200, csv="power_summary.csv")
    if "mde" in tests.columns and tests["mde"].notna().any():
        report.figure(figures.add("power_mde", stats_plots.plot_mde, tests, effect_of_interest=d0),
                      f"The smallest standardised effect each head's test could detect with {st.power_target:.0%} "
                      f"power at its N and corrected level (filled: assigned); dashed: the effect of interest "
                      f"d = {d0:g}. Heads above the line could not have shown an effect of that size.",
                      alt="smallest detectable effect per head")
    weak = analysis.tables.get("underpowered")
    if weak is not None and len(weak):
        report.text(
            f"{len(weak)} head-role pairs were not assigned by a test that had less than {st.power_target:.0%} "
            f"power to detect an effect of d = {d0:g} (the protocol's `effect_of_interest`) at their N and "
            f"corrected level: their minimum detectable effect `mde` is larger, so their non-assignment says "
            f"little about effects of that size. `n_for_power` is the number of inputs that would give "
            f"{st.power_target:.0%} power at d = {d0:g}. These are design quantities (Hoenig & Heisey 2001): "
            "they do not depend on the observed effect."
        )
        cols = ["model", "dataset", "role", "layer", "head", "n", "mean", "mde", "mde_score", "power",
                "n_for_power", "power_note"]
        report.table(weak[[c for c in cols if c in weak.columns]], f"Heads not assigned with power below "
                     f"{st.power_target:.0%} at d = {d0:g}: minimum detectable effect and inputs needed.",
                     max_rows=40, csv="underpowered.csv")
    if "tau_sensitivity" in analysis.tables:
        sens = analysis.tables["tau_sensitivity"]
        for (model, dataset), _ in by_model_and_dataset(sens, protocol):
            tag = figure_tag(model, dataset)
            tau_used = st.tau_of("default") if hasattr(st, "tau_of") else st.tau
            one = sens[(sens["model"] == model) & (sens["dataset"] == dataset)]
            report.figure(figures.add(f"tau_sensitivity_{tag}", stats_plots.plot_tau_sensitivity, one, model=model,
                                      dataset=dataset, alpha=st.alpha, tau_used=tau_used),
                          f"Heads assigned per role as tau varies ({model} on {dataset}, alpha = {st.alpha:g}; "
                          "dashed: the tau used). Look for roles whose count changes steeply near the tau used.",
                          alt=f"tau sensitivity of {model} on {dataset}")
        rob = analysis.tables.get("robustness")
        if rob is not None:
            unstable = rob[~rob["stable"].astype(bool)] if "stable" in rob else rob
            report.text(
                f"Robustness: {len(unstable)} of {len(rob)} head-role pairs change assignment between tests or "
                "corrections (`robustness.csv`)."
            )
            report.table(unstable, "Heads whose assignment depends on the test or correction (one column per "
                         "test x correction).", max_rows=40, csv="robustness.csv")


def strongest_section(report: Report, analysis: Analysis, protocol) -> None:
    """The top-k heads per role by their effect in score units (mean - tau), with the share of the ceiling."""
    report.heading("Strongest heads per role")
    strongest = analysis.tables["strongest_heads"]
    keys = ["model", "dataset", "role", "layer", "head"]
    if "ci_low_adj" in analysis.tests.columns and "ci_low_adj" not in strongest.columns:
        adj = analysis.tests[[*keys, "ci_low_adj"]].astype({k: str for k in keys[:3]})
        strongest = strongest.astype({k: str for k in keys[:3]}).merge(adj, on=keys, how="left")
        cols = list(strongest.columns)
        cols.insert(cols.index("ci_low") + 1, cols.pop(cols.index("ci_low_adj")))
        strongest = strongest[cols]
    rank = {r: i for i, r in enumerate(order_roles(strongest["role"]))}
    ranked_by = "mean_minus_tau" if "mean_minus_tau" in strongest else "mean"  # older run folders: by mean
    strongest = strongest.assign(_r=strongest["role"].map(rank)).sort_values(
        ["model", "dataset", "_r", ranked_by], ascending=[True, True, True, False], kind="stable").drop(columns="_r")
    st = protocol.statistics
    report.table(strongest, f"The {protocol.report.top_k} heads with the largest effect in score units per model, "
                 f"data set and role (ranked by `{ranked_by}`, the mean score minus tau; `ceiling_share`: the mean "
                 f"over the mean ceiling of the head's inputs, the share of what a perfect head would score; not "
                 f"Cohen's d, which a head with almost constant scores inflates), with their corrected p-value and "
                 f"two one-sided lower bounds of the {tested_parameter(st.test)}: `ci_low`, marginal at "
                 f"{st.confidence:.0%} (each head on its own), "
                 f"and `ci_low_adj`, adjusted to the {CORRECTIONS.describe(st.correction, 'short')} "
                 f"correction ({_adjusted_words(st.correction)}); read `ci_low_adj` beside the assignments.",
                 max_rows=400, csv="strongest_heads.csv", fold=True)


def files_section(report: Report, analysis_files: dict[str, str] | None = None, *,
                  formats: Sequence[str] | None = None) -> None:
    from headstats.plots.style import FORMATS

    others = [f.upper() for f in (FORMATS if formats is None else formats) if f != "png"]
    papers = f" and {', '.join(others)} (for papers)" if others else ""
    report.heading("Files and reproduction")
    report.text(
        "- `scores.parquet`: one row per input, layer, head and role (column `score`)\n"
        "- `tests.csv` / `tests.parquet`: one row per model, data set, role, layer and head\n"
        "- `roles.csv`: one row per head, a boolean column per role\n"
        + "".join(f"- `{name}.csv`: {what}\n" for name, what in (analysis_files or {}).items()) +
        f"- `figures/`: every figure as PNG (shown here){papers}\n"
        "- `manifest.json`: versions, model weight hashes, data hashes, seed, counts\n"
        "- `protocol.resolved.yaml`: rerun with `headstats run protocol.resolved.yaml`; rebuild this report from "
        "the tables with `headstats report RUN_DIR`"
    )


def build_report(root: Path, protocol, analysis: Analysis, manifest: dict, *, comparison: dict | None = None,
                 analyses: dict[str, dict[str, pd.DataFrame]] | None = None,
                 formats: Sequence[str] | None = None, log: Callable[[str], None] = lambda message: None,
                 workers: int | None = None) -> Report:
    """Build the report of a study and write ``report.md``, ``report.html`` and ``figures/`` into ``root``.

    The figures are drawn in worker processes while the text is built (:mod:`headstats.report.figures`);
    their files are the same as drawn one after the other.

    Parameters
    ----------
    root : Path
        The folder to write into (a run's staging folder).
    protocol : Protocol
        The resolved protocol.
    analysis : Analysis
        The tests, role table and analysis tables.
    manifest : dict
        The run's manifest (models, datasets, inputs, protocol hash).
    comparison : dict, optional
        Comparison tables (pretrained vs fine-tuned), without the ``compare_`` prefix.
    analyses : dict, optional
        Analysis name -> its tables (:mod:`headstats.analyses`); each adds its own section.
    formats : sequence of str, optional
        Figure formats beside the PNG (default PNG and SVG).
    log : callable
        Called with a line as each part of the report is drawn.
    workers : int, optional
        Processes that draw the figures (default: one per CPU, or ``$HEADSTATS_FIGURE_WORKERS``; 1: here).
    """
    from headstats.plots import style

    root = Path(root)
    preset = style.preset_of(getattr(protocol.report, "figures", None))
    formats = list(formats) if formats is not None else list(preset.formats)
    with style.using(preset), FigureRenderer(root, formats=formats, workers=workers, preset=preset) as figures, \
            active_renderer(figures):
        report = _build_report(root, protocol, analysis, manifest, comparison=comparison, analyses=analyses,
                               formats=formats, log=log, figures=figures)
        render_tables(report, html_too=protocol.report.html)  # while the figures are drawn
        log("report: waiting for the figures")
        figures.wait()
        log("report: writing report.md" + (" and report.html" if protocol.report.html else ""))
        write_report(report, root, html_too=protocol.report.html)
    return report


def _build_report(root: Path, protocol, analysis: Analysis, manifest: dict, *, comparison: dict | None,
                  analyses: dict[str, dict[str, pd.DataFrame]] | None, formats: Sequence[str] | None,
                  log: Callable[[str], None], figures: FigureRenderer) -> Report:
    report = Report(title=f"headstats report: {protocol.name}")
    st = protocol.statistics
    report.latex_caption = (f"Protocol {protocol.name}: one-sided {ONE_SAMPLE_TESTS.describe(st.test)}, "
                            f"{CORRECTIONS.describe(st.correction, 'short')} correction, alpha = {st.alpha:g}. ")
    if protocol.description:
        report.text(protocol.description)
    report.contents(levels=(2, 3))
    n_sets = len(by_model_and_dataset(analysis.roles, protocol))
    claims = analysis.tables.get("claims")
    skipped = skipped_analyses(analyses or {})
    if skipped:
        report.text("**Not run**, said once here:\n\n" + "\n".join(skipped))
    claims_section(report, claims)
    if has_seeds(comparison):
        seeds_answer_section(report, comparison, claims)
    # the protocol's own analyses lead when it names any: their sections come right after the claims, and the
    # roles of Pande et al. (always scored) follow; a protocol of roles alone leads with the roles
    lead = analyses_lead(protocol, analyses)
    analysis_files: dict[str, str] = {}
    if lead:
        log(f"report: the sections of {', '.join(analyses)}")
        analysis_files = analysis_sections(report, root, analyses or {}, claims)
        report.heading("Methods")
        report.text(methods_paragraph(protocol, manifest, analysis.tests))
        inputs_section(report, manifest, analysis)
    log(f"report: summary and role grids of {n_sets} (model, data set)")
    summary_section(report, root, analysis, protocol, manifest, formats=formats, figures=figures,
                    heading="Roles of Pande et al. (2021): summary" if lead else "Summary")
    if not lead:
        report.heading("Methods")
        report.text(methods_paragraph(protocol, manifest, analysis.tests))
        inputs_section(report, manifest, analysis)
    log(f"report: mean-score maps, heads per layer and co-location ({3 * n_sets} figures)")
    role_sections(report, root, analysis, protocol, formats=formats, figures=figures)
    log("report: p-values, power and tau sensitivity")
    statistics_sections(report, root, analysis, protocol, formats=formats, figures=figures)
    strongest_section(report, analysis, protocol)
    if comparison:
        log("report: pretrained against fine-tuned")
        comparison_section(report, root, comparison, manifest, formats=formats, figures=figures)
    if not lead:
        analysis_files = analysis_sections(report, root, analyses or {}, claims)
    files_section(report, analysis_files, formats=formats)
    return report


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


def add_subsections_as_text(report: Report, markdown: str) -> None:
    """Add each ``### title`` subsection of generated markdown as a paragraph led by its title in bold."""
    for chunk in markdown.split("### ")[1:]:
        title, _, body = chunk.partition("\n")
        report.text(f"**{title.strip()}**\n\n{body.strip()}")


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


# ============================================================================================ rebuild

#: Files of the report itself (replaced by a rebuild; figures/ too).
REPORT_FILES = ("report.md", "report.html")


def _check_rebuildable(run: Path, manifest: dict) -> None:
    from headstats.folders import WRITTEN_BY, manifest_of

    if run.is_symlink():
        raise OutputError(f"{str(run)!r} is a symbolic link; give the run folder itself")
    if manifest_of(run) is None or (manifest.get("written_by") not in (None, WRITTEN_BY)):
        raise OutputError(f"{str(run)!r} was not written by headstats; rebuild works on `headstats run` folders")


def rebuild_report(run_dir: str | Path, *, top_k: int | None = None, html: bool | None = None,
                   formats: Sequence[str] | None = None, log: Callable[[str], None] = lambda message: None,
                   workers: int | None = None) -> Path:
    """Rebuild ``report.md``, ``report.html`` and ``figures/`` of a finished run from its tables.

    No model is loaded and torch is not imported: the tests, roles and analysis tables, ``manifest.json`` and
    ``protocol.resolved.yaml`` are all it reads. The new report is written into a staging folder beside the run
    folder and then moved in file by file (each file is replaced atomically); figures headstats wrote before
    and no longer writes are removed; files headstats did not write are never touched, and a rebuild that
    would overwrite one stops before changing anything. The manifest's ``output_files`` lists the new files
    (e.g. SVG figures beside older PNG-only runs) and ``report_rebuilds`` records the rebuild.

    Parameters
    ----------
    run_dir : path
        A folder written by ``headstats run``.
    top_k : int, optional
        Heads per role in the strongest-heads table (default: the protocol's ``report.top_k``). When given,
        ``strongest_heads.csv`` is rewritten from ``tests`` with that many heads per role.
    html : bool, optional
        Write ``report.html`` too (default: the protocol's ``report.html``).
    formats : sequence of str, optional
        Figure formats beside the PNG (default PNG and SVG).
    log : callable
        Called with a line of progress now and then.
    workers : int, optional
        Processes that draw the figures (see :func:`build_report`).

    Returns
    -------
    Path
        The rebuilt report (``report.html``, or ``report.md`` when HTML is off).

    Raises
    ------
    HeadstatsError
        The folder is not a finished headstats run, is locked by a running headstats, or the rebuild would
        overwrite a file headstats did not write.
    """
    from headstats.assignment.role_assignment import strongest_heads
    from headstats.folders import STAGING_MARKER, _acquire_lock, _owner_record, output_file_list, replace_outputs
    from headstats.study.run_folder import load_run_tables
    from headstats.study.schemas import SCHEMAS_KEY, TABLE_SUFFIXES, table_schema, unchecked_tables_fail_in_one_line

    run = Path(run_dir).expanduser()
    if run.is_symlink():
        raise OutputError(f"{str(run)!r} is a symbolic link; give the run folder itself")
    run = run.resolve()
    log(f"reading the tables of {run}")
    with unchecked_tables_fail_in_one_line(run):
        protocol, analysis, manifest, comparison = load_run_tables(run)
    _check_rebuildable(run, manifest)
    if top_k is not None:
        if int(top_k) < 1:
            raise HeadstatsError(f"top_k must be at least 1, not {top_k}")
        protocol.report.top_k = int(top_k)
        analysis.tables["strongest_heads"] = strongest_heads(analysis.tests, k=int(top_k))
    elif "strongest_heads" not in analysis.tables:
        analysis.tables["strongest_heads"] = strongest_heads(analysis.tests, k=protocol.report.top_k)
    if html is not None:
        protocol.report.html = bool(html)
    lock = run.parent / f".{run.name}.headstats-lock"
    _acquire_lock(lock, run)
    stage = None
    try:
        stage = Path(tempfile.mkdtemp(prefix=f".{run.name}.partial-", dir=run.parent))
        (stage / STAGING_MARKER).write_text(_owner_record(), encoding="utf-8")
        log("drawing the figures and writing the report")
        analyses = {name: {t: analysis.tables.pop(t) for t in names if t in analysis.tables}
                    for name, names in (manifest.get("analysis_tables") or {}).items()}
        with unchecked_tables_fail_in_one_line(run):
            build_report(stage, protocol, analysis, manifest, comparison=comparison or None, analyses=analyses,
                         formats=formats, log=log, workers=workers)
        if top_k is not None:
            analysis.tables["strongest_heads"].to_csv(stage / "strongest_heads.csv", index=False)
        new_tables = {p.name: table_schema(p) for p in stage.iterdir() if p.suffix in TABLE_SUFFIXES}
        n_new = len(output_file_list(stage))
        stale, left = replace_outputs(run, stage, manifest,
                                      removable=lambda f: f.startswith("figures/") or f in REPORT_FILES)
        for rel in left:
            warnings.warn(f"{rel} of {run} left alone: the report no longer writes it, but it is not as headstats "
                          "wrote it (edited, or named by a manifest that is not the run's); it is no longer listed as "
                          "headstats'", stacklevel=2)
        manifest[SCHEMAS_KEY] = {**(manifest.get(SCHEMAS_KEY) or {}), **new_tables}
        manifest.setdefault("report_rebuilds", []).append({
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "headstats": _headstats_version(),
            "top_k": protocol.report.top_k, "html": protocol.report.html, "files": n_new,
            "removed": stale,
        })
        (stage / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(stage / "manifest.json", run / "manifest.json")
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        lock.unlink(missing_ok=True)
    out = run / ("report.html" if protocol.report.html else "report.md")
    log(f"rebuilt {out}")
    return out


def _headstats_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("headstats")
    except metadata.PackageNotFoundError:
        return None
