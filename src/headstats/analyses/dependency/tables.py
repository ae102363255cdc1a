"""The tables of the dependency analysis, declared once (:func:`headstats.tables.declare_tables`): its spec registers
them (``register_analysis(..., tables=DECLARED)``) and its other files name them by these specs
(``tables[DEPENDENCY_TABLE]``), never by a string."""

from __future__ import annotations

from headstats.tables import TableSpec, declare_tables

DECLARED = declare_tables("dependency", {
    "dependency_table": TableSpec(
        "Table 1 of Clark et al.: per relation the best head and the best offset, with the test",
        columns=("model", "dataset", "relation", "n", "layer", "head", "direction", "accuracy", "offset",
                 "offset_accuracy", "p_unc", "p_corr", "reject")),
    "dependency_heads": TableSpec(
        "accuracy of every head, direction and relation (the rows Table 1 chooses from)",
        columns=("model", "dataset", "relation", "layer", "head", "direction", "n", "accuracy", "correct",
                 "ci_low", "ci_high")),
    "dependency_counts": TableSpec(
        "per head, relation and half of the inputs, the counts Table 1 is computed from",
        columns=("model", "dataset", "relation", "layer", "head", "direction", "offset")),
    "dependency_notes": TableSpec(
        "per model and data set, the words left out, counted by reason",
        columns=("model", "dataset")),
})
DEPENDENCY_TABLE, DEPENDENCY_HEADS, DEPENDENCY_COUNTS, DEPENDENCY_NOTES = DECLARED.values()
