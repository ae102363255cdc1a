"""The report's section "Across measures": heads per role under each attention measure and under both, beside the
claims table's verdict of survives_norm:<role>; absent from a run of one measure."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.tables.study_tables import Analysis
from headstats.report.blocks import Report
from headstats.analyses.pande_roles.section.measures import measure_counts, measures_section


def agreement() -> pd.DataFrame:
    """8 heads: delimiter_cls under weights for heads 0-5, under norm for heads 4-6; local under norm for head 7."""
    i = np.arange(8)
    rows = []
    for role, w, n in (("delimiter_cls", i < 6, (i >= 4) & (i < 7)), ("local", np.zeros(8, bool), i == 7)):
        rows.append(pd.DataFrame({"model": "m", "dataset": "d", "role": role, "layer": i // 4, "head": i % 4,
                                  "weights": w, "norm": n, "robust_across_measures": w & n}))
    return pd.concat(rows, ignore_index=True)


def measure_rows(measures) -> pd.DataFrame:
    return pd.DataFrame({"model": "m", "dataset": "d", "measure": list(measures), "role": "local", "layer": 0,
                         "head": 0, "reject": False})


def test_counts_per_role_under_each_measure_and_both():
    counts = measure_counts(agreement())
    # the figures' role order puts local before the delimiter roles
    assert counts[["role", "heads", "under weights", "under norm", "under all"]].values.tolist() == [
        ["local", 8, 0, 1, 0], ["delimiter_cls", 8, 6, 3, 2]]


def test_the_section_shows_the_counts_with_each_claims_verdict_and_nothing_for_one_measure():
    claims = pd.DataFrame({"claim": ["survives_norm:delimiter_cls", "delimiter_largest"], "model": "m",
                           "dataset": "d", "verdict": ["contradicted", "supported"], "p": [0.001, 0.01],
                           "reason": ["significant in the other direction", ""]})
    report = Report("t")
    measures_section(report, Analysis(measure_rows(["weights", "norm"]), pd.DataFrame(),
                                      {"measure_agreement": agreement()}), claims)
    assert report.blocks[0].content == "Across measures"
    table = next(b for b in report.blocks if b.kind == "table").content
    column = dict(zip(table["role"], table["remains under norm (claim)"]))
    assert column == {"delimiter_cls": "contradicted (p = 0.001)", "local": ""}
    one = Report("t")
    measures_section(one, Analysis(measure_rows(["weights"]), pd.DataFrame(), {}), claims)
    assert one.blocks == []
