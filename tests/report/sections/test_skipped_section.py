"""Analyses that did not run: one line per analysis and reason, naming where and the fix, said once."""

from __future__ import annotations

import pandas as pd

from headstats.report.blocks import Report
from headstats.report.sections.skipped_section import skipped_analyses, skipped_section


def test_one_line_per_analysis_and_reason_with_where_and_the_fix():
    gradients = pd.DataFrame([{"model": "m", "dataset": d, "reason": "the checkpoint has no trained head."}
                              for d in ("d1", "d2")] + [{"model": "k", "dataset": "d1", "reason": "too long"}])
    analyses = {"gradients": {"gradients": pd.DataFrame(), "gradients_skipped": gradients},
                "mine": {"mine_skipped": pd.DataFrame([{"model": "m", "dataset": "d1", "reason": "no parses"}])},
                "distance": {"distance": pd.DataFrame({"x": [1]})}}
    lines = skipped_analyses(analyses)
    assert lines == [
        "- **gradients** did not run (m on d1, m on d2): the checkpoint has no trained head. Fix: give a model with "
        "a masked-LM or classification head (e.g. one from `headstats finetune`), or leave `gradients` out of "
        "`analyses`.",
        "- **gradients** did not run (k on d1): too long. Fix: give a model with a masked-LM or classification head "
        "(e.g. one from `headstats finetune`), or leave `gradients` out of `analyses`.",
        "- **mine** did not run (m on d1): no parses. Fix: give it a model it can run on, or leave `mine` out of "
        "`analyses`.",
    ]
    report = Report("t")
    skipped_section(report, analyses)
    assert [b.content for b in report.blocks] == ["**Not run**, said once here:\n\n" + "\n".join(lines)]
    nothing = Report("t")
    skipped_section(nothing, {"distance": analyses["distance"]})
    assert nothing.blocks == []
