"""The "role is learned" claims against random-init controls (METHODS 6.3), on constructed role tables, against
scipy's Fisher exact test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from headstats.stats.claims import ClaimSettings, evaluate_claims
from headstats.analyses.pande_roles.claims.controls import learned_evidence


def role_table(model: str, held: int, n_layers: int = 6, n_heads: int = 12) -> pd.DataFrame:
    n = n_layers * n_heads
    layer, head = np.divmod(np.arange(n), n_heads)
    return pd.DataFrame({"model": model, "dataset": "d", "layer": layer, "head": head,
                         "local": np.arange(n) < held, "roles": "", "n_roles": 0})


TABLES = {
    "roles": pd.concat([role_table("m", 30), role_table("m@random0", 2), role_table("m@random1", 5)]),
    "controls": pd.DataFrame({"model": ["m", "m"], "control": ["m@random0", "m@random1"]}),
}


def test_learned_takes_the_largest_fisher_p_over_the_control_seeds():
    [evidence] = learned_evidence(TABLES, "local")
    p = [sps.fisher_exact([[30, 42], [k, 72 - k]], alternative="greater").pvalue for k in (2, 5)]
    q = [sps.fisher_exact([[30, 42], [k, 72 - k]], alternative="less").pvalue for k in (2, 5)]
    assert evidence.p_for == pytest.approx(max(p), rel=1e-12)
    assert evidence.p_against == pytest.approx(max(q), rel=1e-12)
    assert evidence.estimate == pytest.approx(30 / 72 - 5 / 72)
    assert "m@random1: 5 of 72" in evidence.detail
    claims = evaluate_claims(TABLES, ClaimSettings(), claims=["learned:local"])
    assert claims["verdict"].tolist() == ["supported"] and claims["model"].tolist() == ["m"]


def test_no_controls_no_evidence_and_an_untested_role_is_left_out():
    assert learned_evidence({"roles": TABLES["roles"]}, "local") == []
    assert learned_evidence(TABLES, "block") == []


def test_a_control_holding_as_many_heads_is_not_shown():
    tables = {"roles": pd.concat([role_table("m", 10), role_table("m@random0", 10)]),
              "controls": pd.DataFrame({"model": ["m"], "control": ["m@random0"]})}
    claims = evaluate_claims(tables, ClaimSettings(), claims=["learned:local"])
    assert claims["verdict"].tolist() == ["not shown"]
