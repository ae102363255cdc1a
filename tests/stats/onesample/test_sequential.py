"""Sequential resampling (headstats.stats.onesample.sequential): each cell stops once its corrected decision is
settled; the cells drawn to B are the fixed-B run's, the stopped ones keep its decision."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from headstats.stats.corrections import correct_rows_within_families, family_labels, reject
from headstats.stats.matrix import score_matrix
from headstats.stats.onesample import auto_resamples, test_roles
from headstats.stats.onesample.sequential import IMPORTANCE_AFTER, clopper_pearson, looks, sequential_pvalues
from headstats.stats.sensitivity import tau_sensitivity


def planted(m: int = 120, n: int = 30, seed: int = 0) -> pd.DataFrame:
    """One family of m hypotheses: means spread from 2 to 4.2 around tau = 3 (sd 1, gamma), some near the
    corrected level, most far from it on either side; the last role has fewer inputs (a second block)."""
    rng = np.random.default_rng(seed)
    rows = []
    means = np.linspace(2.0, 4.2, m)
    for h, mu in enumerate(means):
        role, k = ("local", n) if h % 3 else ("block", n - 7)
        xs = rng.gamma(mu**2, 1.0 / mu, size=k)
        rows += [("m", "d", f"s{i}", h // 12, h % 12, role, v) for i, v in enumerate(xs)]
    return pd.DataFrame(rows, columns=["model", "dataset", "sentence_id", "layer", "head", "role", "score"])


def test_looks_double_from_250_and_end_at_b():
    assert looks(2999) == [250, 500, 1000, 2000, 2999]
    assert looks(250) == [250]
    assert looks(143999)[-2:] == [128000, 143999]


def test_clopper_pearson_is_statsmodels_beta_interval():
    counts = np.array([0, 3, 50, 250])
    lo, hi = clopper_pearson(counts, np.full(4, 250), 1e-4)
    ref_lo, ref_hi = proportion_confint(counts, 250, alpha=1e-4, method="beta")
    np.testing.assert_allclose(lo, np.nan_to_num(ref_lo), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(hi, np.nan_to_num(ref_hi, nan=1.0), rtol=1e-10)


@pytest.mark.parametrize("test", ["bootstrap", "permutation"])
@pytest.mark.parametrize("correction", ["holm", "fdr_bh"])
def test_sequential_keeps_the_full_b_decisions(test, correction):
    scores = planted()
    seq = test_roles(scores, test=test, correction=correction)
    full = test_roles(scores, test=test, correction=correction, sequential=False)
    b = auto_resamples(120, alpha=0.05, correction=correction)
    assert (full["n_resamples"] == b).all()
    drawn = seq["n_resamples"].to_numpy(dtype=float)
    stopped = drawn < b
    # most cells stop early (far from their level), the strong ones and those near the level draw all B
    assert stopped.mean() > 0.5 and set(drawn[stopped]) <= set(looks(b)[:-1])
    assert np.mean(drawn[stopped] == 250) > 0.5  # most of them at the first look
    assert seq.loc[stopped, "note"].str.contains("sequential: stopped after").all()
    # cells drawn to B: the fixed-B run's p-value, bit for bit; same decision everywhere
    np.testing.assert_array_equal(seq.loc[~stopped, "p_unc"], full.loc[~stopped, "p_unc"])
    assert (seq["reject"] == full["reject"]).all()
    assert 0 < seq["reject"].sum() < len(seq)
    # a stopped cell's p is the Monte Carlo p of its own draws, (1 + count) / (1 + L) with count an integer,
    # or (said in its note) the test's draw-free bound when that is smaller: only strong heads, assigned
    by_bound = seq["note"].str.contains("computed without drawing").to_numpy()
    assert by_bound.any() and (stopped[by_bound]).all() and seq.loc[by_bound, "reject"].all()
    assert (seq.loc[by_bound, "p_unc"] < 1 / (1 + drawn[by_bound])).all()
    mc = stopped & ~by_bound
    count = seq.loc[mc, "p_unc"] * (1 + drawn[mc]) - 1
    np.testing.assert_allclose(count, np.round(count), atol=1e-6)


def test_bootstrap_bounds_of_cells_drawn_to_b_are_the_fixed_runs():
    scores = planted(seed=3)
    seq = test_roles(scores, test="bootstrap")
    full = test_roles(scores, test="bootstrap", sequential=False)
    whole = seq["n_resamples"].to_numpy(dtype=float) == full["n_resamples"].to_numpy(dtype=float)
    assert whole.any() and (~whole).any()
    for col in ("ci_low", "ci_low_adj"):
        np.testing.assert_allclose(seq.loc[whole, col], full.loc[whole, col], rtol=1e-12)
    # a stopped cell's marginal bound comes from its own draws (at least 10 beyond the 95 % quantile);
    # its Holm-adjusted level 1 - 0.05/120 needs more draws than it took: NaN, but for the strong heads
    # settled by the draw-free bound, whose quantile comes from that bound (above the bootstrap-t quantile,
    # so their adjusted bound is below the full-B run's)
    assert seq.loc[~whole, "ci_low"].notna().all()
    strong = (~whole) & seq["note"].str.contains("without drawing|none of the").to_numpy()
    assert strong.any() and seq.loc[(~whole) & ~strong, "ci_low_adj"].isna().all()
    adj, ref = seq.loc[strong, "ci_low_adj"], full.loc[strong, "ci_low_adj"]
    assert (adj <= ref).all() and np.isfinite(adj).all() and (ref - adj < 0.5).all()
    # and the marginal bound is close to the fixed run's (same stream, fewer draws)
    assert (seq.loc[~whole, "ci_low"] - full.loc[~whole, "ci_low"]).abs().max() < 0.5


def test_an_explicit_number_of_resamples_is_drawn_by_every_cell():
    out = test_roles(planted(m=24), test="bootstrap", n_resamples=999)
    assert (out["n_resamples"] == 999).all()


def test_every_stopped_cell_has_the_decision_of_its_box_whatever_the_risk():
    # with a huge risk the boxes are narrow and some stopped cells could be decided wrongly; the final
    # correction of the reported p-values must still give each stopped cell the decision of both box ends
    mat = score_matrix(planted(seed=5))
    labels = family_labels(mat.keys, ("model", "dataset")).to_numpy()
    for risk in (0.9, 1e-3):
        run = sequential_pvalues(mat, test="bootstrap", taus=3.0, alphas=[0.05], correction="holm", labels=labels,
                                 seed=0, n_resamples=29999, min_n=2, risk=risk)
        final = reject(correct_rows_within_families(run.p, labels, correction="holm"), 0.05)
        for end in (run.low, run.high):
            ends = reject(correct_rows_within_families(end, labels, correction="holm"), 0.05)
            assert (ends[:, run.stopped] == final[:, run.stopped]).all()
        assert ((run.low <= run.p) & (run.p <= run.high))[:, np.isfinite(run.p[0])].all()


@pytest.mark.parametrize("test", ["bootstrap", "permutation"])
def test_tau_grid_reads_one_stream(test):
    scores = planted(m=60, seed=7)
    taus = [2.5, 3.0, 3.5]
    full = tau_sensitivity(scores, test=test, taus=taus, alphas=[0.05, 0.1], sequential=False)
    # the fixed run in one pass of draws for all taus is the per-tau test's, tau by tau
    for tau in taus:
        one = test_roles(scores, test=test, tau=tau, alpha=0.05, n_resamples=auto_resamples(
            60, alpha=0.05, correction="holm"))
        counts = full.query("tau == @tau and alpha == 0.05").set_index("role")["n_heads_assigned"]
        assert (one.groupby("role")["reject"].sum() == counts).all()
    if test == "permutation":  # no importance sampling for the sign flips: the sequential grid keeps the counts
        seq = tau_sensitivity(scores, test=test, taus=taus, alphas=[0.05, 0.1])
        pd.testing.assert_frame_equal(seq, full)


def _grid_runs(m: int = 60, seed: int = 7, **extra):
    mat = score_matrix(planted(m=m, seed=seed))
    labels = family_labels(mat.keys, ("model", "dataset")).to_numpy()
    kw = dict(test="bootstrap", taus=np.tile([2.5, 3.0, 3.5], (m, 1)), alphas=[0.05, 0.1], correction="holm",
              labels=labels, seed=0, n_resamples=auto_resamples(m, alpha=0.05, correction="holm"), min_n=2)
    run = sequential_pvalues(mat, keep_fixed_b=False, importance=True, **kw, **extra)
    full = sequential_pvalues(mat, sequential=False, keep_fixed_b=False, **kw)
    return run, full, labels


def test_the_bootstrap_grid_decides_the_cells_near_their_level_by_importance_sampling():
    """No head draws B: the cells not settled after IMPORTANCE_AFTER plain draws estimate their p-value from
    tilted draws. Where a decision differs from the full-B run's (2 of 360 here, both at alpha 0.1), a
    precise estimate (200,000 tilted draws) of that cell's p-value gives the grid's decision: the full-B
    count was the one off (its p-value 0.0030 and 0.0022, the precise ones 0.0036 and 0.0032, at corrected
    levels 0.1 / 28 and 0.1 / 42)."""
    run, full, labels = _grid_runs()
    tilted = run.tilted > 0
    assert tilted.any() and (run.drawn <= IMPORTANCE_AFTER).all()
    assert ((run.low <= run.p) & (run.p <= run.high))[np.isfinite(run.p)].all()
    differ = 0
    for a in (0.05, 0.1):
        dec = reject(correct_rows_within_families(run.p, labels, correction="holm"), a)
        ref = reject(correct_rows_within_families(full.p, labels, correction="holm"), a)
        for j, g in zip(*np.nonzero(dec != ref)):
            differ += 1
            assert tilted[j, g]
            rows, _, stream = next(b for b in run.streams if g in b[0])
            (cell,) = stream.tilted_cells([int(np.flatnonzero(rows == g)[0])], [int(j)], [(99,)])
            cell.draw(200_000)
            precise = run.p.copy()
            precise[j, g] = cell.estimate
            assert reject(correct_rows_within_families(precise, labels, correction="holm"), a)[j, g] == dec[j, g]
    assert 0 < differ <= 4  # 2 on this machine; a near-level count may move by the last bit of another CPU's BLAS


def test_a_cell_with_too_few_tilted_hits_keeps_its_plain_draws(monkeypatch):
    """An estimate from fewer than MIN_HITS hits is not trusted: the cell reports the p-value and box of its
    plain draws, (1 + c) / (1 + L), as a stopped cell does."""
    import headstats.stats.onesample.sequential as sequential

    monkeypatch.setattr(sequential, "MIN_HITS", 10**9)
    monkeypatch.setattr("headstats.stats.onesample.tilted.MIN_HITS", 10**9)
    run, _, _ = _grid_runs()
    assert not (run.tilted > 0).any()
    for rows, _, s in run.streams:
        open_ = (s.drawn_obs == IMPORTANCE_AFTER).T & np.isfinite(s.obs.T) & (run.high[:, rows] > run.low[:, rows])
        mc = ((1.0 + s.count) / (1.0 + s.drawn_obs)).T
        np.testing.assert_array_equal(run.p[:, rows][open_], np.minimum(mc, s.tail.T)[open_])


def test_a_settled_tau_stops_counting_while_its_head_draws_on_for_another():
    """In the tau grid each (head, tau) cell stops counting once its decisions are settled: a head near its
    level at one tau draws to B, its count there is the full-B count, and its other taus keep the count (and the
    draws) they had when they settled, their boxes still deciding them as the final p-values do."""
    mat = score_matrix(planted(m=60, seed=7))
    labels = family_labels(mat.keys, ("model", "dataset")).to_numpy()
    taus = np.tile([2.0, 3.0, 4.0], (60, 1))
    kw = dict(test="bootstrap", taus=taus, alphas=[0.05, 0.1], correction="holm", labels=labels, seed=0,
              n_resamples=23999, min_n=2)
    run = sequential_pvalues(mat, keep_fixed_b=False, **kw)
    full = sequential_pvalues(mat, sequential=False, **kw)
    both = run.drawn >= run.total
    assert both.any()
    cells = np.zeros(run.p.shape, dtype=bool)
    for rows, _, s in run.streams:
        per_cell = s.drawn_obs.T  # (taus, rows)
        cells[:, rows] = per_cell < s.total
        assert (per_cell <= s.drawn[None, :]).all()
        # counted over all B draws: the full run's count (the draws are the same stream's)
        fs = next(f for r, _, f in full.streams if np.array_equal(r, rows))
        at_b = (per_cell >= s.total).T
        np.testing.assert_array_equal(s.count[at_b], fs.count[at_b])
    assert (cells[:, both]).any()  # some head drew B for one tau and stopped counting at another
    for a in (0.05, 0.1):
        dec = reject(correct_rows_within_families(run.p, labels, correction="holm"), a)
        ref = reject(correct_rows_within_families(full.p, labels, correction="holm"), a)
        assert (dec == ref).all()


def test_a_stream_counts_only_the_cells_asked_and_keeps_the_others():
    from headstats.stats.onesample.builtin import bootstrap_stream

    rng = np.random.default_rng(2)
    x = np.sort(rng.gamma(4.0, 0.8, (4, 25)), axis=1)
    taus = np.tile([2.5, 3.0, 3.5], (4, 1))
    whole = bootstrap_stream(x, taus, seed=1, n_resamples=3000)
    whole.advance(np.arange(4), 3000)
    part = bootstrap_stream(x, taus, seed=1, n_resamples=3000)
    part.advance(np.arange(4), 1000)
    first = part.count.copy()
    on = np.array([[True, False, True]] * 4)
    part.advance(np.arange(4), 3000, counted=on)
    np.testing.assert_array_equal(part.count[:, [0, 2]], whole.count[:, [0, 2]])
    np.testing.assert_array_equal(part.count[:, 1], first[:, 1])
    assert (part.drawn_obs == np.where(on, 3000, 1000)).all() and (part.drawn == 3000).all()
    p = part.pvalues()
    np.testing.assert_array_equal(p[:, 1], (1 + first[:, 1]) / 1001)
    kept = bootstrap_stream(x, taus, seed=1, n_resamples=3000, confidence=0.95)
    with pytest.raises(ValueError, match="counts every observed statistic"):
        kept.advance(np.arange(4), 1000, counted=on)


def test_decision_error_simulation_small():
    """The simulation of docs/statistics.md at a small size: no stopped cell decided otherwise than by B."""
    from importlib import util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_statistics.py"
    spec = util.spec_from_file_location("bench_statistics", path)
    bench = util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = bench.decision_error(replicates=2, m=60, n=25)
    assert out["stopped_differ"] == 0 and out["cells"] == 2 * 60
    assert out["same"] / out["cells"] >= 0.99 and out["stopped"] > 0


def test_sign_flip_cells_far_above_tau_stop_at_once_with_the_full_b_p_value():
    # Hoeffding's bound shows that none of the B sign flips would reach a strong head's mean (but for the
    # risk): such a head stops at the first look, with p = 1 / (B + 1), the fixed-B run's p-value
    rng = np.random.default_rng(11)
    means = np.r_[np.full(10, 6.0), np.full(50, 2.0)]  # 10 heads 3 sd above tau, 50 below
    scores = pd.DataFrame([("m", "d", f"s{i}", h // 12, h % 12, "local", v) for h, mu in enumerate(means)
                           for i, v in enumerate(rng.gamma(mu**2, 1.0 / mu, size=60))],
                          columns=["model", "dataset", "sentence_id", "layer", "head", "role", "score"])
    seq = test_roles(scores, test="permutation")
    full = test_roles(scores, test="permutation", sequential=False)
    b = int(full["n_resamples"].max())
    early = (seq["n_resamples"] == 250) & seq["reject"]
    assert early.sum() == 10 and seq["note"][early].str.contains("tail bound").all()
    np.testing.assert_array_equal(seq.loc[early, "p_unc"], full.loc[early, "p_unc"])
    assert (seq.loc[early, "p_unc"] == 1 / (b + 1)).all()
    assert (seq["reject"] == full["reject"]).all()
