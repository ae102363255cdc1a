"""Tests of headstats.stats.corrections against statsmodels.stats.multitest.multipletests."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from headstats.errors import HeadstatsError
from headstats.stats.corrections import (
    check_correction,
    correct_pvalues,
    correct_pvalues_rows,
    list_corrections,
)

RNG = np.random.default_rng(0)
P = RNG.random(25) ** 3


@pytest.mark.parametrize("method", ["holm", "bonferroni", "fdr_bh", "fdr_by"])
def test_matches_statsmodels(method):
    # matches statsmodels.stats.multitest.multipletests with the same method
    assert np.allclose(correct_pvalues(P, method), multipletests(P, method=method)[1])


def test_hand_computed_holm_and_bh():
    p = [0.01, 0.04, 0.03, 0.5]
    # holm: sorted .01*4=.04, .03*3=.09, .04*2=.08 -> cummax .09, .5*1 -> .5
    assert np.allclose(correct_pvalues(p, "holm"), [0.04, 0.09, 0.09, 0.5])
    # bh: .01*4/1=.04, .03*4/2=.06, .04*4/3=.0533, .5 -> reverse cummin: .04, .0533, .0533, .5
    assert np.allclose(correct_pvalues(p, "fdr_bh"), [0.04, 0.16 / 3, 0.16 / 3, 0.5])


def test_nans_stay_out_of_the_family():
    p = np.r_[P[:5], np.nan, P[5:10]]
    out = correct_pvalues(p, "bonferroni")
    assert np.isnan(out[5])
    assert np.allclose(np.delete(out, 5), np.minimum(1, np.delete(p, 5) * 10))
    assert np.isnan(correct_pvalues([np.nan, np.nan], "holm")).all()
    assert np.array_equal(correct_pvalues(P, "none"), P)


def test_unknown_correction_lists_known():
    with pytest.raises(HeadstatsError, match="holm, bonferroni, fdr_bh, fdr_by, none"):
        check_correction("hommel")
    assert list_corrections() == ["holm", "bonferroni", "fdr_bh", "fdr_by", "none"]


@pytest.mark.parametrize("method", ["holm", "bonferroni", "fdr_bh", "fdr_by", "none"])
def test_rows_version_equals_correct_pvalues_row_by_row(method):
    p = RNG.random((25, 30)) ** 3  # few rows: statsmodels' Holm runs gc.collect() on every call
    p[RNG.random(p.shape) < 0.1] = np.nan
    p[7] = np.nan
    rows = correct_pvalues_rows(p, method)
    ref = np.array([correct_pvalues(r, method) for r in p])  # each row via statsmodels multipletests
    assert np.allclose(rows, ref, equal_nan=True)
