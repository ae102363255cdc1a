"""The claim of the offset-matched control (METHODS 6.2 and 5.4): some head that passes the score test for a
syntactic role tracks syntax beyond position.

Per (model, data set): the (head, role) pairs where the head's score test rejected H0: mean score <= tau for a
syntactic role (``tests``: ``reject``, or ``gate_removed`` when the offset gate took the role away: the claim asks
about the heads the score test finds, before the gate, so that it does not only restate the gate) and the control
tested it (``offset_control_tests``, hypothesis ``<role>_beyond_offset``); per pair the uncorrected one-sided p of
H0: mean excess <= 0; then Holm over those pairs, and the claim's p is the smallest (the existence rule of METHODS
5.4, valid whatever the per-head correction). Its estimate is that pair's mean excess with its interval; the detail
counts the pairs that beat their control at the run's corrected level.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.analyses.offset_control.options import SUFFIX, tested_role
from headstats.analyses.offset_control.tables import OFFSET_CONTROL_TESTS
from headstats.stats.claims import ClaimSettings, Evidence, register_claim
from headstats.stats.corrections import correct_pvalues
from headstats.tables import RunTables
from headstats.tables.study_tables import TESTS


@register_claim(
    "syntax_beyond_position", sentence="syntactic heads track syntax beyond position",
    source="offset-matched control (METHODS 6.2; Clark et al. 2019's fixed-offset baseline)",
    hypothesis="H0: no head whose score passes tau for a syntactic role has a mean offset-matched excess > 0; "
               "H1: some such head has",
    unit="heads", test="per (head, syntactic role) whose score test rejects (before the offset gate) the one-sided "
                       "test of the mean excess; Holm over those pairs, smallest p",
    measure="mean offset-matched excess of the best (head, role) pair (bias units)",
    tables=(TESTS, OFFSET_CONTROL_TESTS))
def syntax_beyond_position(tables: RunTables, settings: ClaimSettings) -> list[Evidence]:
    tests, passed = tables[OFFSET_CONTROL_TESTS], passed_score_test(tables[TESTS])
    out = []
    for (model, dataset), part in tests.groupby(["model", "dataset"], sort=False):
        rows = [r for r in part.itertuples() if np.isfinite(float(r.p_unc))
                and (str(model), str(dataset), tested_role(str(r.role)), int(r.layer), int(r.head)) in passed]
        if not rows:
            out.append(Evidence(str(model), str(dataset), reason="no head passes the score test for a syntactic "
                                                                  "role that the control tested"))
            continue
        p_holm = correct_pvalues(np.array([float(r.p_unc) for r in rows]), "holm")
        best = int(np.argmin(p_holm))
        b = rows[best]
        beat = sum(bool(r.reject) for r in rows if pd.notna(r.reject))
        out.append(Evidence(
            str(model), str(dataset), estimate=float(b.mean), ci_low=float(b.ci_low), ci_high=float(b.ci_high),
            p_for=float(p_holm[best]),
            detail=f"{beat} of {len(rows)} (head, syntactic role) pairs that pass tau beat their offset control at "
                   f"the run's corrected level; best: head {int(b.layer)}-{int(b.head)} on {tested_role(str(b.role))}"))
    return out


def passed_score_test(tests: pd.DataFrame) -> set[tuple]:
    """The (model, data set, role, layer, head) whose score test rejected H0: mean score <= tau, before the offset
    gate (``reject``, or ``gate_removed``: assigned by the score test, taken away by the gate)."""
    passed = tests["reject"].fillna(False).astype(bool)
    if "gate_removed" in tests:
        passed |= tests["gate_removed"].fillna(False).astype(bool)
    keys = tests.loc[passed, ["model", "dataset", "role", "layer", "head"]]
    return {(str(m), str(d), str(r), int(layer), int(h)) for m, d, r, layer, h in keys.itertuples(index=False)}
