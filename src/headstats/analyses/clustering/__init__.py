"""Clustering of heads (Clark et al. 2019, section 6): Jensen-Shannon divergences between every pair of
heads, metric MDS, and the test that heads of one layer attend alike.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import TableSpec, register_analysis
from headstats.analyses.clustering.options import ClusteringOptions

register_analysis(
    "clustering", "headstats.analyses.clustering.collect:HeadClustering",
    options=ClusteringOptions,
    finish="headstats.analyses.clustering.finish:finish_clustering",
    claims="headstats.analyses.clustering.claims",
    section="headstats.analyses.clustering.section:clustering_section",
    requires=("surface",),
    tables={
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
    },
    description="Jensen-Shannon divergence between every pair of heads, metric MDS to two dimensions and a test of "
                "whether heads of one layer sit together (Clark et al. 2019)",
)
