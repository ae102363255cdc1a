"""The tables of the gradients analysis, declared once (:func:`headstats.tables.declare_tables`): its spec registers
them (``register_analysis(..., tables=DECLARED)``) and its other files name them by these specs
(``tables[GRADIENTS]``), never by a string."""

from __future__ import annotations

from headstats.tables import TableSpec, declare_tables

DECLARED = declare_tables("gradients", {
    "gradients": TableSpec("mean |dL/dA| per head and kind of token attended to"),
    "gradients_skipped": TableSpec(
        "the models and data sets gradient importance could not run on, with the reason",
        columns=("model", "dataset", "reason")),
})
GRADIENTS, GRADIENTS_SKIPPED = DECLARED.values()
