"""Mergeable running moments, per-input collectors, and the context a collector is bound to."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from headstats.engine.collector import Context, Moments, PerInputCollector
from headstats.errors import IncompatibleResultsError
from headstats.measures import MeasureArray


def test_moments_match_numpy_with_nans():
    rng = np.random.default_rng(0)
    values = rng.normal(3.0, 2.0, (50, 2, 3))
    values[rng.random(values.shape) < 0.2] = np.nan
    values[:, 1, 2] = np.nan  # a cell with no value
    values[1:, 0, 0] = np.nan  # a cell with one value
    m = Moments.zeros((2, 3))
    for start in range(0, 50, 7):
        m.add(values[start:start + 7])
    np.testing.assert_allclose(m.mean_or_nan, _nanmean(values), equal_nan=True)
    expected_sd = np.array([[np.nanstd(values[:, i, j], ddof=1) if np.isfinite(values[:, i, j]).sum() > 1 else np.nan
                             for j in range(3)] for i in range(2)])
    np.testing.assert_allclose(m.sd, expected_sd, rtol=1e-12, equal_nan=True)
    assert m.n.tolist() == np.isfinite(values).sum(0).tolist()
    assert np.isnan(m.mean_or_nan[1, 2]) and np.isnan(m.sd[0, 0]) and m.n[0, 0] == 1


def _nanmean(values):
    finite = np.isfinite(values)
    total = np.where(finite, values, 0).sum(0)
    with np.errstate(invalid="ignore"):
        return total / finite.sum(0)


def test_merge_of_shards_equals_one_pass():
    rng = np.random.default_rng(1)
    values = rng.gamma(2.0, 1.0, (40, 4))
    shards = [Moments.of(values[:5]), Moments.of(values[5:31]), Moments.of(values[31:])]
    merged = Moments.combine(shards)
    whole = Moments.of(values)
    np.testing.assert_allclose(merged.mean, values.mean(0), rtol=1e-13)
    np.testing.assert_allclose(merged.m2, whole.m2, rtol=1e-12)
    np.testing.assert_allclose(merged.sd, values.std(0, ddof=1), rtol=1e-12)
    assert Moments.combine([Moments.zeros((4,)), whole]).n.tolist() == [40] * 4
    with pytest.raises(ValueError):
        Moments.combine([])


def test_scalar_moments():
    m = Moments.zeros(())
    m.add(np.log([3.0, 5.0]))
    m.add(np.log([4.0]))
    assert float(m.mean_or_nan) == pytest.approx(np.log([3.0, 5.0, 4.0]).mean())


def test_head_frame():
    context = Context(("m",), "d", 2, 3)
    frame = context.head_frame(model="m", dataset="d", value=np.arange(6).reshape(2, 3), n=np.ones((2, 3), int))
    assert list(frame.columns) == ["model", "dataset", "layer", "head", "value", "n"]
    assert frame[["layer", "head", "value"]].values.tolist() == [[0, 0, 0], [0, 1, 1], [0, 2, 2], [1, 0, 3], [1, 1, 4],
                                                                [1, 2, 5]]
    assert context.model == "m"


class Doubled(PerInputCollector):
    """Keeps twice each input's position as its one measure (a value that shows where each row came from)."""

    def __init__(self, context):
        super().__init__(context, ["twice"])

    def update(self, view):
        self.keep(view, np.broadcast_to(2.0 * view.index[:, None, None, None], (view.size, 1, 2, 1)))

    def tables(self):
        return {}


def _view(positions):
    positions = np.asarray(positions, np.int64)
    return SimpleNamespace(size=len(positions), index=positions, sentence_ids=[f"s{p}" for p in positions])


def test_per_input_collector_keeps_rows_in_data_set_order_across_shards():
    context = Context(("m",), "d", n_layers=1, n_heads=2, provenance={"m": {"hash": "h"}})
    first, second = Doubled(context), Doubled(context)
    first.update(_view([4, 0]))
    first.update(_view([2]))
    second.update(_view([3, 1]))
    merged = Doubled(context)
    merged.load_state(Doubled.merge([first.state(), second.state()]))
    array = merged.result()
    assert isinstance(array, MeasureArray) and array.measures == ("twice",) and array.ceilings is None
    assert list(array.sentence_ids) == ["s0", "s1", "s2", "s3", "s4"] and array.provenance == {"model": {"hash": "h"}}
    assert array.values[:, 0, 1, 0].tolist() == [0.0, 2.0, 4.0, 6.0, 8.0] and array.values.dtype == np.float32
    with pytest.raises(IncompatibleResultsError, match="twice"):
        Doubled.merge([first.state(), first.state()])


def test_abs_histogram_counts_each_magnitude_as_a_loop_over_m_does():
    from headstats.engine.collector import abs_histogram, add_histograms

    d = np.random.default_rng(0).integers(-9, 10, size=(30, 3, 4))
    counted = abs_histogram(d)
    assert counted.shape == (9, 3, 4)  # as long as the largest |d|
    for m in range(1, 10):
        np.testing.assert_array_equal(counted[m - 1], (np.abs(d) == m).sum(0))
    capped = abs_histogram(d, max_abs=4)  # a larger |d| is not counted (the test then falls to normal)
    np.testing.assert_array_equal(capped, counted[:4])
    assert abs_histogram(np.zeros((5, 2), int)).shape == (0, 2)
    short = abs_histogram(np.array([[1, -2], [2, 0]]))
    total = add_histograms(short, counted[:, 0, :2])
    np.testing.assert_array_equal(total[:2], short + counted[:2, 0, :2])
    np.testing.assert_array_equal(total[2:], counted[2:, 0, :2])
    assert add_histograms(counted[:, 0, :2], short).tolist() == total.tolist()
