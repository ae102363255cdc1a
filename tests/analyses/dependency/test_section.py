"""The dependency report section: Table 1, both figures, the heads that pass and the claim's verdict (the
registry's, from claims.csv)."""

from __future__ import annotations

import pandas as pd

from headstats.analyses.dependency.finish import dependency_table
from headstats.analyses.dependency.section import dependency_section
from headstats.report.blocks import Report, render_markdown
from headstats.stats.claim_catalog import evaluate_all_claims
from headstats.tables import RunTables


def test_dependency_section_states_the_claim(tmp_path):
    rows = []
    for relation, head_right in (("det", 90), ("amod", 52)):
        for head in (0, 1):
            for offset in (-1, 1):
                row = {"model": "m", "dataset": "d", "relation": relation, "layer": 0, "head": head,
                       "direction": "dependent_to_head", "offset": offset}
                for half in ("choose", "test"):
                    row |= {f"n_{half}": 100, f"head_correct_{half}": head_right if head == 0 else 10,
                            f"offset_correct_{half}": 50, f"head_only_{half}": head_right - 45 if head == 0 else 5,
                            f"offset_only_{half}": 5 if head == 0 else 45}
                rows.append(row)
    table = dependency_table(pd.DataFrame(rows), min_count=10, test="mcnemar_words")
    heads = pd.DataFrame({"model": "m", "dataset": "d", "relation": ["det", "det"], "layer": 0, "head": [0, 1],
                          "direction": "dependent_to_head", "n": 200, "accuracy": [0.9, 0.1]})
    report = Report("r")
    claims = evaluate_all_claims({"dependency_table": table}, claims=["head_beats_offset"])
    dependency_section(report, tmp_path, RunTables({"dependency_table": table, "dependency_heads": heads,
                                                   "claims": claims}))
    text = render_markdown(report, tmp_path)
    # det: 45 against 5 discordant words -> rejected; amod: 7 against 5 -> not
    assert "On m / d, 1 of 2 relations have a head that beats its offset" in text
    assert claims["verdict"].tolist() == ["supported"]
    assert "(m on d; the dependency table's paired test of head against offset per relation" in text
    assert "**supported**, p = " in text
    assert "det: 0-0 dependent_to_head" in text and "Not shown better than the offset: amod" in text
    assert (tmp_path / "figures").exists() and len(list((tmp_path / "figures").glob("*.png"))) == 2


def test_the_section_names_the_law_of_each_p_value():
    """The sign-flip p-values are binomial or exact (the normal approximation only past |d| = 64): the text said
    "normal approximation" for every one."""
    from headstats.analyses.dependency.section import _test_words

    part = pd.DataFrame({"test": "signflip_sentences", "method": ["exact", "binomial", "exact", "none"]})
    words = _test_words(part)
    assert ("p from the exact law for 2 relations, the binomial law for 1 relation, column `method` of "
            "`dependency_table.csv`") in words
    assert "normal" not in words
