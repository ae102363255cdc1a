"""Tests of what analyses collect, run by the study after the pass (the statistics layer sits above analyses).

Two paths, both reusable by any analysis:

- **Declared hypotheses about per-input measures.** A collector with a ``hypotheses()`` method (a list of
  mappings ``name, measure, threshold, layers``) whose ``result()`` is a
  :class:`~headstats.measures.MeasureArray` has each hypothesis tested one-sided per head with the protocol's
  statistics (test, correction over the declared family, alpha, power:
  :func:`headstats.stats.hypotheses.test_measures`), written as ``<analysis>_tests.csv``.
- **Tests of an analysis' tables.** A function registered with :func:`register_table_test` for an analysis
  name takes its tables (concatenated over models and data sets) and the protocol and returns more tables
  (e.g. the clustering's within- against between-layer permutation test, ``clustering_tests.csv``).

The tables join the analysis' own, so its report section receives them.
"""

from __future__ import annotations

from typing import Callable, Mapping

import pandas as pd

from headstats.measures import MeasureArray
from headstats.registry import Registry

TableTest = Callable[[Mapping[str, pd.DataFrame], object], dict[str, pd.DataFrame]]
TABLE_TESTS: Registry[TableTest] = Registry("analysis table test")


def register_table_test(analysis: str, fn: TableTest, *, overwrite: bool = False) -> TableTest:
    """Run ``fn(tables, protocol) -> {name: frame}`` on the tables of ``analysis`` after every pass."""
    return TABLE_TESTS.register(analysis, fn, overwrite=overwrite)


def hypothesis_tests(jobs, protocol) -> dict[str, pd.DataFrame]:
    """``<analysis>_tests`` per analysis whose collectors declare hypotheses (see the module docstring)."""
    from headstats.assignment.tables import statistics_kwargs
    from headstats.stats.hypotheses import test_measures

    arrays: dict[str, list[MeasureArray]] = {}
    declared: dict[str, list] = {}
    for job in jobs:
        collector = job.collector
        if job.name == "role_scores" or collector is None or not callable(getattr(collector, "hypotheses", None)):
            continue
        result = collector.result()
        if not isinstance(result, MeasureArray):
            continue
        arrays.setdefault(job.name, []).append(result)
        declared.setdefault(job.name, collector.hypotheses())
    kwargs = statistics_kwargs(protocol.statistics, protocol.seed)
    return {name: test_measures(arrays[name], declared[name], **kwargs) for name in arrays if declared[name]}


def analysis_tests(jobs, tables: Mapping[str, Mapping[str, pd.DataFrame]], protocol) -> dict[str, dict[str, pd.DataFrame]]:
    """Every test table of the study's analyses: analysis name -> table name -> frame."""
    out: dict[str, dict[str, pd.DataFrame]] = {}
    for name, frame in hypothesis_tests(jobs, protocol).items():
        out.setdefault(name, {})[f"{name}_tests"] = frame
    for name, analysis_tables in tables.items():
        if name in TABLE_TESTS:
            out.setdefault(name, {}).update(TABLE_TESTS.get(name)(analysis_tables, protocol))
    return out


# ------------------------------------------------------------------------------------------------ clustering

CLUSTERING_TEST_COLUMNS = ["model", "dataset", "claim", "n_items", "n_groups", "within_mean", "between_mean",
                           "statistic", "ratio", "p_value", "n_permutations", "seed", "alpha", "reject"]


def clustering_tests(tables: Mapping[str, pd.DataFrame], protocol) -> dict[str, pd.DataFrame]:
    """``clustering_tests``: per (model, data set), heads of one layer against heads of different layers.

    The JS divergence per query (``js_mean``) of same-layer pairs against different-layer pairs, one-sided
    permutation test of the layer labels (:func:`headstats.stats.grouping.group_permutation_test`), seeded by
    the protocol's seed, ``clustering.n_permutations`` resamples; ``reject = p_value < alpha`` for each
    (model, data set) separately (one test each, so no correction).
    """
    import numpy as np

    from headstats.stats.grouping import group_permutation_test

    js = tables.get("js_distance")
    rows = []
    if js is None or js.empty:
        return {"clustering_tests": pd.DataFrame(columns=CLUSTERING_TEST_COLUMNS)}
    n_perm = protocol.clustering.n_permutations if getattr(protocol, "clustering", None) else 9999
    alpha = protocol.statistics.alpha
    for (model, dataset), part in js.groupby(["model", "dataset"], sort=False):
        heads = int(part["head_a"].max()) + 1
        k = int(np.sqrt(len(part)))
        a = part["layer_a"].to_numpy() * heads + part["head_a"].to_numpy()
        b = part["layer_b"].to_numpy() * heads + part["head_b"].to_numpy()
        d = np.full((k, k), np.nan)
        d[a, b] = part["js_mean"].to_numpy()
        layers = np.arange(k) // heads
        res = group_permutation_test(d, layers, n_permutations=n_perm, seed=protocol.seed)
        rows.append({"model": model, "dataset": dataset, "claim": "heads of one layer sit together",
                     **res.to_dict(), "alpha": alpha, "reject": bool(res.p_value < alpha)})
    return {"clustering_tests": pd.DataFrame(rows)[CLUSTERING_TEST_COLUMNS]}


register_table_test("clustering", clustering_tests)
