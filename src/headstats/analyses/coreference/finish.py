"""The coreference analysis' finish step: every head against each baseline (McNemar's exact test on queries, or
the sign-flip test over inputs), corrected within (model, data set, mention type, baseline) (METHODS 2.3;
:mod:`headstats.stats.accuracy`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.analyses.coreference.tables import COREFERENCE, COREFERENCE_TESTS
from headstats.stats.accuracy import counted_only, paired_exact_test, proportion_interval
from headstats.stats.corrections import correct_within_families, family_labels, reject
from headstats.stats.options import TestOptions
from headstats.stats.signflip import abs_count_columns, signflip_pvalues
from headstats.tables import RunTables


def coreference_tests(table: pd.DataFrame, *, correction: str = "holm", alpha: float = 0.05,
                      seed: int = 0) -> pd.DataFrame:
    """Every head against each baseline of the ``coreference`` table, one-sided ("the head selects antecedents
    more accurately"), corrected over the heads of one (model, dataset, mention_type, baseline).

    Mentions of one input share its text, so the input is the unit: the sign-flip test over inputs of
    ``d = head_only - baseline_only`` from its sums and its counts of ``|d|`` (:func:`headstats.stats.signflip.
    signflip_pvalues`, ``test = signflip_inputs``; ``method``: ``binomial``, ``exact``, ``monte_carlo`` (seeded with
    ``seed``) or, where an input has ``|d|`` above the 64 counted, ``normal``).
    A table without the sums (a state cached before they were kept) gets McNemar's exact test on mentions
    (``mcnemar_exact``), which treats mentions as independent.

    A baseline whose accuracy is exactly 0 or 1 on a (model, dataset, mention type) is degenerate (on GAP the
    same-head-word baseline is 0 by construction: no name shares a pronoun's head word, so it never chooses):
    beating 0 only means being right at all, and 1 cannot be beaten. Its rows are flagged
    (``baseline_degenerate``, with the reason in ``note``), not tested (p NaN, outside the correction's family)
    and never rejected.

    Returns ``model, dataset, mention_type, baseline, layer, head, n, accuracy, baseline_accuracy,
    baseline_degenerate, head_only, baseline_only, test, method, alternative, p_unc, p_corr, correction, family,
    alpha,
    reject, note``.
    """
    heads = table[table["predictor"] == "head"]
    baselines = [c.removeprefix("only_vs_") for c in table.columns if c.startswith("only_vs_")]
    frames = []
    for name in baselines:
        base = table[table["predictor"] == name][["model", "dataset", "mention_type", "accuracy"]]
        part = heads.merge(base.rename(columns={"accuracy": "baseline_accuracy"}),
                           on=["model", "dataset", "mention_type"])
        part = part.assign(baseline=name, head_only=part[f"only_vs_{name}"], baseline_only=part[f"{name}_only"])
        if f"sum_d_vs_{name}" in part:
            part = part.assign(sum_d=part[f"sum_d_vs_{name}"], sum_d2=part[f"sum_d2_vs_{name}"],
                               **{f"absd{m}": part[c] for m, c in
                                  enumerate(abs_count_columns(part.columns, f"absd_vs_{name}_"), start=1)})
        frames.append(part)
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    out["alternative"] = "greater"
    if "sum_d" in out and out["sum_d"].notna().all():  # the input (sentence, document chunk) as the unit
        out["test"] = "signflip_inputs"
        abs_cols = abs_count_columns(out.columns, "absd")
        out["p_unc"], out["method"] = signflip_pvalues(
            out["sum_d"].to_numpy(float), out["sum_d2"].to_numpy(float),
            out[abs_cols].fillna(0).to_numpy() if abs_cols else None, seed=seed)
    else:
        out["test"] = "mcnemar_exact"
        out["p_unc"] = paired_exact_test(out["head_only"], out["baseline_only"]).astype(float)
        out["method"] = "binomial"
    out["p_unc"] = out["p_unc"].where(out["n"] > 0)
    base_acc = out["baseline_accuracy"].astype(float)
    out["baseline_degenerate"] = (out["n"] > 0) & ((base_acc == 0) | (base_acc == 1))
    out["note"] = np.where(out["baseline_degenerate"] & (base_acc == 0),
                           "baseline right on no query (0 by construction, e.g. no candidate shares the head word): "
                           "beating it only means being right at all; not tested",
                           np.where(out["baseline_degenerate"], "baseline right on every query: it cannot be beaten; "
                                    "not tested", ""))
    out["p_unc"] = out["p_unc"].where(~out["baseline_degenerate"])
    out["family"] = family_labels(out, ["model", "dataset", "mention_type", "baseline"])
    out["p_corr"], _ = correct_within_families(out["p_unc"], out["family"], correction=correction, alpha=alpha)
    out["correction"], out["alpha"] = correction, alpha
    out["reject"] = reject(out["p_corr"].to_numpy(), alpha)
    cols = ["model", "dataset", "mention_type", "baseline", "layer", "head", "n", "accuracy", "baseline_accuracy",
            "baseline_degenerate", "head_only", "baseline_only", "test", "method", "alternative", "p_unc", "p_corr",
            "correction", "family", "alpha", "reject", "note"]
    return out[cols].reset_index(drop=True)


def finish_coreference(tables: RunTables, statistics: TestOptions, options: None = None,
                       seed: int = 0) -> dict[str, pd.DataFrame]:
    """The study's ``finish`` step of the ``coreference`` analysis: Wilson intervals and the head tests, on the
    data sets that have mentions with antecedents. Returns the tables to add or replace (``coreference``,
    ``coreference_tests``)."""
    st = statistics
    out: dict[str, pd.DataFrame] = {}
    table = counted_only(tables[COREFERENCE], "n").copy()
    table["ci_low"], table["ci_high"] = proportion_interval(table["correct"], table["n"], confidence=st.confidence)
    out[COREFERENCE.name] = table
    out[COREFERENCE_TESTS.name] = coreference_tests(table, correction=st.correction, alpha=st.alpha, seed=seed)
    return out
