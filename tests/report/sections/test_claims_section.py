"""The claims section: the claims table (claim by data set) from the registry's claims.csv, with the corrected
p-value or the reason, and the words that say the verdicts are tests with a family and a correction."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.report.sections.claims_section import claim_cell, claim_line, claims_by_dataset, claims_family_text


def planted_claims() -> pd.DataFrame:
    """claims.csv of two data sets, written by hand as evaluate_claims writes it."""
    base = dict(source="Pande et al. 2021", model="m", hypothesis="H0 ...", unit="heads", test="Fisher's exact test",
                measure="odds ratio", estimate=0.5, ci_low=0.1, ci_high=0.9, p_for=0.001, p_against=0.9, p_unc=0.002,
                correction="holm", family="the run's claims (3 that can reject)", alpha=0.05, floor=1e-5,
                detectable="", detail="1 of 4 heads")
    rows = [
        dict(base, claim="cls_early", sentence="[CLS] heads sit in the early layers", dataset="single", p=0.0047,
             verdict="supported", reason=""),
        dict(base, claim="cls_early", sentence="[CLS] heads sit in the early layers", dataset="pairs", p=0.31,
             verdict="not shown", reason="not significant after correction"),
        dict(base, claim="local_syntactic", sentence="42-88 % of heads are both local and syntactic (by task)",
             dataset="single", p=np.nan, verdict="cannot tell", family="the run's claims (cannot reject: left out)",
             reason="role out of reach: local out of reach (mean ceiling 2.71 <= tau 3)"),
        dict(base, claim="local_syntactic", sentence="42-88 % of heads are both local and syntactic (by task)",
             dataset="pairs", p=1.1e-16, verdict="contradicted", reason="significant in the other direction"),
    ]
    return pd.DataFrame(rows)


def test_claims_table_is_claim_by_data_set_with_the_corrected_p_or_the_reason():
    table = claims_by_dataset(planted_claims())
    assert list(table.columns) == ["claim", "source", "single", "pairs"]
    cells = table.set_index("claim")
    assert cells.loc["[CLS] heads sit in the early layers", "single"] == "supported (p = 0.0047)"
    assert cells.loc["[CLS] heads sit in the early layers", "pairs"] == "not shown (p = 0.31)"
    assert cells.loc["42-88 % of heads are both local and syntactic (by task)", "single"] == \
        "cannot tell (role out of reach)"
    assert cells.loc["42-88 % of heads are both local and syntactic (by task)", "pairs"] == \
        "contradicted (p = 1.1e-16)"
    # several models (or replicate groups): the columns name both
    two = pd.concat([planted_claims(), planted_claims().assign(model="m2")])
    assert list(claims_by_dataset(two).columns[2:]) == ["m / single", "m / pairs", "m2 / single", "m2 / pairs"]
    assert claim_cell(planted_claims().iloc[2].to_dict() | {"reason": ""}) == "cannot tell"


def test_claims_text_states_that_verdicts_are_tests_with_family_and_correction():
    text = claims_family_text(planted_claims())
    assert "Families (each corrected on its own, the `family` column): the run's claims (3 that can reject); Holm's step-down correction" in text
    assert "alpha = 0.05 (p <= alpha after correction)" in text
    assert "This run: 1 supported, 1 contradicted, 1 not shown, 1 cannot tell." in text
    assert "no `claims.csv`" in claims_family_text(pd.DataFrame())


def test_claim_line_gives_the_verdict_the_test_and_the_corrected_p_or_the_reason():
    rows = planted_claims()
    assert claim_line(rows.iloc[0]) == ("- **supported**: [CLS] heads sit in the early layers: 1 of 4 heads "
                                        "(Fisher's exact test; p = 0.0047 after Holm).")
    assert claim_line(rows.iloc[2]) == ("- **cannot tell**: 42-88 % of heads are both local and syntactic (by task): "
                                        "1 of 4 heads; role out of reach: local out of reach (mean ceiling 2.71 <= "
                                        "tau 3).")
