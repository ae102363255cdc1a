"""The importance section: the per-model summary (heads that matter, the top three), the task-free note, and the
removable share."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.analyses.importance.section import importance_section, importance_summary
from headstats.report.blocks import Report, render_markdown
from headstats.tables import RunTables


def tables() -> dict[str, pd.DataFrame]:
    layer, head = np.divmod(np.arange(4), 2)
    heads = pd.DataFrame({"model": "m", "dataset": "d", "layer": layer, "head": head, "task": "classifier",
                          "ablation": "mean", "importance_measure": "delta_loss", "n": 10,
                          "importance": [0.1, 0.9, 0.0, 0.5], "base_accuracy": 0.8})
    tests = pd.DataFrame({"model": "m", "dataset": "d", "layer": layer, "head": head,
                          "reject": [False, True, False, True]})
    notes = pd.DataFrame([{"model": "base", "dataset": "d", "status": "task-free", "reason": "no task head"}])
    removable = pd.DataFrame([{"model": "m", "dataset": "d", "unit": "inputs", "n": 10, "tolerance": 0.01,
                               "removable_share": 0.5, "ci_low": np.nan, "ci_high": np.nan,
                               "removable_share_confident": 0.25, "confidence": 0.95, "ablation": "mean",
                               "prune_by": "gradient"}])
    return {"importance": heads, "importance_tests": tests, "importance_notes": notes,
            "importance_removable": removable}


def test_importance_summary_lists_the_heads_that_matter():
    row = importance_summary(tables()["importance"], tables()["importance_tests"]).iloc[0]
    assert row["heads_that_matter"] == "2 of 4" and row["top_heads"] == "0-1, 1-1, 0-0"


def test_a_task_free_model_is_not_said_to_have_no_heads_that_matter():
    data = tables()
    free = data["importance"].assign(model="base", importance_measure="cosine_distance", base_accuracy=np.nan)
    tests = pd.concat([data["importance_tests"], data["importance_tests"].assign(model="base", reject=False)])
    summary = importance_summary(pd.concat([data["importance"], free]), tests).set_index("model")
    assert summary.loc["m", "heads_that_matter"] == "2 of 4"
    assert summary.loc["base", "heads_that_matter"] == "not tested (no task loss)"


def test_importance_section_writes_the_note_and_the_removable_share(tmp_path):
    report = Report("t")
    importance_section(report, tmp_path, RunTables(tables()))
    md = render_markdown(report, tmp_path)
    assert "## Head importance (ablation and gradients)" in md
    assert "**task-free** for base on d: no task head." in md
    assert "accuracy falling by at most 0.01" in md and "figures/importance__" in md
