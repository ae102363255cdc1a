"""Report section of the ``dependency`` analysis (Clark et al. 2019, section 4.2): Table 1 with the paired tests,
the best head per relation and per layer, and the claim's verdict (the registry's, ``claims.csv``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from headstats.analyses.dependency.tables import DEPENDENCY_HEADS, DEPENDENCY_TABLE
from headstats.report.blocks import figure_tag
from headstats.report.figures import draw_figure
from headstats.report.sections import claim_lines, detail_text, head_label
from headstats.tables import RunTables


#: The law each sign-flip p-value was referred to (``method`` of ``dependency_table``), in words.
LAW_WORDS = {"binomial": "the binomial law", "exact": "the exact law",
             "monte_carlo": "99,999 Monte Carlo draws of the law",
             "normal": "the normal approximation (a sentence differs by more than 64 words)"}


def _test_words(part: pd.DataFrame) -> str:
    """The paired test of a Table 1 (its rows of one model and data set), in words, with the laws its p-values
    were referred to."""
    first = part.iloc[0]
    if str(first.get("test", "")) == "signflip_sentences":
        methods = part["method"].value_counts() if "method" in part else pd.Series(dtype=int)
        laws = ", ".join(f"{LAW_WORDS[m]} for {k} relation{'s' * (k != 1)}" for m, k in methods.items()
                         if m in LAW_WORDS)
        return ("the sign-flip test over sentences (per sentence, words the head gets right minus words the "
                "offset gets right; the sentence is the unit; p from " + (laws or "no discordant sentence")
                + ", column `method` of `dependency_table.csv`; intervals clustered on sentences)")
    return "McNemar's exact test on words (each word counted as independent)"


def dependency_section(report: Any, root: Path, tables: RunTables) -> None:
    """Dependency relations in single heads: Table 1 with the paired tests, figures, the claim checked."""

    table = tables.get(DEPENDENCY_TABLE, pd.DataFrame())
    heads = tables[DEPENDENCY_HEADS]
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
        "`layer-head`, both 0-based (the paper counts from 1, and its heads, such as 8-11, are heads of BERT-base: they name no head of a model of another shape). Accuracies of every "
        "head, with Wilson intervals: `dependency_heads.csv`."
    )
    if table.empty:
        report.text("No relation had enough words for Table 1 (`analysis_options.dependency.min_count`).")
        return
    for (model, dataset), part in table.groupby(["model", "dataset"], sort=False):
        _dependency_block(report, root, model, dataset, part, heads[(heads["model"] == model)
                                                                   & (heads["dataset"] == dataset)])
        if verdicts := claim_lines(tables, ("head_beats_offset",), model=model, dataset=dataset):
            report.text("\n".join(verdicts))


def _dependency_block(report: Any, root: Path, model: str, dataset: str, part: pd.DataFrame,
                      heads: pd.DataFrame) -> None:
    from headstats.analyses.dependency import figures

    report.heading(f"{model} on {dataset}", level=3)
    first = part.iloc[0]
    split = first["selection"] == "split"
    how = ("the head, direction and offset are chosen on the inputs of even position and tested on those of odd "
           "position, so no head is tested on the words that chose it" if split else
           "the head and offset are chosen and tested on the same words, which favours the head (the test is "
           "optimistic)")
    shown = part.assign(head=[head_label(a, b) for a, b in zip(part["layer"], part["head"])],
                        tested_head=[head_label(a, b) for a, b in zip(part["tested_layer"], part["tested_head"])])
    cols = ["relation", "n", "head", "direction", "accuracy", "accuracy_ci_low", "accuracy_ci_high", "offset",
            "offset_accuracy", "tested_head", "tested_offset", "n_tested", "tested_accuracy",
            "tested_offset_accuracy", "head_only", "offset_only", "p_unc", "p_corr", "reject"]
    report.table(shown[cols], f"Table 1 of Clark et al. (2019) for {model} on {dataset}: per relation with at "
                 "least `min_count` words, the best head on all words and its accuracy, and the best offset and "
                 f"its accuracy. The test columns: {how}; `head_only` and `offset_only` are the words only one "
                 f"of the two gets right, and p is {_test_words(part)} ({first['alternative']}: the head is more "
                 f"accurate), corrected with {first['correction']} over the relations of this model and data "
                 "set.", max_rows=60, csv="dependency_table.csv",
                 latex=_dependency_latex(shown, f"dependency_table_{figure_tag(model, dataset)}.tex", model,
                                         dataset, first))
    report.figure(draw_figure(root, f"dependency_table_{figure_tag(model, dataset)}", figures.dependency_table_plot, part, title=f"{model} / {dataset}"),
                  "Each relation's best head (filled) and best offset (open) with their intervals; a * after the "
                  "relation means the chosen head beat the chosen offset on the test words after correction.",
                  alt="best head against best offset per relation")
    relations = [r for r in part.sort_values("n", ascending=False)["relation"] if not r.startswith("all")][:8]
    report.figure(draw_figure(root, f"dependency_layers_{figure_tag(model, dataset)}", figures.best_per_layer_plot, heads, relations, title=f"{model} / {dataset}"),
                  "The best head of each layer for the eight most frequent relations: where in depth each "
                  "relation is attended to.", alt="best head per layer and relation")
    rel = part[~part["relation"].str.startswith("all")]
    passed = rel[rel["reject"]]
    failed = rel[~rel["reject"]]
    listing = "; ".join(f"{r.relation}: {head_label(r.tested_layer, r.tested_head)} {r.tested_direction} "
                        f"({r.tested_accuracy:.3f} against offset {r.tested_offset:+d} at {r.tested_offset_accuracy:.3f})"
                        for r in passed.itertuples()) or "none"
    report.text(detail_text("per relation", (
        f"{_test_words(part)}, chosen head against chosen offset on the same words, "
        f"{first['alternative']}, {first['correction']}-corrected over relations at alpha = {first['alpha']:g}. "
        f"On {model} / {dataset}, {len(passed)} of {len(rel)} relations have a head that beats its offset: {listing}. "
        + (f"Not shown better than the offset: {', '.join(failed['relation'])}." if len(failed) else ""))))


def _dependency_latex(shown: pd.DataFrame, file: str, model: str, dataset: str, first) -> Any:
    """A Table 1 as a paper prints it: the best head and offset on all words, then the test."""
    from headstats.report.latex import LatexTable

    names = {"relation": "Relation", "n": "$n$", "head": "Head", "accuracy": "Head acc.", "offset": "Offset",
             "offset_accuracy": "Offset acc.", "tested_head": "Tested head", "tested_accuracy": "Tested acc.",
             "tested_offset_accuracy": "Tested offset acc.", "p_corr": "$p$ (corr.)"}
    test = _test_words(shown).split(" (")[0]
    return LatexTable(file, f"{test[0].upper()}{test[1:]}, one-sided ({first['alternative']}: the head is more "
                      f"accurate than the offset), {first['correction']}-corrected over the relations: Table 1 of "
                      f"Clark et al. (2019) for {model} on {dataset}, the best head and offset on all words and "
                      "the chosen pair's accuracies on the test words (heads layer-head, 0-based).",
                      columns={k: v for k, v in names.items() if k in shown})
