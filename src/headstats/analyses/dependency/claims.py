r"""The claim of Clark et al. (2019, "What Does BERT Look At?") on the dependency analysis, registered as a test
(METHODS 2 and 5.1):

- ``head_beats_offset`` (``dependency_table``): for some relation a single head predicts the head word better
  than the best fixed offset: Holm over the relations' uncorrected p-values, the smallest adjusted p.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.analyses.dependency.tables import DEPENDENCY_TABLE
from headstats.stats.claims import ClaimSettings, Evidence, register_claim
from headstats.stats.existence import some_unit_p
from headstats.tables import RunTables

CLARK = "Clark et al. 2019"


@register_claim(
    "head_beats_offset", sentence="for some relations a single head beats the best fixed-offset baseline",
    source=CLARK,
    hypothesis="H0: for every relation the chosen head is no more accurate than the best offset; H1: for some "
               "relation it is (accuracy_head > accuracy_offset on the test words)",
    unit="sentences (per relation)", test="the dependency table's paired test of head against offset per relation "
                                          "(dependency_table.csv: sign-flip over sentences by default, uncorrected p), "
                                          "Holm over the relations; claim p = the smallest adjusted p",
    measure="accuracy of the head minus the offset's, for the relation with the smallest p",
    tables=(DEPENDENCY_TABLE,))
def head_beats_offset(tables: RunTables, settings: ClaimSettings) -> list[Evidence]:
    out = []
    table = tables[DEPENDENCY_TABLE]
    for (model, dataset), part in table.groupby(["model", "dataset"], sort=False):
        rel = part[~part["relation"].astype(str).str.startswith("all")]
        rel = rel[np.isfinite(rel["p_unc"].astype(float))]
        if rel.empty:
            out.append(Evidence(str(model), str(dataset), reason="no relation had enough words to test"))
            continue
        p_some, at = some_unit_p(rel["p_unc"].astype(float))
        best = rel.iloc[at]
        passed = rel[rel["reject"].fillna(False).astype(bool)]
        out.append(Evidence(
            str(model), str(dataset),
            estimate=float(best["tested_accuracy"]) - float(best["tested_offset_accuracy"]),
            p_for=p_some, underflow_only=True,
            detail=f"{len(passed)} of {len(rel)} relations: the head beats the offset after {best['correction']} "
                   f"({', '.join(map(str, passed['relation'])) or 'none'}); smallest p for {best['relation']}"))
    return out