"""The gradients section: the reason a model was skipped, and per model the figure and the per-layer table."""

from __future__ import annotations

import pandas as pd
import pytest

from headstats.analyses.gradients.section import gradients_section
from headstats.report.blocks import Report, render_markdown
from headstats.tables import RunTables


def test_gradients_section_states_skips_and_averages_each_layer(tmp_path):
    rows = [{"model": "m", "dataset": "d", "layer": layer, "head": head, "target": target, "loss": "mlm",
             "mean_abs_grad": value}
            for layer in range(2) for head in range(2)
            for target, value in (("sep", 0.1 * (layer + 1) + 0.1 * head), ("other", 1.0))]
    skipped = pd.DataFrame([{"model": "bare", "dataset": "d", "reason": "the checkpoint has no trained head"}])
    report = Report("t")
    gradients_section(report, tmp_path, RunTables({"gradients": pd.DataFrame(rows), "gradients_skipped": skipped}))
    md = render_markdown(report, tmp_path)
    # said once at the top of the report (skipped_section.skipped_analyses, with the fix); here, where and a pointer
    assert "Not run for bare on d: the reason and the fix are at the top of the report." in md
    from headstats.report.sections.skipped_section import skipped_analyses

    assert skipped_analyses({"gradients": {"gradients_skipped": pd.concat([skipped, skipped.assign(dataset="e")])}}) \
        == ["- **gradients** did not run (bare on d, bare on e): the checkpoint has no trained head. Fix: give a "
            "model with a masked-LM or classification head (e.g. one from `headstats finetune`), or leave "
            "`gradients` out of `analyses`."]
    assert (tmp_path / "figures" / "gradients_m__d.png").exists()
    table = [b for b in report.blocks if b.kind == "table"][0].content
    # layer 0: sep heads 0.1 and 0.2 -> 0.15; layer 1: 0.2 and 0.3 -> 0.25
    assert table.set_index("layer")["sep"].tolist() == pytest.approx([0.15, 0.25])
    assert table.set_index("layer")["other"].tolist() == pytest.approx([1.0, 1.0])


def test_gradients_section_without_gradients_has_no_figure(tmp_path):
    report = Report("t")
    empty = pd.DataFrame(columns=["model", "dataset", "layer", "target"])
    gradients_section(report, tmp_path, RunTables({"gradients": empty}))
    assert not [b for b in report.blocks if b.kind in ("figure", "table")]
