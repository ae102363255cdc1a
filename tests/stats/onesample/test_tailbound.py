"""Chernoff's draw-free bound on the bootstrap-t p-value (headstats.stats.onesample.tailbound): a bound on the
exact bootstrap law, and the cells it settles keep the full-B decision."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.stats.onesample import auto_resamples, test_roles
from headstats.stats.onesample.builtin import bootstrap_stream
from headstats.stats.onesample.sequential import clopper_pearson
from headstats.stats.onesample.tailbound import T_CAP, T_MIN, bootstrap_t_tail, chernoff_tail


def tau_of(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The tau at which each row's observed t statistic is ``t``."""
    return x.mean(axis=1) - t * x.std(axis=1, ddof=1) / np.sqrt(x.shape[1])


def exact_bootstrap_p(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """P*(t* >= t) over all N^N equally likely resamples (the stream's enumeration), one row per t."""
    k, n = x.shape
    s = bootstrap_stream(np.sort(x, axis=1), tau_of(x, t)[:, None], seed=0, n_resamples=n**n)
    assert s.exact
    s.advance(np.arange(k), s.total)
    return s.pvalues()[:, 0]


@pytest.mark.parametrize("n", [5, 6])
def test_the_bound_is_above_the_exact_bootstrap_p_value(n):
    # skewed, symmetric and tied samples; t from where a bound starts to where the exact p is its floor
    rng = np.random.default_rng(n)
    samples = [rng.gamma(0.5, 2.0, n), rng.normal(0, 1, n), rng.gamma(4.0, 1.0, n), np.r_[np.zeros(n - 2), 1, 3]]
    for x in samples:
        t = np.linspace(T_MIN, 12.0, 12)
        xs = np.tile(x, (t.size, 1))
        exact = exact_bootstrap_p(xs, t)
        bound = bootstrap_t_tail(xs, t)
        assert (bound >= exact).all(), (x, t[bound < exact], bound[bound < exact], exact[bound < exact])
        assert (bound <= 1).all() and (bound > 0).all()


def test_the_bound_is_above_a_long_monte_carlo_run_at_moderate_n():
    # N = 40 gamma scores: 300,000 draws of the seeded stream; the bound is above the Clopper-Pearson lower
    # end (risk 1e-9) of every count, and within a factor 100 of the p-value where the count is large
    rng = np.random.default_rng(3)
    x = rng.gamma(2.0, 1.0, (6, 40))
    t = np.array([2.5, 3.0, 3.5, 4.0, 4.5, 5.0])
    s = bootstrap_stream(np.sort(x, axis=1), tau_of(x, t)[:, None], seed=1, n_resamples=300_000)
    s.advance(np.arange(6), s.total)
    count = s.count[:, 0]
    lo, _ = clopper_pearson(count, np.full(6, s.total), 1e-9)
    bound = bootstrap_t_tail(x, t, s._slack[:, 0])
    assert (bound >= lo).all()
    big = count >= 30
    assert big.any() and (bound[big] <= 100 * count[big] / s.total).all()


def test_the_bound_falls_with_t_and_is_one_where_none_is_computed():
    rng = np.random.default_rng(5)
    x = rng.gamma(2.0, 1.0, (3, 60))
    t = np.array([[-1.0, 1.0, 2.5, 4.0, 6.0, 9.0, 15.0, np.nan]] * 3)
    bound = bootstrap_t_tail(x, t)
    assert bound.shape == t.shape
    assert (bound[:, :2] == 1).all() and (bound[:, -1] == 1).all()  # t < T_MIN, t NaN
    assert (np.diff(bound[:, :-1], axis=1) <= 0).all() and (bound[:, 5] < 1e-8).all()
    # beyond T_CAP the bound at T_CAP serves (T_CAP itself is taken a rounding margin below)
    np.testing.assert_allclose(bootstrap_t_tail(x, np.full(3, 2 * T_CAP)), bootstrap_t_tail(x, np.full(3, T_CAP)),
                               rtol=1e-6)
    assert (bootstrap_t_tail(np.ones((2, 10)), np.full(2, 5.0)) == 1).all()  # all scores equal: no bound


def test_chernoff_tail_against_the_normal_limit():
    # for a large N of normal scores the bootstrap-t is about normal: P(t* >= t) ~ Phi(-t); the Chernoff bound
    # is above it and within the Chernoff factor e^{-t^2/2} / Phi(-t) (about t sqrt(2 pi)) times the pieces
    from scipy.stats import norm

    z = np.random.default_rng(8).normal(0, 1, (1, 4000))
    z = (z - z.mean()) / z.std()
    for t in (3.0, 4.0, 5.0):
        bound = chernoff_tail(z, np.array([t / np.sqrt(3999 + t * t)]))[0]
        assert norm.sf(t) <= bound <= 30 * t * norm.sf(t)


def test_a_cell_settled_by_the_bound_keeps_the_full_b_decision():
    # planted: 4 heads far above tau among 40 below it and 4 near the corrected level; the strong heads stop at
    # the first look with their bound as p (noted), assigned as by the full-B run; the cells near the level
    # draw B and keep the full-B p-value bit for bit
    rng = np.random.default_rng(12)
    means = np.r_[np.full(4, 4.5), np.full(40, 2.0), np.full(4, 3.55)]
    scores = pd.DataFrame([("m", "d", f"s{i}", h // 12, h % 12, "local", v) for h, mu in enumerate(means)
                           for i, v in enumerate(rng.gamma(mu**2, 1.0 / mu, size=50))],
                          columns=["model", "dataset", "sentence_id", "layer", "head", "role", "score"])
    seq = test_roles(scores, test="bootstrap")
    full = test_roles(scores, test="bootstrap", sequential=False)
    b = auto_resamples(48, alpha=0.05, correction="holm")
    strong = seq.index[:4]
    assert (seq.loc[strong, "n_resamples"] == 250).all() and seq.loc[strong, "reject"].all()
    assert seq.loc[strong, "note"].str.contains("without drawing|none of the").all()
    assert (seq["reject"] == full["reject"]).all()
    whole = seq["n_resamples"].to_numpy() == b
    np.testing.assert_array_equal(seq.loc[whole, "p_unc"], full.loc[whole, "p_unc"])
    # the strong heads' reported p is a bound on their p-value: above what the full-B draws count, less one
    # Clopper-Pearson margin (the full-B p is a Monte Carlo estimate)
    count = full.loc[strong, "p_unc"].to_numpy() * (b + 1) - 1
    lo, _ = clopper_pearson(np.round(count), np.full(4, b), 1e-9)
    assert (seq.loc[strong, "p_unc"].to_numpy() >= lo).all()


def test_the_quantile_bound_is_above_the_exact_bootstrap_quantile():
    # N = 7: over all 7^7 resamples, P*(t* >= t_gamma) <= gamma, so t_gamma is at least the 1 - gamma quantile
    # (at so small an N the bound is loose: +inf where it cannot reach gamma)
    from headstats.stats.onesample.tailbound import bootstrap_t_quantile

    rng = np.random.default_rng(9)
    x = np.vstack([rng.gamma(0.7, 1.0, 7), rng.normal(0, 1, 7), rng.gamma(3.0, 1.0, 7)])
    for gamma in (0.05, 0.01):
        q = bootstrap_t_quantile(x, gamma)
        finite = np.isfinite(q)
        assert finite.any()
        assert (exact_bootstrap_p(x[finite], q[finite]) <= gamma).all()
    # a larger N: the 1 - 1e-3 quantile bound is above the quantile of 100,000 draws, within 2.5 t-units
    y = rng.gamma(2.0, 1.0, (3, 60))
    q = bootstrap_t_quantile(y, 1e-3)
    s = bootstrap_stream(np.sort(y, axis=1), tau_of(y, q)[:, None], seed=2, n_resamples=100_000, confidence=1 - 1e-3)
    s.advance(np.arange(3), s.total)
    drawn_q = s.quantile(1 - 1e-3)
    assert (q >= drawn_q).all() and (q - drawn_q < 2.5).all()


def test_bounds_kept_by_row_and_t_are_reused_bit_for_bit(monkeypatch):
    """A bound found for (row, t) is kept in the memo and reused: the same numbers as computing it again,
    whatever other rows were computed with it."""
    import headstats.stats.onesample.tailbound as tailbound

    rng = np.random.default_rng(4)
    x = rng.gamma(2.0, 1.0, size=(6, 40))
    t = np.array([[2.5, 4.0], [3.0, 12.0], [5.0, 6.0], [1.0, 3.5], [7.0, 2.2], [4.4, 9.0]])
    fresh = bootstrap_t_tail(x, t)
    memo = ({}, np.arange(100, 106))
    first = bootstrap_t_tail(x[:3], t[:3], memo=(memo[0], memo[1][:3]))
    np.testing.assert_array_equal(first, fresh[:3])
    assert len(memo[0]) == 6  # (row 0: 2.5, 4), (row 1: 3, 12 at T_CAP), (row 2: 5, 6)
    both = bootstrap_t_tail(x, t, memo=memo)  # rows 0-2 from the memo, 3-5 found now
    np.testing.assert_array_equal(both, fresh)

    def refuse(*a, **k):
        raise AssertionError("a kept bound was computed again")

    monkeypatch.setattr(tailbound, "find_tilts", refuse)
    np.testing.assert_array_equal(bootstrap_t_tail(x, t, memo=memo), fresh)


def test_tilts_at_are_the_tilts_of_the_bound():
    """tilts_at gives, for a (row, t) the bound kept, its tilts (the bound at their c is the bound), the same
    as found afresh; Tilts.row and Tilts.stack take rows apart and back."""
    from headstats.stats.onesample.tailbound import Tilts, bound_points, find_tilts, tilts_at

    rng = np.random.default_rng(5)
    x = rng.gamma(2.0, 1.0, size=(4, 50))
    t = np.array([3.0, 4.5, 6.0, 8.0])
    slack = np.abs(t) * 1e-14
    memo = ({}, np.arange(4))
    bound = bootstrap_t_tail(x, t, slack, memo=memo)
    kept, c = tilts_at(x, t, slack, memo=memo)
    at = bound_points(t[:, None], slack[:, None])[:, 0]
    np.testing.assert_array_equal(c, at / np.sqrt(49 + at * at))
    np.testing.assert_allclose(kept.bound(c), bound, rtol=1e-12)
    new, _ = tilts_at(x, t, slack)
    np.testing.assert_array_equal(new.lam, kept.lam)
    y = x - x.mean(axis=1, keepdims=True)
    whole = find_tilts(y / np.sqrt((y * y).mean(axis=1, keepdims=True)), c)
    again = Tilts.stack([whole.row(i) for i in range(4)])
    np.testing.assert_array_equal(again.bound(c), whole.bound(c))
