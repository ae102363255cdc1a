"""The tables of the coreference analysis, declared once (:func:`headstats.tables.declare_tables`): its spec registers
them (``register_analysis(..., tables=DECLARED)``) and its other files name them by these specs
(``tables[COREFERENCE]``), never by a string."""

from __future__ import annotations

from headstats.tables import TableSpec, declare_tables

DECLARED = declare_tables("coreference", {
    "coreference": TableSpec(
        "antecedent selection: accuracy of every head per mention type, and of the baselines",
        columns=("model", "dataset", "mention_type", "predictor", "layer", "head", "n", "accuracy", "correct",
                 "ci_low", "ci_high")),
    "coreference_tests": TableSpec(
        "every head against each baseline (McNemar), corrected",
        columns=("model", "dataset", "mention_type", "baseline", "layer", "head", "n", "accuracy",
                 "baseline_accuracy", "test", "p_unc", "p_corr", "reject")),
    "coreference_notes": TableSpec(
        "per model and data set, the queries left out",
        columns=("model", "dataset", "queries_dropped")),
})
COREFERENCE, COREFERENCE_TESTS, COREFERENCE_NOTES = DECLARED.values()
