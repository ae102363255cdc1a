"""The distance section: the per-layer summary with the heads that pass ``local``, and the test named."""

from __future__ import annotations

import pandas as pd
import pytest

from headstats.analyses.distance.section import distance_by_layer, distance_section
from headstats.report.blocks import Report, render_markdown
from headstats.tables import RunTables


def tables() -> dict[str, pd.DataFrame]:
    distance = pd.DataFrame({"model": "m", "dataset": "d", "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1], "n": 5,
                             "distance_mean": [1.0, 3.0, 0.5, 4.0], "distance_sd": 0.1, "uniform_mean": 4.0,
                             "locality_mean": [0.75, 0.25, 0.875, 0.0]})
    tests = pd.DataFrame({"model": "m", "dataset": "d", "role": "local", "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1],
                          "test": "t", "correction": "holm", "family": "model=m|dataset=d", "alpha": 0.05,
                          "reject": [True, False, True, False], "measure": "locality", "threshold": 0.5})
    return {"distance": distance, "distance_tests": tests}


def test_distance_by_layer():
    out = distance_by_layer(tables()["distance"], tables()["distance_tests"]).set_index("layer")
    assert out["distance_mean"].tolist() == pytest.approx([2.0, 2.25])
    assert out["distance_min"].tolist() == [1.0, 0.5] and out["distance_max"].tolist() == [3.0, 4.0]
    assert out["locality_mean"].tolist() == pytest.approx([0.5, 0.4375])
    assert out["local_heads"].tolist() == ["0-0", "1-0"]
    assert "local_heads" not in distance_by_layer(tables()["distance"]).columns


def test_distance_section_names_the_test(tmp_path):
    report = Report("t")
    distance_section(report, tmp_path, RunTables(tables()))
    md = render_markdown(report, tmp_path)
    assert "## Attention distance" in md
    assert "mean locality is above 0.5: one-sided t test per head, holm correction over model=m|dataset=d" in md
