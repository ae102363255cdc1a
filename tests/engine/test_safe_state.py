"""The safe state format: numbers in npz (no pickle), the rest JSON; everything else refused loudly."""

from __future__ import annotations

import io
import pickle
import zipfile
from collections import Counter

import numpy as np
import pytest

from headstats.analyses.finetune_comparison.collect import AttentionSimilarity
from headstats.engine.collector import Context, Moments, ScoreState
from headstats.engine.safe_state import DamagedState, UnsupportedState, pack, unpack


def same(a, b) -> bool:
    """Equal values and types, arrays by dtype, shape and bits (NaN equal to NaN)."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and (
            np.array_equal(a, b, equal_nan=a.dtype.kind in "fc") if a.dtype != object else a.tolist() == b.tolist())
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if hasattr(a, "__dataclass_fields__"):
        return all(same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


def test_every_state_type_round_trips():
    ids = np.empty(3, dtype=object)
    ids[:] = ["s0", "<script>", "=1+2"]
    scores = ScoreState(np.arange(3, dtype=np.int64), ids, np.random.default_rng(0).random((3, 2, 2, 4), np.float32),
                        ("local", "block", "x", "y"))
    moments = Moments.zeros((2, 3))
    moments.add(np.arange(12.0).reshape(2, 2, 3))
    scalar_moments = Moments.zeros(())
    scalar_moments.add(np.array([1.0, 2.5]))  # numpy scalars inside (float64 is a float: kept as numpy)
    similarity = AttentionSimilarity(Context(("a", "b"), "d", 2, 3)).state()
    value = {
        "state": {"relations": {"nsubj": {"n": np.zeros(2, np.int64)}}, "offsets": [-1, 1], "skipped": None,
                  "pieces": [(1, 2), (3,)], "half": np.float16(0.5), "flag": np.bool_(True)},
        "counts": {"n_scored": 3, "skipped": Counter({"too_long": 2}), "notes": {}},
        1: {(0, "x"): float("nan"), 2: float("-inf")}, "blob": b"\x00\x80abc", "u": np.array(["a", "bc"]),
        "scores": scores, "moments": moments, "scalar": scalar_moments, "similarity": similarity, "big": 10**30,
    }
    back = unpack(pack(value))
    assert same(back, value)
    assert isinstance(back["counts"]["skipped"], Counter) and isinstance(back["scalar"].m2, np.float64)


@pytest.mark.parametrize("value, needle", [
    ({1, 2}, "set"), (np.array([object()], dtype=object), "object array"), (object(), "cannot be stored"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), "dtype datetime64"), ({"a": [pickle]}, "module"),
])
def test_anything_else_is_refused_loudly(value, needle):
    with pytest.raises(UnsupportedState, match=needle):
        pack(value)


def _npz(**members) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **members)
    return buffer.getvalue()


def _tree(text: str) -> np.ndarray:
    return np.frombuffer(text.encode(), dtype=np.uint8)


@pytest.mark.parametrize("data", [
    b"", b"random bytes" * 10, pickle.dumps({"x": 1}),
    _npz(tree=_tree('{"$array": 0}'), a0=np.array([{"x": 1}], dtype=object)),  # an object array: a pickle inside
    _npz(tree=_tree('{"$dataclass": ["os", "system"], "fields": {}}')),  # a class outside the states
    _npz(tree=_tree('{"$dataclass": ["headstats.engine.cache", "StateCache"], "fields": {"root": "/"}}')),
    _npz(tree=_tree('{"$array": 3}')), _npz(tree=_tree('{"$weird": 1}')), _npz(tree=_tree("[" * 10000)),
    _npz(tree=_tree('{"$strings": [1], "shape": [1], "dtype": "O"}')), _npz(tree=_tree("not json")),
    _npz(tree=_tree("1"), other=np.zeros(2)),  # an unexpected member name
])
def test_a_payload_that_is_not_a_state_is_damaged_never_code(data):
    with pytest.raises(DamagedState):
        unpack(data)


def test_a_deflated_member_is_refused(tmp_path):
    """A compressed member could be a decompression bomb: the format stores members as they are."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, tree=_tree("1"))
    with pytest.raises(DamagedState, match="unexpected member"):
        unpack(buffer.getvalue())
    assert unpack(_npz(tree=_tree("1"))) == 1
    with zipfile.ZipFile(io.BytesIO(pack({"a": np.zeros(3)}))) as archive:
        assert sorted(archive.namelist()) == ["a0.npy", "tree.npy"]
