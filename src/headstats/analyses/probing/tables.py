"""The tables of the probing analysis, declared once (:func:`headstats.tables.declare_tables`): its spec registers
them (``register_analysis(..., tables=DECLARED)``) and its other files name them by these specs
(``tables[PROBES_TABLE]``), never by a string."""

from __future__ import annotations

from headstats.tables import TableSpec, declare_tables

DECLARED = declare_tables("probing", {
    "probes": TableSpec(
        "UAS of each probing classifier, with intervals and the tests against the baselines",
        columns=("model", "dataset", "probe", "vectors", "n_train", "n_test", "n_words", "correct", "uas",
                 "ci_low", "ci_high")),
})
(PROBES_TABLE,) = DECLARED.values()
