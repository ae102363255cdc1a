"""The tables of the clustering analysis, declared once (:func:`headstats.tables.declare_tables`): its spec registers
them (``register_analysis(..., tables=DECLARED)``) and its other files name them by these specs
(``tables[JS_DISTANCE]``), never by a string."""

from __future__ import annotations

from headstats.tables import TableSpec, declare_tables

DECLARED = declare_tables("clustering", {
    "js_distance": TableSpec(
        "Jensen-Shannon divergence between every pair of heads (means over queries and inputs)",
        columns=("model", "dataset", "layer_a", "head_a", "layer_b", "head_b", "js_sum", "js_mean", "n_queries",
                 "n_inputs")),
    "mds": TableSpec(
        "per head, its MDS coordinates from the JS divergences and its dominant behaviour",
        columns=("model", "dataset", "layer", "head", "x", "y", "stress", "behaviour")),
    "clustering_tests": TableSpec(
        "the permutation test that heads of one layer attend more alike than heads of different layers",
        columns=("model", "dataset", "hypothesis", "n_items", "n_groups", "within_mean", "between_mean",
                 "statistic", "ratio", "p_value", "n_permutations", "seed", "alpha", "reject")),
})
JS_DISTANCE, MDS, CLUSTERING_TESTS = DECLARED.values()
