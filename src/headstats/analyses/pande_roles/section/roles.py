"""The roles of Pande et al. (2021) in detail: heads assigned per role (with the ceilings beside them), and per
(model, data set) the mean-score maps, heads per role per layer and the co-location of roles.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from headstats.tables.study_tables import role_columns
from headstats.tables.study_tables import Analysis
from headstats.analyses.pande_roles import figures as roles_plots
from headstats.plots.style import order_roles
from headstats.report.blocks import Report, figure_tag
from headstats.report.figures import FigureRenderer
from headstats.report.latex import LatexTable, latex_escape
from headstats.report.sections import by_model_and_dataset, role_test_sentence, tau_words


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


#: What a LaTeX table with a column per role says of its short headers.
_ROLE_HEADERS_NOTE = ("Columns: the roles; [CLS] and [SEP] are the delimiter heads of each, a relation's name its "
                      "syntactic heads. ")


def _role_headers(frame: pd.DataFrame) -> dict[str, str]:
    """Paper headers of a table with a column per role: ``[CLS]`` and ``[SEP]`` for the delimiter roles of each,
    a relation's name for its syntactic role (``syntactic:nsubj`` -> ``nsubj``)."""
    words = {"model": "Model", "dataset": "Data set", "layer": "Layer", "delimiter_cls": "{[}CLS{]}",
             "delimiter_sep": "{[}SEP{]}"}
    return {c: words.get(c, latex_escape(str(c).removeprefix("syntactic:"))) for c in frame.columns}


def _counts_latex(counts: pd.DataFrame, protocol) -> LatexTable:
    """``role_counts.tex``: the model column only when the run has several models."""
    one_model = counts["model"].astype(str).nunique() <= 1
    columns = _role_headers(counts.drop(columns="model") if one_model else counts)
    models = f" of {counts['model'].iat[0]}" if one_model and len(counts) else ""
    return LatexTable("role_counts.tex", f"{role_test_sentence(protocol)}Heads{models} assigned each role per data "
                      f"set (blank: not tested there, e.g. block on single sentences). {_ROLE_HEADERS_NOTE}",
                      columns=columns)


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
    counts = role_counts(per_layer, protocol)
    report.table(counts, "Heads assigned each role, of all heads of the model (blank: "
                 "the role was not tested on that data set, e.g. block on single sentences).", fold=False,
                 latex=_counts_latex(counts, protocol))
    _gate_lines(report, tests, protocol)
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
                   "bar spanning the scores' range extended to tau (a bar ends at tau when every score of its scale lies on "
                   "one side of it)" if shown_tau is not None
                   else f"tau differs by role ({tau_words(protocol.statistics)}), so colours do not mark it")
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
                     "above.", csv="heads_per_layer.csv", fold=True, latex=LatexTable(
                         f"heads_per_layer_{tag}.tex", f"{role_test_sentence(protocol)}Heads of {model} assigned "
                         f"each role per layer (0-based) on {dataset}. {_ROLE_HEADERS_NOTE}", columns=_role_headers(wide)))
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


def _gate_lines(report: Report, tests: pd.DataFrame, protocol) -> None:
    """How many syntactic assignments the offset gate removed (METHODS 6.2), per model, data set and role; a line
    saying the gate was off when a run scored syntactic roles without it."""
    from headstats.tables.study_tables import gate_summary

    summary = gate_summary(tests)
    if summary.empty:
        syntactic = tests["role"].astype(str).str.startswith("syntactic").any() if "role" in tests else False
        if syntactic and not getattr(protocol.statistics, "offset_gate", True):
            report.text("The offset gate was off (`statistics.offset_gate: false`): the syntactic roles above are "
                        "assigned by the score test alone, as Pande et al. (2021) did.")
        return
    removed = int(summary["n_removed"].sum())
    passed = int(summary["n_passed_tau"].sum())
    report.text(f"The offset gate (METHODS 6.2) removed {removed:,} of the {passed:,} syntactic assignments that "
                "passed the score test: a head keeps a syntactic role only when its bias toward the arc's other end "
                "also beats its bias toward the words at the same word offset (one-sided, corrected; "
                "`statistics.offset_gate: false` turns it off).")
    report.table(summary[summary["n_passed_tau"] > 0],
                 "Per syntactic role where some head's score beat tau: those heads (`n_passed_tau`), those the "
                 "offset gate removed because their offset-matched excess was not positive at the corrected level "
                 "(`n_removed`; `gate_removed` in tests.csv), and those assigned (`n_assigned`).", fold=True)
