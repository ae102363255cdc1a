"""The clustering analysis' finish step: per model and data set, the permutation test that heads of one layer
attend more alike than heads of different layers (:func:`headstats.stats.grouping.group_permutation_test`)."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from headstats.analyses.clustering.options import ClusteringOptions
from headstats.analyses.clustering.tables import CLUSTERING_TESTS, JS_DISTANCE
from headstats.stats.corrections import reject
from headstats.stats.grouping import group_permutation_test
from headstats.stats.options import TestOptions
from headstats.tables import RunTables


#: Columns of ``clustering_tests.csv`` (:func:`finish_clustering`).
CLUSTERING_TEST_COLUMNS = ["model", "dataset", "hypothesis", "n_items", "n_groups", "within_mean", "between_mean",
                           "statistic", "ratio", "p_value", "n_permutations", "seed", "alpha", "reject"]


def finish_clustering(tables: RunTables, statistics: TestOptions, options: ClusteringOptions,
                      seed: int, log: Callable[[str], None] = lambda message: None) -> dict[str, pd.DataFrame]:
    """The study's ``finish`` step of the ``clustering`` analysis: ``clustering_tests``, per (model, data set),
    heads of one layer against heads of different layers.

    The JS divergence per query (``js_mean``) of same-layer pairs against different-layer pairs, one-sided
    permutation test of the layer labels (:func:`group_permutation_test`), seeded by ``seed``, with the
    ``n_permutations`` resamples of ``options`` (the analysis' ``ClusteringOptions``); ``reject = p_value <= alpha``
    (``statistics.alpha``, :func:`~headstats.stats.corrections.reject`) for each (model, data set) separately
    (one test each); ``log`` gets a line as each test starts. The claim it decides ("heads of one layer attend alike") is the registry's
    ``layer_heads_cluster`` (:mod:`headstats.analyses.clustering.claims`), corrected with the run's other claims.
    """
    js = tables.get(JS_DISTANCE)
    if js is None or js.empty:
        return {CLUSTERING_TESTS.name: pd.DataFrame(columns=CLUSTERING_TEST_COLUMNS)}
    n_perm = options.n_permutations
    alpha = statistics.alpha
    rows = []
    for (model, dataset), part in js.groupby(["model", "dataset"], sort=False):
        heads = int(part["head_a"].max()) + 1
        k = int(np.sqrt(len(part)))
        a = part["layer_a"].to_numpy() * heads + part["head_a"].to_numpy()
        b = part["layer_b"].to_numpy() * heads + part["head_b"].to_numpy()
        d = np.full((k, k), np.nan)
        d[a, b] = part["js_mean"].to_numpy()
        log(f"clustering: permutation test of the layers of {model} / {dataset} ({n_perm:,} permutations of {k} "
            "heads)")
        res = group_permutation_test(d, np.arange(k) // heads, n_permutations=n_perm, seed=seed)
        rows.append({"model": model, "dataset": dataset,
                     "hypothesis": "H1: same-layer pairs' mean JS divergence < different-layer pairs'",
                     **res.to_dict(), "alpha": alpha, "reject": bool(reject(res.p_value, alpha))})
    return {CLUSTERING_TESTS.name: pd.DataFrame(rows)[CLUSTERING_TEST_COLUMNS]}
