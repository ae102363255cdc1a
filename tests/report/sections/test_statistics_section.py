"""The statistics section: the p-value figure, the smallest detectable effect and the underpowered heads."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.tables.study_tables import Analysis
from headstats.config.protocol import Protocol
from headstats.report.blocks import Report
from headstats.report.sections.statistics_section import statistics_sections


def test_p_values_power_and_underpowered_heads(tmp_path):
    rng = np.random.default_rng(0)
    n = 24
    tests = pd.DataFrame({"model": "m", "dataset": "d", "role": np.repeat(["local", "delimiter"], n // 2),
                          "layer": np.tile(np.arange(6), 4), "head": np.repeat(np.arange(4), 6), "n": 20,
                          "p_unc": rng.uniform(1e-6, 1, n), "reject": [True, False] * (n // 2),
                          "mde": rng.uniform(0.3, 1.2, n)})
    tests["p_corr"] = np.minimum(1.0, tests["p_unc"] * n)
    weak = tests[~tests["reject"]].head(3).assign(mean=2.0, mde_score=0.5, power=0.4, n_for_power=60,
                                                  power_note="")
    protocol = Protocol.model_validate({"name": "p", "models": ["m"], "datasets": [{"name": "d", "path": "x.txt"}],
                                        "statistics": {"sensitivity": False}})
    report = Report("t")
    statistics_sections(report, tmp_path, Analysis(tests=tests, roles=pd.DataFrame(),
                                                    tables={"underpowered": weak}), protocol)
    figures = [b for b in report.blocks if b.kind == "figure"]
    assert [f.content for f in figures] == ["figures/pvalue_ecdf.png", "figures/power_mde.png"]
    assert all((tmp_path / f.content).is_file() for f in figures)
    assert figures[0].caption.startswith("Every uncorrected p-value of the 24 hypotheses")
    assert "d = 0.5" in figures[1].caption and "80% power" in figures[1].caption
    text = [b.content for b in report.blocks if b.kind == "text"]
    assert text[0].startswith("3 head-role pairs were not assigned by a test that had less than 80% power")
    table = [b for b in report.blocks if b.kind == "table"][0]
    assert table.csv == "underpowered.csv" and len(table.content) == 3
