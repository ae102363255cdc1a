"""The entropy section: per layer the mean, lowest and highest head entropy against the uniform reference."""

import pandas as pd

from headstats.analyses.entropy.section import entropy_section
from headstats.report.blocks import Report
from headstats.tables import RunTables


def test_one_row_per_layer_with_the_mean_min_and_max_over_heads(tmp_path):
    frame = pd.DataFrame({"model": "m", "dataset": "d", "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1],
                          "entropy": [1.0, 2.0, 0.5, 0.7], "entropy_cls": [1.5, 2.5, 0.0, 1.0],
                          "entropy_uniform": 3.0})
    report = Report("t")
    entropy_section(report, tmp_path, RunTables({"entropy": frame}))
    assert report.blocks[0].content == "Attention entropy"
    table = next(b for b in report.blocks if b.kind == "table").content
    assert table[["entropy", "entropy_min", "entropy_max", "entropy_cls"]].values.tolist() == [
        [1.5, 1.0, 2.0, 2.0], [0.6, 0.5, 0.7, 0.5]]
    assert table["entropy_uniform"].tolist() == [3.0, 3.0]
