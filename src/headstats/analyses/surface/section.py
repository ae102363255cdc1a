"""Report section of the ``surface`` analysis (Clark et al. 2019, section 3): attention by relative position, to
[CLS], [SEP] and punctuation, and entropy per layer; the declared hypotheses' tests and the paper's claims they
decide, with the registry's verdicts (``claims.csv``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from headstats.analyses.surface import figures
from headstats.analyses.surface.tables import SURFACE, SURFACE_TESTS
from headstats.report.blocks import figure_tag
from headstats.report.figures import draw_figure
from headstats.report.sections import claim_lines, head_list, tested_how
from headstats.stats.hypotheses import passing_heads
from headstats.tables import RunTables


def surface_claims(tests: pd.DataFrame) -> list[str]:
    """The counts behind the surface claims' verdicts, per model and data set, one line each: how many heads pass
    each declared hypothesis of ``surface_tests.csv``. A description, not a verdict: the verdicts are the
    registry's (:func:`headstats.report.sections.claim_lines`), stated once above these lines."""
    lines = []
    for (model, dataset), part in tests.groupby(["model", "dataset"], sort=False):
        passed = part[part["reject"].fillna(False).astype(bool)]
        where = f"{model} on {dataset}"
        for measure, what in (("prev", "previous"), ("next", "next")):
            hyp = part[part["measure"] == measure]
            if hyp.empty:
                continue
            thr = float(hyp["threshold"].iloc[0])
            held = passed[passed["measure"] == measure]
            lines.append(f"- {what} token, {where} (per head H0: mean {measure} <= {thr:g}; {tested_how(part)}): "
                         f"{len(held)} head(s) pass ({head_list(held)}).")
        hyp = part[part["measure"] == "entropy_ratio"]
        if not hyp.empty:
            thr = float(hyp["threshold"].iloc[0])
            first = int(hyp["layer"].min())
            layer0 = hyp[hyp["layer"] == first]
            held0 = layer0[layer0["reject"].fillna(False).astype(bool)]
            others = hyp[hyp["layer"] != first]
            held_other = others[others["reject"].fillna(False).astype(bool)]
            share0 = len(held0) / max(len(layer0), 1)
            share_other = len(held_other) / max(len(others), 1)
            lines.append(
                f"- broad attention, {where} (per head H0: mean entropy / ln n <= {thr:g}; {tested_how(part)}): "
                f"{len(held0)} of {len(layer0)} heads of layer {first} pass ({share0:.0%}), {len(held_other)} of "
                f"{len(others)} in the other layers ({share_other:.0%}).")
    return lines


def surface_section(report: Any, root: Path, tables: RunTables) -> None:
    """Surface patterns by layer (Clark et al. Figures 1, 2, 4), the tests and the paper's claims."""
    surface = tables[SURFACE]
    tests = tables.get(SURFACE_TESTS)
    report.heading("Surface patterns (Clark et al. 2019)")
    report.text(
        "Per head, the mean attention to the previous, current and next piece, to [CLS], to [SEP] and to "
        "\".\" and \",\", averaged over each input's queries, then over inputs; and the row entropy against the "
        "uniform reference ln n (METHODS 2.1). Per-input values are kept, so each declared hypothesis (protocol "
        "key `analysis_options.surface.hypotheses`) is tested per head, one-sided, with the protocol's test and "
        "correction: "
        "`surface_tests.csv` (column `role` is the hypothesis, `measure` and `threshold` what it tests). Every "
        "head: `surface.csv`."
    )
    if tests is not None and len(tests):
        report.heading("What the paper claims, tested", level=3)
        verdicts = claim_lines(tables, ("previous_token_heads", "next_token_heads", "broad_first_layer",
                                        "sep_middle_layers"))
        if verdicts:  # each claim's verdict once, from the registry; the counts below are its detail
            report.text("The verdicts, tested over heads (claims.csv):\n\n" + "\n".join(verdicts))
        report.text("Detail, per model and data set: the heads that pass each declared hypothesis (counts, not "
                    "verdicts):\n\n" + "\n".join(surface_claims(tests)))
        report.table(passing_heads(tests), "Heads that pass each declared hypothesis (layer-head, 0-indexed).",
                     max_rows=60, csv="surface_tests.csv", fold=False)
    for (model, dataset), part in surface.groupby(["model", "dataset"], sort=False):
        tag = figure_tag(model, dataset)
        t = None if tests is None else tests[(tests["model"] == model) & (tests["dataset"] == dataset)]
        where = f"{model} on {dataset}"
        report.heading(f"Surface patterns: {where}", level=3)
        report.figure(draw_figure(root, f"surface_position_{tag}", figures.surface_by_layer, part, ["prev", "self", "next"], tests=t,
                                             title=f"attention by relative position: {where}"),
                      "Attention to the previous, current and next piece: a point per head at its layer, filled when "
                      "the head passes its hypothesis; the line joins the layer means. Heads near 1 attend almost "
                      "only to that neighbour (Clark et al. Figure 1).", alt=f"relative position, {where}")
        report.figure(draw_figure(root, f"surface_kinds_{tag}", figures.surface_by_layer, part, ["cls", "sep", "punct"], tests=t,
                                             title=f"attention to [CLS], [SEP] and punctuation: {where}"),
                      "Attention to [CLS], to every [SEP] and to \".\"/\",\" per head by layer (Clark et al. Figure 2): "
                      "look for the layers where [SEP] takes most of the mass.", alt=f"token kinds, {where}")
        report.figure(draw_figure(root, f"surface_sep_{tag}", figures.surface_by_layer, part, ["sep_to_sep", "other_to_sep"],
                                             title=f"[SEP] -> [SEP] against other -> [SEP]: {where}"),
                      "Mass on [SEP] from [SEP] queries (left) and from every other query (right): when the left is "
                      "much higher, heads park [SEP]'s attention on itself (a no-op), as Clark et al. argue.",
                      alt=f"sep to sep, {where}")
        report.figure(draw_figure(root, f"surface_entropy_{tag}", figures.entropy_by_layer, part, tests=t, title=f"attention entropy: {where}"),
                      "Mean row entropy (left; filled: passes the broad-attention hypothesis) and the [CLS] row's "
                      "entropy (right) per head by layer; dashed: uniform attention (mean ln n). Points near the "
                      "line attend broadly (Clark et al. Figure 4).", alt=f"entropy, {where}")
    report.table(surface, "Surface measures of every head (means over inputs).", max_rows=30, csv="surface.csv",
                 fold=True)
