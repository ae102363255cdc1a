"""head_beats_offset reads Table 1: Holm over the relations (not "all") of the uncorrected p, the smallest adjusted
p (issue 32: valid whatever the per-head correction)."""

import numpy as np
import pandas as pd

from headstats.analyses.dependency.claims import head_beats_offset
from headstats.stats.claims import ClaimSettings


def table(p_unc: dict[str, float]) -> pd.DataFrame:
    rows = [{"model": "m", "dataset": "d", "relation": rel, "p_unc": p, "p_corr": p, "reject": p <= 0.05,
             "correction": "holm", "tested_accuracy": 0.6 + i / 10, "tested_offset_accuracy": 0.5}
            for i, (rel, p) in enumerate(p_unc.items())]
    return pd.DataFrame(rows)


def test_the_claim_is_holm_over_the_relations_of_the_uncorrected_p():
    [evidence] = head_beats_offset({"dependency_table": table({"all": 1e-9, "nsubj": 0.01, "det": 0.2,
                                                               "amod": np.nan})}, ClaimSettings())
    assert evidence.p_for == 2 * 0.01 and evidence.estimate == 0.7 - 0.5  # nsubj: 2 relations tested
    assert evidence.detail.startswith("1 of 2 relations") and "(nsubj)" in evidence.detail


def test_no_relation_with_enough_words_cannot_tell():
    [evidence] = head_beats_offset({"dependency_table": table({"all": 0.01, "det": np.nan})}, ClaimSettings())
    assert evidence.reason == "no relation had enough words to test"
