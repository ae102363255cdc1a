"""The tables of the entropy analysis, declared once (:func:`headstats.tables.declare_tables`): its spec registers
them (``register_analysis(..., tables=DECLARED)``) and its other files name them by these specs
(``tables[ENTROPY]``), never by a string."""

from __future__ import annotations

from headstats.tables import TableSpec, declare_tables

DECLARED = declare_tables("entropy", {
    "entropy": TableSpec(
        "per head, the mean row entropy of attention and its ratio to ln n",
        columns=("model", "dataset", "layer", "head", "n", "entropy", "entropy_sd", "entropy_cls",
                 "entropy_cls_sd", "entropy_uniform")),
})
(ENTROPY,) = DECLARED.values()
