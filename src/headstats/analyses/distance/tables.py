"""The tables of the distance analysis, declared once (:func:`headstats.tables.declare_tables`): its spec registers
them (``register_analysis(..., tables=DECLARED)``) and its other files name them by these specs
(``tables[DISTANCE]``), never by a string."""

from __future__ import annotations

from headstats.tables import TableSpec, declare_tables

DECLARED = declare_tables("distance", {
    "distance": TableSpec(
        "per head, the mean distance attended over (pieces), against the uniform reference",
        columns=("model", "dataset", "layer", "head", "n", "distance_mean", "distance_sd", "uniform_mean",
                 "locality_mean")),
    "distance_tests": TableSpec(
        "one row per head: the one-sided test of the attended distance",
        columns=("model", "dataset", "role", "layer", "head", "test", "n", "mean", "sd", "statistic", "p_unc",
                 "p_corr", "reject", "measure", "threshold")),
})
DISTANCE, DISTANCE_TESTS = DECLARED.values()
