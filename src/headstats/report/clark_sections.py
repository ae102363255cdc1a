"""Report sections of the Clark et al. (2019) analyses that draw figures (the analyses name them by reference,
since the analyses layer may not import the report or the plots).

Each section explains every figure and table in a sentence, lists the heads that pass each test, and states
the paper's claim with its test and whether it holds on the model and data set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from headstats.report.blocks import figure_tag, save_figure


def _head(layer: int, head: int) -> str:
    return f"{int(layer)}-{int(head)}"


def dependency_section(report: Any, root: Path, tables: Mapping[str, pd.DataFrame]) -> None:
    """Dependency relations in single heads: Table 1 with the paired tests, figures, the claim checked."""

    table = tables.get("dependency_table", pd.DataFrame())
    heads = tables["dependency_heads"]
    report.heading("Dependency relations in single heads (Clark et al. 2019)")
    report.text(
        "On word-level attention (a split word's row is the mean of its pieces' rows, attention to it the sum "
        "over its pieces), a head predicts for each word the other word it attends to most ([CLS] and [SEP] "
        "left out), in two directions: `dependent_to_head` (the word's row) and `head_to_dependent` (the word "
        "that attends most to it). A head's accuracy for a relation is the share of its words whose prediction "
        "is their gold head; the baseline predicts the word at a fixed offset (-3..+2). Root words are not "
        "counted (they have no head word); `all` counts every other word, `all_nopunct` leaves out `punct`. "
        "Labels are UD relations with subtypes folded in (`nsubj:pass` is `nsubj`), except that the direct "
        "object is shown as `dobj` (UD `obj`) and `nmod:poss` as `poss`, the paper's names. Heads are "
        "`layer-head`, both 0-based (the paper counts from 1: its head 8-11 is 7-10 here). Accuracies of every "
        "head, with Wilson intervals: `dependency_heads.csv`."
    )
    if table.empty:
        report.text("No relation had enough words for Table 1 (`analysis_options.dependency.min_count`).")
        return
    for (model, dataset), part in table.groupby(["model", "dataset"], sort=False):
        _dependency_block(report, root, model, dataset, part, heads[(heads["model"] == model)
                                                                   & (heads["dataset"] == dataset)])


def _dependency_block(report: Any, root: Path, model: str, dataset: str, part: pd.DataFrame,
                      heads: pd.DataFrame) -> None:
    from headstats.plots import dependency_plots

    report.heading(f"{model} on {dataset}", level=3)
    first = part.iloc[0]
    split = first["selection"] == "split"
    how = ("the head, direction and offset are chosen on the inputs of even position and tested on those of odd "
           "position, so no head is tested on the words that chose it" if split else
           "the head and offset are chosen and tested on the same words, which favours the head (the test is "
           "optimistic)")
    shown = part.assign(head=[_head(a, b) for a, b in zip(part["layer"], part["head"])],
                        tested_head=[_head(a, b) for a, b in zip(part["tested_layer"], part["tested_head"])])
    cols = ["relation", "n", "head", "direction", "accuracy", "accuracy_ci_low", "accuracy_ci_high", "offset",
            "offset_accuracy", "tested_head", "tested_offset", "n_tested", "tested_accuracy",
            "tested_offset_accuracy", "head_only", "offset_only", "p_unc", "p_corr", "reject"]
    report.table(shown[cols], f"Table 1 of Clark et al. (2019) for {model} on {dataset}: per relation with at "
                 "least `min_count` words, the best head on all words and its accuracy, and the best offset and "
                 f"its accuracy. The test columns: {how}; `head_only` and `offset_only` are the words only one "
                 f"of the two gets right, and p is McNemar's exact test ({first['alternative']}: the head is more "
                 f"accurate), corrected with {first['correction']} over the relations of this model and data "
                 "set.", max_rows=60, csv="dependency_table.csv")
    fig = dependency_plots.dependency_table_plot(part, title=f"{model} / {dataset}")
    report.figure(save_figure(fig, root, f"dependency_table__{figure_tag(model, dataset)}"),
                  "Each relation's best head (filled) and best offset (open) with their intervals; a * after the "
                  "relation means the chosen head beat the chosen offset on the test words after correction.",
                  alt="best head against best offset per relation")
    relations = [r for r in part.sort_values("n", ascending=False)["relation"] if not r.startswith("all")][:8]
    fig = dependency_plots.best_per_layer_plot(heads, relations, title=f"{model} / {dataset}")
    report.figure(save_figure(fig, root, f"dependency_layers__{figure_tag(model, dataset)}"),
                  "The best head of each layer for the eight most frequent relations: where in depth each "
                  "relation is attended to.", alt="best head per layer and relation")
    rel = part[~part["relation"].str.startswith("all")]
    passed = rel[rel["reject"]]
    failed = rel[~rel["reject"]]
    listing = "; ".join(f"{r.relation}: {_head(r.tested_layer, r.tested_head)} {r.tested_direction} "
                        f"({r.tested_accuracy:.3f} against offset {r.tested_offset:+d} at {r.tested_offset_accuracy:.3f})"
                        for r in passed.itertuples()) or "none"
    verdict = ("holds" if len(passed) else "does not hold") + f" for {len(passed)} of {len(rel)} relations"
    report.text(
        f"**Claim (Clark et al. 2019): for a relation there is a head that beats the best fixed offset.** Test: "
        f"McNemar's exact test of the chosen head against the chosen offset on the same words, "
        f"{first['alternative']}, {first['correction']}-corrected over relations at alpha = {first['alpha']:g}. "
        f"On {model} / {dataset} it {verdict}. Heads that pass: {listing}. "
        + (f"Not shown better than the offset: {', '.join(failed['relation'])}." if len(failed) else "")
    )


def gradients_section(report: Any, root: Path, tables: Mapping[str, pd.DataFrame]) -> None:
    """Gradient importance: the per-layer figure and table, or the reason the analysis was skipped."""
    from headstats.plots import gradient_plots

    report.heading("Gradient importance of attention (Clark et al. 2019)")
    report.text(
        "The magnitude of the gradient of the model's loss with respect to each attention weight, averaged per "
        "input over the weights on [CLS], on [SEP], on \".\" and \",\", and on every other token, then over "
        "inputs. Clark et al. found attention to [SEP] large but its gradient small after the middle layers: "
        "attending to [SEP] there works as a no-op. Every head: `gradients.csv`."
    )
    skipped = tables.get("gradients_skipped")
    if skipped is not None and len(skipped):
        for row in skipped.itertuples():
            report.text(f"**Skipped** for {row.model} on {row.dataset}: {row.reason}.")
    grads = tables.get("gradients")
    if grads is None or grads.empty:
        return
    for (model, dataset), part in grads.groupby(["model", "dataset"], sort=False):
        fig = gradient_plots.gradient_layers_plot(part, title=f"{model} / {dataset}")
        report.figure(save_figure(fig, root, f"gradients__{figure_tag(model, dataset)}"),
                      f"Mean |dL/dA| per layer by the kind of token attended to ({part['loss'].iat[0]}); a line "
                      "for [SEP] far below the others means attention to [SEP] barely changes the loss.",
                      alt="gradient importance per layer")
        per_layer = part.pivot_table(index="layer", columns="target", values="mean_abs_grad", aggfunc="mean")
        report.table(per_layer.reset_index(), f"{model} / {dataset}: mean |dL/dA| over each layer's heads.",
                     csv="gradients.csv")


def coreference_section(report: Any, root: Path, tables: Mapping[str, pd.DataFrame]) -> None:
    """Antecedent selection: best head per mention type against the baselines, and the heads that pass."""
    table = tables["coreference"]
    tests = tables.get("coreference_tests", pd.DataFrame())
    report.heading("Coreference: antecedent selection (Clark et al. 2019)")
    report.text(
        "For each mention with an antecedent in the same input, a head selects the candidate mention its head "
        "word attends to most (word-level attention); it is right when that candidate is coreferent. "
        "Baselines: the nearest candidate, and the nearest candidate with the same head word. Heads are "
        "`layer-head`, 0-based (the paper's best, 5-4, is 4-3 here). Every head with Wilson intervals: "
        "`coreference.csv`; every head tested against each baseline (McNemar's exact test, one-sided, "
        "corrected over the heads): `coreference_tests.csv`."
    )
    for (model, dataset), part in table.groupby(["model", "dataset"], sort=False):
        rows = []
        for kind, cell in part.groupby("mention_type", sort=False):
            heads = cell[cell["predictor"] == "head"]
            if heads.empty or int(heads["n"].iat[0]) == 0:
                continue
            best = heads.loc[heads["accuracy"].idxmax()]
            base = cell[cell["predictor"] != "head"].set_index("predictor")["accuracy"]
            beat = {b: "none" for b in base.index}
            if len(tests):
                passing = tests[(tests["model"] == model) & (tests["dataset"] == dataset)
                                & (tests["mention_type"] == kind) & tests["reject"]]
                beat = {b: ", ".join(_head(r.layer, r.head) for r in passing[passing["baseline"] == b].itertuples())
                        or "none" for b in base.index}
            rows.append({"mention_type": kind, "n": int(best["n"]), "best_head": _head(best["layer"], best["head"]),
                         "accuracy": best["accuracy"], "ci_low": best["ci_low"], "ci_high": best["ci_high"],
                         **{f"{b}_accuracy": v for b, v in base.items()},
                         **{f"heads_beating_{b}": v for b, v in beat.items()}})
        if not rows:
            report.text(f"{model} / {dataset}: no query (no coreference annotation in this data set).")
            continue
        shown = pd.DataFrame(rows)
        report.table(shown, f"{model} on {dataset}: per mention type, the most accurate head (chosen on the same "
                     "queries: its accuracy is optimistic) against the baselines, and every head that beats each "
                     "baseline in the corrected test.", csv="coreference.csv")
        overall = shown[shown["mention_type"] == "all"]
        if len(overall):
            r = overall.iloc[0]
            holds = r["heads_beating_nearest_mention"] != "none"
            report.text(
                f"**Claim (Clark et al. 2019): a head selects antecedents far better than the nearest-mention "
                f"baseline.** Test: McNemar's exact test of every head against the baseline, one-sided, corrected "
                f"over heads. On {model} / {dataset} it {'holds' if holds else 'does not hold'}: best head "
                f"{r['best_head']} at {r['accuracy']:.3f} against {r['nearest_mention_accuracy']:.3f}; heads that "
                f"pass: {r['heads_beating_nearest_mention']}.")


#: UAS of Clark et al. (2019), BERT-base on WSJ (their Table 3), for the report.
PAPER_UAS = {"right_branching": 26, "distance_and_words": 58, "attention_only": 61, "attention_and_words": 77}


def probing_section(report: Any, root: Path, tables: Mapping[str, pd.DataFrame]) -> None:
    """Probing classifiers: UAS of each probe with intervals and the tests against the baselines."""
    probes = tables["probes"]
    report.heading("Probing classifiers over all heads (Clark et al. 2019)")
    report.text(
        "Four ways of attaching every word to its head, scored by unlabeled attachment score (UAS, punctuation "
        "left out) on held-out inputs (every fifth input of the file); the probes are trained with Adam (lr "
        "0.002), one sentence per step, one epoch, seeded. `attention_only` combines every head's attention in "
        "both directions with one weight each; `attention_and_words` makes those weights functions of the two "
        "words' vectors; `distance_and_words` (baseline) sees only the words and their distance; "
        "`right_branching` attaches each word to the next. Word vectors: the model's input embeddings unless a "
        "file was given (column `vectors`). p-values: McNemar's exact test, one-sided, on the same held-out "
        "words. All rows: `probes.csv`."
    )
    shown = probes.assign(paper_uas=probes["probe"].map(PAPER_UAS))
    cols = [c for c in ["model", "dataset", "probe", "vectors", "n_words", "uas", "ci_low", "ci_high", "paper_uas",
                        "p_corr_vs_right_branching", "p_corr_vs_distance_and_words"] if c in shown.columns]
    report.table(shown[cols], "UAS of each probe with its Wilson interval, the paper's UAS (BERT-base on WSJ, in "
                 "percent), and the corrected p-value of each probe against each baseline.", csv="probes.csv")
    for (model, dataset), part in probes.groupby(["model", "dataset"], sort=False):
        att = part.set_index("probe")
        if "attention_only" not in att.index or "p_corr_vs_right_branching" not in att.columns:
            continue
        p = att.loc["attention_only", "p_corr_vs_right_branching"]
        alpha = float(att["alpha"].iat[0])
        holds = bool(p < alpha)
        report.text(
            f"**Claim (Clark et al. 2019): attention alone carries much syntax — the attention-only probe beats "
            f"right-branching.** Test: McNemar's exact test on the held-out words, one-sided, "
            f"{att['correction'].iat[0]}-corrected. On {model} / {dataset} it {'holds' if holds else 'does not hold'}: "
            f"UAS {att.loc['attention_only', 'uas']:.3f} against {att.loc['right_branching', 'uas']:.3f} "
            f"(corrected p = {p:.3g}).")
