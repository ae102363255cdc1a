"""The inputs section: inputs read, scored and skipped per (model, data set) with the reasons, from the manifest
(older manifests keyed by "model/dataset" alone too), and the inputs taking part per role."""

from __future__ import annotations

import pandas as pd

from headstats.tables.study_tables import Analysis
from headstats.report.blocks import Report
from headstats.report.sections.inputs_section import inputs_section


def test_inputs_table_gives_the_counts_and_reasons_of_every_model_and_data_set():
    manifest = {"inputs": {
        "m/single": {"model": "m", "dataset": "single", "n_records": 20, "n_scored": 18,
                     "skipped": {"too_long": 2, "empty": 0}, "notes": {}, "roles_not_applicable": {}},
        "k/pairs": {"n_records": 5, "n_scored": 5, "skipped": {}, "notes": {"truncated": 1},
                    "roles_not_applicable": {"block": "single sentences"}},  # a manifest before model/dataset
    }}
    participation = pd.DataFrame({"model": "m", "dataset": "single", "role": ["local"], "n_inputs": [18]})
    report = Report("t")
    inputs_section(report, manifest, Analysis(tests=pd.DataFrame(), roles=pd.DataFrame(),
                                              tables={"participation": participation}))
    assert [b.content for b in report.blocks if b.kind == "heading"] == ["Inputs used and skipped"]
    counts, part = [b for b in report.blocks if b.kind == "table"]
    assert counts.content.to_dict("records") == [
        dict(model="m", dataset="single", read=20, scored=18, skipped="too_long: 2", notes="none",
             roles_not_applicable="none"),
        dict(model="k", dataset="pairs", read=5, scored=5, skipped="none", notes="truncated: 1",
             roles_not_applicable="block (single sentences)")]
    assert part.csv == "participation.csv" and part.content.equals(participation)
