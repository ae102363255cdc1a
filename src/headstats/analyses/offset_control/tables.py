"""The tables of the offset_control analysis, declared once (:func:`headstats.tables.declare_tables`): its spec registers
them (``register_analysis(..., tables=DECLARED)``) and its other files name them by these specs
(``tables[OFFSET_CONTROL_TESTS]``), never by a string."""

from __future__ import annotations

from headstats.tables import TableSpec, declare_tables

DECLARED = declare_tables("offset_control", {
    "offset_control_tests": TableSpec(
        "one row per head and arc role (`role`: <role>_beyond_offset): the one-sided test of the mean "
        "offset-matched excess > 0 (METHODS 6.2)",
        ("model", "dataset", "role", "layer", "head", "mean", "p_unc", "p_corr", "reject")),
    "offset_control_inputs": TableSpec("per arc role, the inputs with an arc of it that has a control",
                                       ("model", "dataset", "role", "n_taking_part")),
})
OFFSET_CONTROL_TESTS, OFFSET_CONTROL_INPUTS = DECLARED.values()
