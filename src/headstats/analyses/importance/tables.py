"""The tables of the importance analysis, declared once (:func:`headstats.tables.declare_tables`): its spec registers
them (``register_analysis(..., tables=DECLARED)``) and its other files name them by these specs
(``tables[IMPORTANCE_TESTS]``), never by a string."""

from __future__ import annotations

from headstats.tables import TableSpec, declare_tables

DECLARED = declare_tables("importance", {
    "importance_tests": TableSpec(
        "one row per head: the one-sided test of its declared hypothesis (mean loss change > 0), "
        "corrected",
        columns=("model", "dataset", "role", "layer", "head", "test", "n", "mean", "sd", "statistic", "p_unc",
                 "p_corr", "reject", "measure", "threshold")),
    "importance": TableSpec(
        "per head, its importance by each measure (ablation, gradient, cosine distance)",
        columns=("model", "dataset", "task", "ablation", "importance_measure", "n", "layer", "head", "importance")),
    "importance_notes": TableSpec(
        "per model and data set, whether it ran task-free or was skipped, with the reason",
        columns=("model", "dataset", "status", "reason")),
    "importance_pruning_inputs": TableSpec(
        "per input and share of heads removed, the task metric (the pruning curve's inputs)"),
    "importance_seeds": TableSpec("per head, its importance over fine-tuning seeds, with the test"),
    "importance_pruning": TableSpec(
        "the pruning curve: the task metric per share of heads removed, with intervals"),
    "importance_removable": TableSpec("the share of heads removable within the tolerance, with its interval"),
})
IMPORTANCE_TESTS, IMPORTANCE, IMPORTANCE_NOTES, IMPORTANCE_PRUNING_INPUTS, IMPORTANCE_SEEDS, IMPORTANCE_PRUNING, IMPORTANCE_REMOVABLE = DECLARED.values()
