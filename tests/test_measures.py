import numpy as np
import pytest

from headstats.errors import IncompatibleResultsError
from headstats.measures import MeasureArray, check_same_inputs


def planted():
    values = np.arange(3 * 2 * 2 * 2, dtype=np.float32).reshape(3, 2, 2, 2)
    values[1, :, :, 1] = np.nan
    return MeasureArray("m", "d", ["s0", "s1", "s2"], ("local", "syntactic"), values)


def test_to_frame_row_order_and_schema():
    frame = planted().to_frame()
    assert list(frame.columns) == ["model", "dataset", "measure", "sentence_id", "layer", "head", "role", "score"]
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


def test_html_summary_shows_shape_each_measure_and_provenance():
    values = np.full((4, 2, 3, 2), np.nan, dtype=np.float32)
    values[:, :, :, 0] = 1.0
    values[:, 1, 2, 0] = [3.0, 5.0, 7.0, 9.0]  # the highest head: layer 1, head 2, mean 6
    values[:2, 0, 0, 1] = [2.0, 4.0]  # two inputs take part in the second measure; one head has a mean
    provenance = {"model": {"hub_id": "org/<model>", "weights_sha256": {"model.safetensors": "0123456789abcdef"}}}
    array = MeasureArray("m", "d&d", ["a", "b", "c", "d"], ("local", "syntactic:nsubj"), values, provenance)
    page = array._repr_html_()
    assert "4 inputs &times; 2 layers &times; 3 heads &times; 2 measures" in page
    assert "<code>d&amp;d</code>" in page and "org/&lt;model&gt;" in page
    cells = lambda *c: "".join(f"<td style='text-align:left'>{x}</td>" for x in c)  # noqa: E731
    mean_local = (1.0 * 5 + 6.0) / 6
    assert cells("local", 4, f"{mean_local:.3g}", "1, 2 (6)") in page
    assert cells("syntactic:nsubj", 2, "3", "0, 0 (3)") in page
    assert "model.safetensors 0123456789ab" in page and "sentence ids: a, b, c, ..." in page


def test_repr_is_short_whatever_the_size():
    """repr() of a MeasureArray: at most 15 lines, the shape, the first measures, the provenance."""
    from headstats.measures import REPR_LINES

    roles = tuple(f"role{i}" for i in range(40))
    values = np.ones((5000, 12, 12, 40), dtype=np.float32)
    values[:, 11, 7, 0] = 4.0
    provenance = {"model": {"path": "/models/bert", "weights_sha256": {"model.safetensors": "0123456789abcdef"}}}
    text = repr(MeasureArray("bert", "ewt", [f"s{i}" for i in range(5000)], roles, values, provenance))
    lines = text.splitlines()
    assert len(lines) <= REPR_LINES == 15
    assert lines[0].startswith("MeasureArray 'bert' on 'ewt': 5,000 inputs x 12 layers x 12 heads x 40 measures")
    assert lines[2].split() == ["role0", "5000", "1.02", "11,", "7", "(4)"]  # mean over heads: (143 + 4) / 144
    assert any(line.strip().startswith("... and ") and line.endswith(" more measures") for line in lines)
    assert "  model: /models/bert" in lines and "  weights sha256: model.safetensors 0123456789ab" in lines
    assert lines[-1] == "  sentence ids: s0, s1, s2, ..."
    small = repr(MeasureArray("m", "d", ["a"], ("local",), np.zeros((1, 1, 1, 1), np.float32)))
    assert small.splitlines() == [
        "MeasureArray 'm' on 'd': 1 inputs x 1 layers x 1 heads x 1 measures (float32, 0.0 MiB; layers and heads "
        "from 0)", "  measure  inputs taking part  mean  highest head (layer, head)",
        "  local    1                   0     0, 0 (0)", "  sentence ids: a"]
