"""The claim "syntactic heads track syntax beyond position" on constructed tables: Holm over the (head, role)
pairs the head holds, the smallest p (METHODS 5.4), checked against statsmodels."""

from __future__ import annotations

import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from headstats.analyses.offset_control.claims import syntax_beyond_position
from headstats.stats.claims import ClaimSettings

#: the score tests: 0-0 amod assigned, 1-0 amod taken away by the offset gate (still counted: the claim is about the
#: heads that pass tau), 1-0 and 1-1 nsubj assigned; 0-1 amod and 1-1 amod not
ROLE_TESTS = pd.DataFrame({
    "model": "m", "dataset": "d", "layer": [0, 0, 1, 1, 0, 1, 1], "head": [0, 1, 0, 1, 0, 0, 1],
    "role": ["syntactic:amod"] * 4 + ["syntactic:nsubj"] * 3,
    "reject": [True, False, False, False, False, True, True],
    "gate_removed": pd.array([False, False, True, False, False, False, False], dtype="boolean")})
TESTS = pd.DataFrame({
    "model": "m", "dataset": "d", "layer": [0, 0, 1, 1, 0, 1, 1], "head": [0, 1, 0, 1, 0, 0, 1],
    "role": ["syntactic:amod_beyond_offset"] * 4 + ["syntactic:nsubj_beyond_offset"] * 3,
    "mean": [0.5, 2.0, 0.1, 3.0, 1.0, 0.8, 0.05], "ci_low": [0.1, 1.0, -0.2, 2.0, 0.5, 0.3, -0.1],
    "ci_high": [float("inf")] * 7, "p_unc": [0.01, 1e-6, 0.3, 1e-8, 0.002, 0.004, 0.4],
    "reject": [True, True, False, True, True, True, False]})


def test_the_claim_is_holm_over_the_pairs_passing_tau_smallest_p():
    [evidence] = syntax_beyond_position({"tests": ROLE_TESTS, "offset_control_tests": TESTS}, ClaimSettings())
    # pairs that pass tau: (0-0 amod, 0.01), (1-0 amod, 0.3), (1-0 nsubj, 0.004), (1-1 nsubj, 0.4); 0-1 and 1-1 amod
    # do not pass tau, so their tiny p-values do not count
    held = [0.01, 0.3, 0.004, 0.4]
    expected = multipletests(held, method="holm")[1].min()
    assert evidence.p_for == pytest.approx(expected, rel=1e-12)
    assert evidence.estimate == pytest.approx(0.8) and "2 of 4" in evidence.detail and "head 1-0" in evidence.detail


def test_no_head_passing_tau_cannot_tell():
    tests = ROLE_TESTS.assign(reject=False, gate_removed=pd.NA)
    [evidence] = syntax_beyond_position({"tests": tests, "offset_control_tests": TESTS}, ClaimSettings())
    assert evidence.reason.startswith("no head passes the score test")
