"""Clustering of heads (Clark et al. 2019, section 6): Jensen-Shannon divergences between every pair of
heads, metric MDS, and the test that heads of one layer attend alike.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.clustering.options import ClusteringOptions
from headstats.analyses.clustering.tables import DECLARED

register_analysis(
    "clustering", "headstats.analyses.clustering.collect:HeadClustering",
    options=ClusteringOptions,
    finish="headstats.analyses.clustering.finish:finish_clustering",
    claims="headstats.analyses.clustering.claims",
    section="headstats.analyses.clustering.section:clustering_section",
    requires=("surface",),
    tables=DECLARED,
    description="Jensen-Shannon divergence between every pair of heads, metric MDS to two dimensions and a test of "
                "whether heads of one layer sit together (Clark et al. 2019)",
)
