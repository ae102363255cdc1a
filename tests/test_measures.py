import numpy as np
import pytest

from headstats.errors import IncompatibleResultsError
from headstats.measures import MeasureArray, check_same_inputs, concat_frames


def planted():
    values = np.arange(3 * 2 * 2 * 2, dtype=np.float32).reshape(3, 2, 2, 2)
    values[1, :, :, 1] = np.nan
    return MeasureArray("m", "d", ["s0", "s1", "s2"], ("local", "syntactic"), values)


def test_to_frame_row_order_and_schema():
    frame = planted().to_frame()
    assert list(frame.columns) == ["model", "dataset", "sentence_id", "layer", "head", "role", "score"]
    # row order: input, layer, head, measure; value k is the k-th planted number
    expected = np.arange(24, dtype=np.float32)
    expected[[9, 11, 13, 15]] = np.nan  # s1, every (layer, head), syntactic
    np.testing.assert_array_equal(frame["score"].to_numpy(), expected)
    assert frame.loc[13, ["sentence_id", "layer", "head", "role"]].astype(str).tolist() == ["s1", "1", "0", "syntactic"]


def test_from_frame_inverts_to_frame():
    array = planted()
    back = MeasureArray.from_frame(array.to_frame())[0]
    np.testing.assert_array_equal(back.values, array.values)
    assert back.measures == array.measures and list(back.sentence_ids) == ["s0", "s1", "s2"]


def test_measure_select_and_shape_checks():
    array = planted()
    np.testing.assert_array_equal(array.measure("syntactic"), array.values[..., 1])
    assert array.select(["syntactic"]).values.shape == (3, 2, 2, 1)
    with pytest.raises(ValueError, match="do not fit"):
        MeasureArray("m", "d", ["a"], ("x",), np.zeros((2, 1, 1, 1)))
    with pytest.raises(KeyError, match="have local, syntactic"):
        array.measure("block")


def test_pairing_refuses_other_inputs():
    a = planted()
    b = MeasureArray("n", "d", ["s0", "s1", "sX"], a.measures, a.values)
    with pytest.raises(IncompatibleResultsError):
        check_same_inputs(a, b)
    check_same_inputs(a, MeasureArray("n", "d", a.sentence_ids, a.measures, a.values + 1))


def test_concat_frames():
    assert len(concat_frames([planted(), planted()])) == 48
    assert list(concat_frames([]).columns)[-1] == "score"
