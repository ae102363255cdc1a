r"""The dependency analysis' finish step: Table 1 of Clark et al. (2019): per relation, the best head against the
best fixed offset, tested on words clustered by sentence (METHODS 2.3; the tests: :mod:`headstats.stats.accuracy`).

The head and the offset are chosen on one half of the inputs and tested on the other (``selection: split``), so the
choice does not inflate the test; ``selection: same`` chooses and tests on every input, as the paper did."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from headstats.analyses.dependency.options import DependencyOptions
from headstats.analyses.dependency.tables import DEPENDENCY_COUNTS, DEPENDENCY_HEADS, DEPENDENCY_TABLE
from headstats.stats.accuracy import PAIRED_TESTS, cluster_ratio_interval, paired_exact_test, proportion_interval
from headstats.stats.corrections import correct_within_families, family_labels, reject
from headstats.stats.options import TestOptions
from headstats.stats.signflip import abs_count_columns, signflip_pvalues
from headstats.tables import RunTables


def _best(frame: pd.DataFrame, value: str) -> pd.Series:
    """The row of highest ``value``; ties: the first row (layer, head, direction order)."""
    return frame.loc[frame[value].to_numpy().argmax()] if len(frame) else pd.Series(dtype=object)


def dependency_table(counts: pd.DataFrame, *, min_count: int = 100, selection: str = "split",
                     alternative: str = "greater", correction: str = "holm", alpha: float = 0.05,
                     confidence: float = 0.95, test: str = "signflip_sentences", seed: int = 0) -> pd.DataFrame:
    r"""Table 1 of Clark et al. (2019) with a paired exact test of each best head against the best offset.

    Per (model, dataset, relation) with at least ``min_count`` words: the head and direction of highest
    accuracy on all words and the offset of highest accuracy on all words (the paper's layout: ``relation,
    n, layer, head, direction, accuracy, offset, offset_accuracy``), with Wilson intervals. Then the test:
    with ``selection="split"`` a head, direction and offset are chosen on the *choose* half (inputs of even
    position) and the test uses only the *test* half (odd position), so the head is not tested on the data
    that picked it; with ``"same"`` both use all words (what the paper's numbers do; the selection then
    inflates the test). The p-values of one (model, dataset) are corrected together over its relations.

    The test (``test``): ``signflip_sentences`` (default) takes the sentence as the unit: per sentence the
    words the head gets right minus those the offset gets right, tested by sign flips
    (:func:`headstats.stats.signflip.signflip_pvalues`, named in ``method``: ``binomial`` when every non-zero
    ``|d|`` is 1, ``exact`` (the convolution of the law) when the law's half-support ``sum |d|`` is at most
    :data:`~headstats.stats.signflip.MAX_EXACT_SUPPORT`, ``monte_carlo`` (:data:`~headstats.stats.signflip.N_DRAWS`
    draws seeded with ``seed``) past that, ``normal`` only when a sentence has ``|d|`` above the 64 counted);
    ``mcnemar_words`` is McNemar's exact test on the discordant words, which
    treats the words of one sentence as independent (anti-conservative when they cluster, METHODS 5.3). The
    intervals of ``accuracy`` and ``offset_accuracy`` are clustered on sentences
    (:func:`cluster_ratio_interval`) with ``signflip_sentences``, Wilson's with ``mcnemar_words``.

    Parameters
    ----------
    counts : DataFrame
        ``dependency_counts`` of :class:`headstats.analyses.dependency.collect.DependencyAccuracy`.
    """
    if test not in PAIRED_TESTS:
        raise ValueError(f"test must be one of {', '.join(PAIRED_TESTS)}, not {test!r}")
    if test == "signflip_sentences" and len(counts) and "d2_test" not in counts:  # no words (no parse): no table
        raise ValueError("the sentence-level test needs the per-sentence sums of dependency_counts (d2_choose, "
                         "d2_test), which this table lacks (counted by an older headstats): re-run the analysis "
                         "or choose test: mcnemar_words")
    columns = ["relation", "n", "layer", "head", "direction", "accuracy", "offset", "offset_accuracy"]
    rows = []
    for (model, dataset, relation), cell in (counts.groupby(["model", "dataset", "relation"], sort=False)
                                             if len(counts) else ()):
        row = _relation_row(cell, selection=selection)
        if row["n"] < min_count:
            continue
        rows.append({"model": model, "dataset": dataset, "relation": relation, **row})
    if not rows:
        return pd.DataFrame(columns=columns + ["model", "dataset", "p_unc", "p_corr", "reject"])
    table = pd.DataFrame(rows)
    for what, k in (("accuracy", "correct"), ("offset_accuracy", "offset_correct")):
        if test == "signflip_sentences":
            part = "head" if what == "accuracy" else "offset"
            table[f"{what}_ci_low"], table[f"{what}_ci_high"] = cluster_ratio_interval(
                table[k], table["n"], table[f"{part}_c2"], table[f"{part}_cn"], table["nn"], table["n_sentences"],
                confidence=confidence)
        else:
            table[f"{what}_ci_low"], table[f"{what}_ci_high"] = proportion_interval(table[k], table["n"],
                                                                                    confidence=confidence)
    table["test"] = test
    table["alternative"] = alternative
    if test == "signflip_sentences":
        abs_cols = abs_count_columns(table.columns, "absd", suffix="_tested")
        table["p_unc"], table["method"] = signflip_pvalues(
            table["head_only"] - table["offset_only"], table["d2_tested"],
            table[abs_cols].to_numpy() if abs_cols else None, alternative=alternative, seed=seed)
    else:
        table["p_unc"] = paired_exact_test(table["head_only"], table["offset_only"], alternative=alternative)
        table["method"] = "binomial"
    table["p_unc"] = table["p_unc"].where(table["n_tested"] > 0)
    table["family"] = family_labels(table, ["model", "dataset"])
    table["p_corr"], _ = correct_within_families(table["p_unc"], table["family"], correction=correction, alpha=alpha)
    table["correction"] = correction
    table["alpha"] = alpha
    table["confidence"] = confidence
    table["reject"] = reject(table["p_corr"].to_numpy(), alpha)
    first = [*columns, "model", "dataset"]
    return table[first + [c for c in table.columns if c not in first]].reset_index(drop=True)


def _relation_row(cell: pd.DataFrame, *, selection: str) -> dict[str, Any]:
    """The paper's numbers and the test counts of one relation (rows: layer, head, direction, offset)."""
    cell = cell.reset_index(drop=True)
    n = int(cell["n_choose"].iat[0] + cell["n_test"].iat[0])
    cell = cell.assign(correct=cell["head_correct_choose"] + cell["head_correct_test"],
                       offset_correct=cell["offset_correct_choose"] + cell["offset_correct_test"])
    best = _best(cell, "correct")
    best_offset = _best(cell, "offset_correct")
    if selection == "split":
        chooser, tested = "choose", ["test"]
    else:
        chooser, tested = None, ["choose", "test"]
    pick = best if chooser is None else _best(cell, f"head_correct_{chooser}")
    pick_offset = best_offset if chooser is None else _best(cell, f"offset_correct_{chooser}")
    one = cell[(cell["layer"] == pick["layer"]) & (cell["head"] == pick["head"])
               & (cell["direction"] == pick["direction"]) & (cell["offset"] == pick_offset["offset"])].iloc[0]
    n_tested = int(sum(one[f"n_{h}"] for h in tested))
    head_ok = int(sum(one[f"head_correct_{h}"] for h in tested))
    offset_ok = int(sum(one[f"offset_correct_{h}"] for h in tested))
    ratio = (lambda k: k / n_tested) if n_tested else (lambda k: np.nan)
    return {
        "n": n, "layer": int(best["layer"]), "head": int(best["head"]), "direction": best["direction"],
        "accuracy": best["correct"] / n if n else np.nan, "offset": int(best_offset["offset"]),
        "offset_accuracy": best_offset["offset_correct"] / n if n else np.nan,
        "correct": int(best["correct"]), "offset_correct": int(best_offset["offset_correct"]),
        "selection": selection, "tested_layer": int(pick["layer"]), "tested_head": int(pick["head"]),
        "tested_direction": pick["direction"], "tested_offset": int(pick_offset["offset"]),
        "n_tested": n_tested, "tested_accuracy": ratio(head_ok), "tested_offset_accuracy": ratio(offset_ok),
        "head_only": int(sum(one[f"head_only_{h}"] for h in tested)),
        "offset_only": int(sum(one[f"offset_only_{h}"] for h in tested)),
        **_sentence_sums(cell, best, best_offset, one, tested),
    }


def _sentence_sums(cell: pd.DataFrame, best: pd.Series, best_offset: pd.Series, one: pd.Series,
                   tested: list[str]) -> dict[str, float]:
    """The per-sentence sums behind the clustered interval of the best head's and the best offset's accuracy
    (all words) and behind the sentence-level test (the tested halves); empty without them (older tables)."""
    if "d2_test" not in cell:
        return {}
    halves = list(HALVES_OF_COUNTS)
    head_row = cell[(cell["layer"] == best["layer"]) & (cell["head"] == best["head"])
                    & (cell["direction"] == best["direction"])].iloc[0]
    offset_row = cell[cell["offset"] == best_offset["offset"]].iloc[0]
    return {
        "n_sentences": float(sum(head_row[f"n_sentences_{h}"] for h in halves)),
        "nn": float(sum(head_row[f"nn_{h}"] for h in halves)),
        "head_c2": float(sum(head_row[f"head_c2_{h}"] for h in halves)),
        "head_cn": float(sum(head_row[f"head_cn_{h}"] for h in halves)),
        "offset_c2": float(sum(offset_row[f"offset_c2_{h}"] for h in halves)),
        "offset_cn": float(sum(offset_row[f"offset_cn_{h}"] for h in halves)),
        "d2_tested": float(sum(one[f"d2_{h}"] for h in tested)),
        **{f"absd{m}_tested": int(np.nansum([one[f"absd{m}_{h}"] for h in tested]))  # NaN: a |d| the data set lacks
           for m in range(1, len(abs_count_columns(cell.columns, "absd", suffix="_test")) + 1)},
        "n_sentences_tested": float(sum(one[f"n_sentences_{h}"] for h in tested)),
    }


#: The halves of ``dependency_counts`` (inputs of even and odd position).
HALVES_OF_COUNTS = ("choose", "test")


def finish_dependency(tables: RunTables, statistics: TestOptions, options: DependencyOptions,
                      seed: int = 0) -> dict[str, pd.DataFrame]:
    """The study's ``finish`` step of the ``dependency`` analysis: intervals on every head's accuracy and
    ``dependency_table`` (:func:`dependency_table`) with the ``statistics``' correction, alpha and confidence
    and the analysis' ``options`` (``DependencyOptions``: test, min_count, selection, alternative).
    Returns the tables to add or replace (``dependency_heads``, ``dependency_table``)."""
    st = statistics
    out: dict[str, pd.DataFrame] = {}
    heads = tables[DEPENDENCY_HEADS].copy()
    if options.test == "signflip_sentences" and "c2" in heads:
        heads["ci_low"], heads["ci_high"] = cluster_ratio_interval(heads["correct"], heads["n"], heads["c2"],
                                                                   heads["cn"], heads["nn"], heads["n_sentences"],
                                                                   confidence=st.confidence)
    else:
        heads["ci_low"], heads["ci_high"] = proportion_interval(heads["correct"], heads["n"], confidence=st.confidence)
    out[DEPENDENCY_HEADS.name] = heads
    out[DEPENDENCY_TABLE.name] = dependency_table(
        tables[DEPENDENCY_COUNTS], min_count=options.min_count, selection=options.selection,
        alternative=options.alternative, correction=st.correction, alpha=st.alpha, confidence=st.confidence,
        test=options.test, seed=seed)
    return out
