"""The coreference section: the best head per mention type against the baselines, the heads that beat each
baseline in the corrected test, and the claim's verdict from the registry (claims.csv), never the section's own."""

from __future__ import annotations

import pandas as pd

from headstats.analyses.coreference.section import coreference_section
from headstats.report.blocks import Report, render_markdown
from headstats.tables import RunTables


def coreference_tables(*, passing: bool) -> dict[str, pd.DataFrame]:
    heads = pd.DataFrame({"model": "m", "dataset": "d", "mention_type": "all", "predictor": "head", "layer": 0,
                          "head": [0, 1], "n": 50, "accuracy": [0.3, 0.8], "correct": [15, 40],
                          "ci_low": [0.2, 0.7], "ci_high": [0.4, 0.9]})
    bases = pd.DataFrame({"model": "m", "dataset": "d", "mention_type": "all",
                          "predictor": ["nearest_mention", "same_head_word"], "layer": pd.NA, "head": pd.NA,
                          "n": 50, "accuracy": [0.4, 0.6], "correct": [20, 30]})
    tests = pd.DataFrame({"model": "m", "dataset": "d", "mention_type": "all",
                          "baseline": ["nearest_mention", "nearest_mention", "same_head_word", "same_head_word"],
                          "layer": 0, "head": [0, 1, 0, 1], "reject": [False, passing, False, False]})
    return {"coreference": pd.concat([heads, bases], ignore_index=True), "coreference_tests": tests}


def test_coreference_section_names_the_best_head_and_the_heads_that_pass(tmp_path):
    report = Report("t")
    coreference_section(report, tmp_path, RunTables(coreference_tables(passing=True)))
    shown = [b for b in report.blocks if b.kind == "table"][0].content.iloc[0]
    assert shown["best_head"] == "0-1" and shown["accuracy"] == 0.8 and shown["nearest_mention_accuracy"] == 0.4
    assert shown["heads_beating_nearest_mention"] == "0-1" and shown["heads_beating_same_head_word"] == "none"
    md = render_markdown(report, tmp_path)
    assert ("on m / d the best head 0-1 selects 0.800 of antecedents against the nearest mention's 0.400; heads "
            "beating the nearest mention (a paired test, one-sided, corrected over heads): 0-1." in md)
    assert "hold" not in md  # no verdict of the section's own


def test_coreference_verdict_is_the_registrys(tmp_path):
    claims = pd.DataFrame([{"claim": "coreference_head_beats_baselines", "model": "m", "dataset": "d",
                            "sentence": "a head finds coreferent antecedents better than the baselines",
                            "test": "paired exact test", "verdict": "not shown", "p": 0.2, "correction": "holm",
                            "reason": "not significant after correction", "detail": "head 0-1"}])
    report = Report("t")
    coreference_section(report, tmp_path, RunTables({**coreference_tables(passing=False), "claims": claims}))
    assert ("- *a head finds coreferent antecedents better than the baselines* (m on d; paired exact test): "
            "**not shown**, p = 0.2 after holm over the run's claims; not significant after correction. head 0-1."
            ) in render_markdown(report, tmp_path)


def test_coreference_section_without_queries(tmp_path):
    tables = coreference_tables(passing=False)
    tables["coreference"]["n"] = 0
    report = Report("t")
    coreference_section(report, tmp_path, RunTables(tables))
    assert "m / d: no query (no coreference annotation in this data set)." in render_markdown(report, tmp_path)


def test_a_degenerate_baseline_is_named_not_beaten(tmp_path):
    tables = coreference_tables(passing=True)
    tables["coreference"].loc[tables["coreference"]["predictor"] == "same_head_word", "accuracy"] = 0.0
    tests = tables["coreference_tests"]
    tables["coreference_tests"] = tests.assign(baseline_degenerate=tests["baseline"] == "same_head_word")
    report = Report("t")
    coreference_section(report, tmp_path, RunTables(tables))
    shown = [b for b in report.blocks if b.kind == "table"][0].content.iloc[0]
    assert shown["heads_beating_same_head_word"] == "not tested: baseline 0 by construction"
    assert shown["heads_beating_nearest_mention"] == "0-1"
