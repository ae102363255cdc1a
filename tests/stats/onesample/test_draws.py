"""The seeded null draws read on demand (headstats.stats.onesample.draws): the same counts whatever the looks,
the fixed-B tests' numbers, quantiles from the kept largest statistics."""

from __future__ import annotations

import numpy as np
import pytest

from headstats.stats.onesample.builtin import bootstrap_stream, permutation_stream
from headstats.stats.onesample.draws import RESAMPLE_BLOCK, BootstrapStream


def scores(k: int = 6, n: int = 25, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sort(rng.gamma(4.0, 0.8, (k, n)) + np.linspace(0, 1.5, k)[:, None], axis=1)


@pytest.mark.parametrize("make", [bootstrap_stream, permutation_stream])
def test_counts_do_not_depend_on_the_looks_or_on_which_rows_are_read(make):
    x = scores()
    taus = np.tile([2.5, 3.0, 3.5], (6, 1))
    whole = make(x, taus, seed=4, n_resamples=2999)
    whole.advance(np.arange(6), 2999)
    looked = make(x, taus, seed=4, n_resamples=2999)
    for look in (250, 500, 1000, 2000, 2999):  # looks inside and across the blocks of 1,000
        looked.advance(np.arange(6), look)
    np.testing.assert_array_equal(looked.count, whole.count)
    # rows stopped early keep the count of their first L draws; the others go on with the same draws
    part = make(x, taus, seed=4, n_resamples=2999)
    part.advance(np.arange(6), 250)
    first = part.count.copy()
    part.advance(np.array([1, 4]), 2999)
    np.testing.assert_array_equal(part.count[[1, 4]], whole.count[[1, 4]])
    np.testing.assert_array_equal(part.count[[0, 2, 3, 5]], first[[0, 2, 3, 5]])
    assert list(part.drawn) == [250, 2999, 250, 250, 2999, 250]
    assert ((part.count >= 0) & (part.count <= part.drawn[:, None])).all()


def test_each_tau_of_a_stream_is_the_one_tau_stream():
    x = scores(seed=1)
    for make in (bootstrap_stream, permutation_stream):
        grid = make(x, np.tile([2.0, 3.0], (6, 1)), seed=2, n_resamples=1500)
        grid.advance(np.arange(6), 1500)
        for j, tau in enumerate((2.0, 3.0)):
            one = make(x, tau, seed=2, n_resamples=1500)
            one.advance(np.arange(6), 1500)
            np.testing.assert_array_equal(grid.count[:, j], one.count[:, 0])


def test_rows_read_together_must_be_at_the_same_draw_and_blocks_in_order():
    s = bootstrap_stream(scores(), 3.0, seed=0, n_resamples=2999)
    s.advance(np.array([0]), 500)
    with pytest.raises(ValueError, match="same number"):
        s.advance(np.array([0, 1]), 1000)
    s.advance(np.array([1]), RESAMPLE_BLOCK * 2)
    with pytest.raises(ValueError, match="in order"):
        s.advance(np.array([0]), 1000)  # row 0 needs block 0 again: a new stream reads it


def test_quantile_from_the_kept_largest_is_numpys_over_all_draws():
    x = scores(k=3, n=30, seed=5)
    keep = BootstrapStream(x, np.full((3, 1), 3.0), seed=1, n_resamples=2000, keep=2000)  # every draw kept
    keep.advance(np.arange(3), 2000)
    few = bootstrap_stream(x, 3.0, seed=1, n_resamples=2000, confidence=0.9)
    few.advance(np.arange(3), 2000)
    assert few.top.shape[1] < 250
    every = keep.top  # all 2,000 statistics of each row
    for level in (0.9, 0.95, 0.999):
        np.testing.assert_allclose(few.quantile(level), np.quantile(every, level, axis=1), rtol=1e-13)
    assert np.isnan(few.quantile(0.5)).all()  # the median is not among the kept largest


def test_sign_flip_tail_is_hoeffdings_bound_and_bounds_the_exact_p_value():
    from itertools import product

    rng = np.random.default_rng(8)
    x = np.sort(rng.gamma(4.0, 0.9, (5, 12)) + np.array([0.0, 0.5, 1.0, 1.5, 2.0])[:, None], axis=1)
    s = permutation_stream(x, 3.0, seed=0, n_resamples=10**6)  # 2^12 <= B: enumerated, exact p
    s.advance(np.arange(5), s.total)
    d = x - 3.0
    hoeffding = np.where(d.sum(axis=1) > 0, np.exp(-d.sum(axis=1) ** 2 / (2 * (d * d).sum(axis=1))), 1.0)
    np.testing.assert_allclose(s.tail[:, 0], hoeffding, rtol=1e-9)
    signs = np.array(list(product([-1.0, 1.0], repeat=12)))
    exact = ((signs @ d.T) >= d.sum(axis=1) - 1e-12).mean(axis=0)  # by brute force
    np.testing.assert_allclose(s.pvalues()[:, 0], exact)
    assert (exact <= s.tail[:, 0]).all() and (s.tail[:, 0] < 1).any()


def test_the_bootstrap_screen_counts_what_every_null_statistic_counts():
    """The counts-only path (no quantiles kept) computes t* only for draws that can reach a limit; its counts
    equal those of every null statistic against every limit, on rows where the screen serves and where it
    does not (limits <= 0, above SCREEN_MAX, NaN), near-constant rows (t* = +-inf or 0) and N = 2."""
    from headstats.stats.onesample.draws import SCREEN_MAX, _counts

    rng = np.random.default_rng(7)
    for n in (2, 5, 40):
        x = np.sort(np.vstack([
            rng.gamma(3.0, 1.0, (6, n)),
            np.full((1, n), 2.0) + np.r_[0.0, np.full(n - 1, 1e-13)],  # near-constant: se 0 in most resamples
            np.full((1, n), 2.0),  # constant: no t
            rng.normal(0.0, 1e-9, (1, n)) + 5.0,  # a tiny spread far from 0
        ]), axis=1)
        k = x.shape[0]
        s = BootstrapStream(x, np.zeros((k, 1)), seed=3, n_resamples=3000)
        block = s._block_at(0)
        null = s._null(np.arange(k), block, 0, RESAMPLE_BLOCK)
        # limits at the null's own quantiles (draws exactly at a limit), plus the edge cases of the screen
        at = np.quantile(np.where(np.isfinite(null), null, 0.0), [0.5, 0.9, 0.99, 0.999], axis=1).T
        rows = [at, at - 1e-12, np.c_[at[:, :2], np.full((k, 2), -1.0)], np.full((k, 4), 2 * SCREEN_MAX),
                np.c_[at[:, :3], np.full(k, np.nan)], np.full((k, 4), np.nan), np.c_[np.full(k, 1e-9), at[:, 1:]]]
        for limit in rows:
            for part in (np.arange(k), np.array([0, 6, 8])):
                got = s._exceedances(part, block, 0, RESAMPLE_BLOCK, limit[part])
                np.testing.assert_array_equal(got, _counts(null[part], limit[part]))
        assert _counts(null, at).sum() > 0  # the limits are reached: the screen has draws to keep
