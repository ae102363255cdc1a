"""What the study does after the pass: declared hypotheses on per-input measures, then each analysis' finish."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.config.protocol import validate_protocol
from headstats.engine.runner import Job
from headstats.measures import MeasureArray
from headstats.study.analysis_tests import finish_analyses, hypothesis_tests


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
    scores = Job(object, ("m",), "a", name="scores")  # a per-input result that declares no hypotheses
    scores.collector = FakeCollector(None, [])
    out = hypothesis_tests([*jobs, scores], protocol(statistics={"correction": "bonferroni"}))
    assert list(out) == ["mine"]
    t = out["mine"]
    assert len(t) == 4 and set(t["family"]) == {"model=m|dataset=a", "model=m|dataset=b"}
    assert (t["correction"] == "bonferroni").all() and t["reject"].all()
    np.testing.assert_allclose(t["p_corr"], np.minimum(2 * t["p_unc"], 1))


def test_finish_analyses_runs_the_hypotheses_then_the_finish_step():
    """The declared hypotheses' table exists before the analysis' finish step, which sees it and adds its own."""
    from headstats.analyses import ANALYSES, register_analysis
    from headstats.engine.collector import Collector

    seen = []

    def finish(tables, statistics, options, seed):
        seen.append(sorted(tables))
        return {"summary": pd.DataFrame({"n_rejected": [int(tables["mine_tests"]["reject"].sum())]})}

    register_analysis("mine", Collector, finish=finish)
    try:
        values = np.full((10, 1, 1, 1), 0.9, np.float32) + np.linspace(0, 0.05, 10)[:, None, None, None]
        job = Job(object, ("m",), "a", name="mine")
        job.collector = FakeCollector(MeasureArray("m", "a", [str(i) for i in range(10)], ("v",), values.astype(np.float32)),
                                      [{"name": "high", "measure": "v", "threshold": 0.5}])
        own = pd.DataFrame({"x": [1]})
        out = finish_analyses([job], {"mine": {"mine": own}, "clustering": {}}, protocol())
        assert seen == [["mine", "mine_tests"]] and out["mine"]["mine"] is own
        assert out["mine"]["summary"]["n_rejected"].item() == 1
        assert list(out["clustering"]) == ["clustering_tests"] and out["clustering"]["clustering_tests"].empty
    finally:
        ANALYSES.unregister("mine")
