"""Tests of headstats.stats.matrix: MeasureArrays and the long table pack into the same hypotheses x inputs matrix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.errors import HeadstatsError
from headstats.measures import MeasureArray
from headstats.stats.matrix import HYPOTHESIS_KEYS, ScoreMatrix, score_matrix

from conftest import long_frame, planted_arrays


def assert_same_matrix(a: ScoreMatrix, b: ScoreMatrix) -> None:
    pd.testing.assert_frame_equal(a.keys, b.keys)
    assert np.array_equal(a.values, b.values, equal_nan=True)
    assert np.array_equal(a.n, b.n) and np.array_equal(a.n_missing, b.n_missing)


def test_arrays_and_long_table_give_the_same_matrix():
    arrays = planted_arrays()
    frame = long_frame(arrays)
    assert_same_matrix(score_matrix(arrays), score_matrix(frame))
    # categorical keys (MeasureArray.to_frame) sort by value, not by category order
    assert_same_matrix(score_matrix(arrays), score_matrix(pd.concat([a.to_frame() for a in arrays])))
    # one array, or a matrix already built, are accepted as they are
    one = score_matrix(arrays[0])
    assert_same_matrix(one, score_matrix(long_frame(arrays[:1])))
    assert score_matrix(one) is one


def test_hypotheses_sorted_and_scores_ordered_by_sentence_id():
    # ids b, a, c with scores 1, 2, 3 -> ordered a, b, c: 2, 1, 3; roles zeta, alpha -> alpha first
    v = np.array([1.0, 2.0, 3.0], dtype=np.float32).reshape(3, 1, 1, 1) * np.ones((1, 1, 2, 2), np.float32)
    v[1, 0, 1, 0] = np.nan  # input "a", head 1, role zeta
    mat = score_matrix([MeasureArray("m", "d", ["b", "a", "c"], ("zeta", "alpha"), v)])
    assert list(mat.keys.columns) == list(HYPOTHESIS_KEYS)
    assert mat.keys[["role", "head"]].values.tolist() == [["alpha", 0], ["alpha", 1], ["zeta", 0], ["zeta", 1]]
    assert mat.values[0].tolist() == [2.0, 1.0, 3.0]
    assert mat.values[3, :2].tolist() == [1.0, 3.0] and np.isnan(mat.values[3, 2])  # NaN packed to the right
    assert mat.n.tolist() == [3, 3, 3, 2] and mat.n_missing.tolist() == [0, 0, 0, 1]


def test_moments_computed_once():
    mat = score_matrix(planted_arrays())
    first = mat.moments()
    assert mat.moments() is first
    row = mat.values[0, : mat.n[0]]
    assert first[0][0] == row.mean() and first[1][0] == row.std(ddof=1) and first[2][0] == np.median(row)


def test_bad_inputs_raise():
    arrays = planted_arrays()
    with pytest.raises(HeadstatsError, match="two score arrays for model='m', dataset='pairs'"):
        score_matrix([arrays[1], arrays[0], arrays[1]])
    bad = MeasureArray("m", "d", ["a", "b"], ("local",), np.array([1.0, np.inf]).reshape(2, 1, 1, 1))
    with pytest.raises(HeadstatsError, match="infinite"):
        score_matrix([bad])
    with pytest.raises(TypeError, match="DataFrame .* MeasureArray"):
        score_matrix(np.zeros((3, 3)))


def test_empty_list_gives_an_empty_matrix():
    mat = score_matrix([])
    assert len(mat.keys) == 0 and list(mat.keys.columns) == list(HYPOTHESIS_KEYS) and mat.n.size == 0
