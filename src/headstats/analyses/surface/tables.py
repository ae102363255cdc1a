"""The tables of the surface analysis, declared once (:func:`headstats.tables.declare_tables`): its spec registers
them (``register_analysis(..., tables=DECLARED)``) and its other files name them by these specs
(``tables[SURFACE]``), never by a string."""

from __future__ import annotations

from headstats.tables import TableSpec, declare_tables

DECLARED = declare_tables("surface", {
    "surface": TableSpec(
        "per head, mean attention to the previous, current and next piece, to [CLS], [SEP] and "
        "punctuation, and entropy (means over inputs)",
        columns=("model", "dataset", "layer", "head", "prev", "self", "next", "cls", "sep", "punct",
                 "sep_to_sep", "other_to_sep", "entropy", "entropy_cls", "entropy_uniform")),
    "surface_tests": TableSpec(
        "one row per head and declared hypothesis (`role`): the one-sided test of the surface measure",
        columns=("model", "dataset", "role", "layer", "head", "test", "n", "mean", "sd", "statistic", "p_unc",
                 "p_corr", "reject", "measure", "threshold")),
})
SURFACE, SURFACE_TESTS = DECLARED.values()
