"""The claim of the offset-matched control (METHODS 6.2 and 5.4): some head assigned a syntactic role tracks
syntax beyond position.

Per (model, data set): the (head, role) pairs where the head holds a syntactic role (``roles``) and the control
tested it (``offset_control_tests``, hypothesis ``<role>_beyond_offset``); per pair the uncorrected one-sided p of
H0: mean excess <= 0; then Holm over those pairs, and the claim's p is the smallest (the existence rule of METHODS
5.4, valid whatever the per-head correction). Its estimate is that pair's mean excess with its interval; the detail
counts the pairs that beat their control at the run's corrected level.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from headstats.analyses.offset_control.hypotheses import SUFFIX, tested_role
from headstats.stats.claims import ClaimSettings, Evidence, register_claim
from headstats.stats.corrections import correct_pvalues


@register_claim(
    "syntax_beyond_position", sentence="syntactic heads track syntax beyond position",
    source="offset-matched control (METHODS 6.2; Clark et al. 2019's fixed-offset baseline)",
    hypothesis="H0: no head assigned a syntactic role has a mean offset-matched excess > 0; H1: some such head has",
    unit="heads", test="per (head, syntactic role held) the one-sided test of the mean excess; Holm over those "
                       "pairs, smallest p",
    measure="mean offset-matched excess of the best (head, role) pair (bias units)",
    tables=("roles", "offset_control_tests"))
def syntax_beyond_position(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    tests, roles = tables["offset_control_tests"], tables["roles"]
    out = []
    for (model, dataset), part in tests.groupby(["model", "dataset"], sort=False):
        held = roles[(roles["model"].astype(str) == str(model)) & (roles["dataset"].astype(str) == str(dataset))]
        rows = []
        for r in part.itertuples():
            role = tested_role(str(r.role))
            if role not in held.columns:
                continue
            mine = held[(held["layer"] == r.layer) & (held["head"] == r.head)][role]
            if len(mine) and bool(mine.fillna(False).iloc[0]) and np.isfinite(float(r.p_unc)):
                rows.append(r)
        if not rows:
            out.append(Evidence(str(model), str(dataset), reason="no head holds a syntactic role that the control "
                                                                  "tested"))
            continue
        p_holm = correct_pvalues(np.array([float(r.p_unc) for r in rows]), "holm")
        best = int(np.argmin(p_holm))
        b = rows[best]
        passed = sum(bool(r.reject) for r in rows if pd.notna(r.reject))
        out.append(Evidence(
            str(model), str(dataset), estimate=float(b.mean), ci_low=float(b.ci_low), ci_high=float(b.ci_high),
            p_for=float(p_holm[best]),
            detail=f"{passed} of {len(rows)} (head, syntactic role) assignments beat their offset control at the "
                   f"run's corrected level; best: head {int(b.layer)}-{int(b.head)} on {tested_role(str(b.role))}"))
    return out
