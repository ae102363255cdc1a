"""The study's generic test path for analyses: declared hypotheses on per-input measures, table tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.config.protocol import validate_protocol
from headstats.engine.runner import Job
from headstats.measures import MeasureArray
from headstats.stats.grouping import group_permutation_test
from headstats.study.analysis_tests import analysis_tests, clustering_tests, hypothesis_tests


class FakeCollector:
    def __init__(self, array, hypotheses):
        self.array, self._h = array, hypotheses

    def result(self):
        return self.array

    def hypotheses(self):
        return self._h


def protocol(**extra):
    return validate_protocol({"datasets": [{"name": "d", "path": "x.txt"}], "seed": 3, **extra})


def test_hypothesis_tests_use_the_protocols_statistics():
    rng = np.random.default_rng(0)
    values = rng.uniform(0.6, 0.8, (10, 1, 2, 1)).astype(np.float32)
    jobs = []
    for dataset in ("a", "b"):
        job = Job(object, ("m",), dataset, name="mine")
        job.collector = FakeCollector(MeasureArray("m", dataset, [str(i) for i in range(10)], ("v",), values),
                                      [{"name": "high", "measure": "v", "threshold": 0.5}])
        jobs.append(job)
    role = Job(object, ("m",), "a", name="role_scores")
    role.collector = FakeCollector(None, [])
    out = hypothesis_tests([*jobs, role], protocol(statistics={"correction": "bonferroni"}))
    assert list(out) == ["mine"]
    t = out["mine"]
    assert len(t) == 4 and set(t["family"]) == {"model=m|dataset=a", "model=m|dataset=b"}
    assert (t["correction"] == "bonferroni").all() and t["reject"].all()
    np.testing.assert_allclose(t["p_corr"], np.minimum(2 * t["p_unc"], 1))


def test_clustering_test_from_the_js_table():
    k = np.arange(6)
    a, b = np.meshgrid(k, k, indexing="ij")
    d = np.where((a // 3) == (b // 3), 0.1, 0.4) * (a != b)
    js = pd.DataFrame({"model": "m", "dataset": "d", "layer_a": (a // 3).ravel(), "head_a": (a % 3).ravel(),
                       "layer_b": (b // 3).ravel(), "head_b": (b % 3).ravel(), "js_mean": d.ravel()})
    p = protocol(clustering={"n_permutations": 199})
    out = clustering_tests({"js_distance": js}, p)["clustering_tests"]
    ref = group_permutation_test(d, k // 3, n_permutations=199, seed=3)
    row = out.iloc[0]
    assert row["p_value"] == pytest.approx(ref.p_value) and row["within_mean"] == pytest.approx(0.1)
    assert row["between_mean"] == pytest.approx(0.4) and bool(row["reject"]) == (ref.p_value < 0.05)
    both = analysis_tests([], {"clustering": {"js_distance": js}}, p)
    assert list(both) == ["clustering"] and "clustering_tests" in both["clustering"]
