r"""The claim of Clark et al. (2019, "What Does BERT Look At?") on the clustering analysis, registered as a test
(METHODS 2 and 5.1):

- ``layer_heads_cluster`` (``clustering_tests``): heads of one layer attend alike: the permutation test of the
  layer labels of the JS divergences (:func:`headstats.stats.grouping.group_permutation_test`), floor
  ``1 / (B + 1)``.
"""

from __future__ import annotations

import pandas as pd

from headstats.analyses.clustering.tables import CLUSTERING_TESTS
from headstats.stats.claims import ClaimSettings, Evidence, register_claim
from headstats.tables import RunTables

CLARK = "Clark et al. 2019"


@register_claim(
    "layer_heads_cluster", sentence="heads of one layer attend alike (they cluster)", source=CLARK,
    hypothesis="H0: the layer labels are exchangeable over the heads' JS divergences; H1: heads of one layer are "
               "closer (mean between-layer JS - mean within-layer JS > 0)",
    unit="heads", test="permutation test of the layer labels (clustering_tests.csv), seeded",
    measure="mean JS divergence between layers minus within layers", tables=(CLUSTERING_TESTS,))
def layer_heads_cluster(tables: RunTables, settings: ClaimSettings) -> list[Evidence]:
    out = []
    for r in tables[CLUSTERING_TESTS].itertuples():
        floor = 1.0 / (int(r.n_permutations) + 1)
        out.append(Evidence(
            str(r.model), str(r.dataset), estimate=float(r.statistic), p_for=float(r.p_value), floor=floor,
            detectable=f"{int(r.n_permutations)} permutations: smallest p {floor:.2g}",
            detail=f"{int(r.n_items)} heads in {int(r.n_groups)} layers: mean JS within layers {r.within_mean:.4g}, "
                   f"between {r.between_mean:.4g} (ratio {r.ratio:.3g}); seed {int(r.seed)}"))
    return out
