r"""Resampling tests that stop when the answer is clear: sequential Monte Carlo p-values per cell.

A resampling test with ``n_resamples: auto`` needs :math:`B = 10 f / \alpha` draws (``f = m`` for Holm over m
hypotheses; 143,999 on the quickstart) so that a head can be assigned at all. Most cells do not need them: a
head whose p-value is near 0.5 is clearly not assigned after a few hundred draws. Each cell (one hypothesis,
at one tau of the sensitivity grid) here draws its resamples from the same seeded stream as the fixed-B run
(:mod:`~headstats.stats.onesample.draws`), looks at its count after L = 250, 500, 1000, 2000, ... draws and
stops once its decision is settled:

1. After L draws with c exceedances, the cell's box is the two-sided Clopper-Pearson interval of the
   infinite-draw p-value at level :math:`1 - \epsilon`, widened to contain the Monte Carlo p-value
   :math:`(1 + c) / (1 + L)` that is reported. :math:`\epsilon = r / (\text{cells} \times \text{looks})` with
   the resampling risk :math:`r` = :data:`RESAMPLING_RISK` (a union bound: with probability at least
   :math:`1 - r` every box of every cell at every look contains its p-value).
2. The correction (Holm, Bonferroni, Benjamini-Hochberg, Benjamini-Yekutieli, none: each corrected p-value
   is a non-decreasing function of every uncorrected one) is applied within each family to the vector of the
   boxes' low ends and to that of their high ends. A cell whose decision (``p_corr <= alpha``, at every alpha
   asked) is the same at both ends is settled: its decision is the same for any p-values in the boxes (so,
   with probability at least :math:`1 - r`, it is the decision of the infinite-draw test), and it stops.
   This is the rule of Gandy (2009) for one p-value, made safe for the correction by testing the whole box
   vector (a cell's threshold under Holm or BH depends on the others; the ends bound every threshold it can
   face); Besag & Clifford (1991) stop on the count alone, which a corrected level does not allow.
   A test whose stream gives a bound U on the infinite-draw p-value without drawing (the sign-flip test:
   Hoeffding's :math:`\exp(-(\sum d_i)^2 / (2 \sum d_i^2))`; the bootstrap-t: Chernoff's bound on the
   resampling law, :mod:`~headstats.stats.onesample.tailbound`) caps the box at U surely, and a cell not drawn
   to B reports the smaller of its Monte Carlo p-value and U. A cell with no exceedance yet and
   :math:`B \times U \le \epsilon` is settled at once: the count of all B draws is then 0 but with
   probability :math:`\epsilon`, so its p-value is the fixed-B run's, :math:`1 / (1 + B)`, and its box
   :math:`[0, 1 / (1 + B)]`. A strongly assigned head need not draw B to show it.
3. Cells not settled run to B and get exactly the p-value of the fixed-B run. At the end the correction of
   the reported p-values must give every stopped cell its settled decision; a stopped cell for which it
   does not (an event of the resampling risk) is drawn again to B, until none is left.

4. With ``importance=True`` (the tau grid of the bootstrap, a table of decisions): the cells still open after
   :data:`IMPORTANCE_AFTER` plain draws are not drawn on to B; each estimates its p-value from tilted draws
   (:mod:`~headstats.stats.onesample.tilted`), its box narrowed by :math:`\hat p \pm z\,\mathrm{se}`, until it
   is settled or its estimate is at least as precise as the fixed-B run's p-value (:func:`_importance`).

The reported p-value of a stopped cell is :math:`(1 + c) / (1 + L)` (METHODS: ``(1 + #) / (1 + draws)``
with the L draws it took), or U where that is smaller; ``n_resamples`` gives L per row and the note its box
(and when U is reported). Corrections registered by a
user are not known to be monotone: with them every cell runs to B.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from headstats.stats.corrections import correct_rows_within_families, reject
from headstats.stats.matrix import ScoreMatrix
from headstats.stats.onesample.builtin import tau_matrix
from headstats.stats.onesample.draws import MIN_BEYOND
from headstats.stats.onesample.spec import OneSampleResult, get_test
from headstats.stats.onesample.tilted import FIRST_DRAWS, MAX_DRAWS, MIN_HITS

#: Bound on the probability that any stopped cell's decision differs from that of the infinite-draw test.
RESAMPLING_RISK = 1e-3
#: The first look at a cell's count; then after every doubling.
FIRST_LOOK = 250
#: With importance sampling, the plain draws every cell takes before the cells not settled turn to tilted draws.
IMPORTANCE_AFTER = 2000
#: The corrections whose corrected p-values never decrease when an uncorrected one grows.
MONOTONE_CORRECTIONS = frozenset({"holm", "bonferroni", "fdr_bh", "fdr_by", "none"})


def looks(total: int, first: int = FIRST_LOOK) -> list[int]:
    """The draws after which a cell's count is looked at: ``first, 2 first, 4 first, ...`` below
    ``total``, then ``total``."""
    out, look = [], int(first)
    while look < total:
        out.append(look)
        look *= 2
    return out + [int(total)]


def clopper_pearson(count: np.ndarray, drawn: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Two-sided Clopper-Pearson interval at level :math:`1 - \epsilon` of a proportion, ``count`` of ``drawn``.

    :math:`[B(\epsilon/2; c, L - c + 1), B(1 - \epsilon/2; c + 1, L - c)]` with B the beta quantile, 0 and 1
    at the edges (Clopper & Pearson 1934); equal to ``statsmodels`` ``proportion_confint(method="beta")``.
    """
    c = np.asarray(count, dtype=float)
    n = np.asarray(drawn, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(c > 0, sps.beta.ppf(eps / 2, c, n - c + 1), 0.0)
        hi = np.where(c < n, sps.beta.ppf(1 - eps / 2, c + 1, n - c), 1.0)
    return lo, hi


@dataclass
class SequentialRun:
    """What :func:`sequential_pvalues` found, per cell (column) and observed statistic (row, one per tau).

    Attributes
    ----------
    p, low, high : numpy.ndarray
        ``(n_obs, g)``: the reported p-value and the box it was settled in (equal to p for enumerated cells
        and cells drawn to B), NaN where the cell has no p-value.
    drawn : numpy.ndarray
        ``(g,)`` draws per hypothesis (0 without a p-value; with several taus, those of its tau counted longest;
        each tau's are its stream's ``drawn_obs``).
    stopped : numpy.ndarray
        ``(g,)`` bool: stopped before B with its decisions settled at every tau.
    results : list
        Per block of ``mat.blocks(min_n)`` (in order), the test's result when ``confidence`` was given.
    """

    p: np.ndarray
    low: np.ndarray
    high: np.ndarray
    drawn: np.ndarray
    stopped: np.ndarray
    total: int
    eps: float
    results: list[tuple[np.ndarray, OneSampleResult]] = field(default_factory=list)
    streams: list = field(default_factory=list)
    #: ``(n_obs, g)``: the reported p-value is the test's draw-free bound (smaller than the Monte Carlo one)
    bounded: np.ndarray | None = None
    #: ``(n_obs, g)``: tilted draws of each cell whose p-value is an importance-sampling estimate (else 0)
    tilted: np.ndarray | None = None

    def lower_bound(self, cells: np.ndarray, level: float, bound) -> np.ndarray:
        """The test's lower bound at ``level`` of the given cells, from the draws each took.

        ``bound(mean, sd, n, q)`` turns the ``level`` quantile ``q`` of a cell's null statistics into its
        bound. A cell drawn to B gets the bound of the fixed-B run; a stopped cell one from its L draws where
        they leave at least :data:`MIN_BEYOND` of them beyond the quantile. Otherwise (too few draws to place
        it) a cell settled by the test's draw-free bound (a strong head, which before that bound drew B) gets
        one from a value the stream shows to be at least the quantile without drawing, where it has one (the
        bootstrap-t: :func:`~headstats.stats.onesample.tailbound.bootstrap_t_quantile`, a conservative
        bound); the others NaN.
        """
        out = np.full(len(cells), np.nan)
        where = {int(c): i for i, c in enumerate(cells)}
        strong = self.settled_by_bound()
        for rows, x, s in self.streams:
            local = np.nonzero(np.isin(rows, cells))[0]
            if local.size == 0:
                continue
            q = s.quantile(level)[local]
            full = s.drawn[local] >= s.total
            q = np.where(full | (s.drawn[local] * (1.0 - level) >= MIN_BEYOND), q, np.nan)
            few = np.isnan(q) & strong[rows[local]]
            if few.any() and hasattr(s, "quantile_bound"):  # too few draws: the quantile's draw-free bound
                q[few] = s.quantile_bound(level, local[few])
            b = bound(x[local], q)
            for j, r in enumerate(rows[local]):
                out[where[int(r)]] = b[j]
        return out

    def settled_by_bound(self) -> np.ndarray:
        """``(g,)`` the stopped cells whose (first) p-value is the draw-free bound or, certified by it, the
        fixed-B run's ``1 / (1 + B)``."""
        certified = self.high[0] == 1.0 / (1.0 + self.total)
        bounded = self.bounded[0] if self.bounded is not None else np.zeros_like(certified)
        return self.stopped & (bounded | certified)

    def notes(self) -> list[str]:
        """Per cell: ``""``, or how it stopped and the box of its (first) p-value."""
        out = [""] * self.p.shape[1]
        for i in np.nonzero(self.stopped)[0]:
            out[i] = (f"sequential: stopped after {int(self.drawn[i]):,} of {self.total:,} draws, decision "
                      f"settled (p in [{self.low[0, i]:.2g}, {self.high[0, i]:.2g}])")
            if self.bounded is not None and self.bounded[0, i]:
                out[i] += ("; p is the test's bound on its p-value with infinitely many draws, computed without "
                           "drawing (smaller than the Monte Carlo p of the draws taken)")
            elif self.high[0, i] == 1.0 / (1.0 + self.total):
                out[i] += (f"; no draw reached the observed value and, by the test's tail bound, none of the "
                           f"{self.total:,} would but with probability <= {self.eps:.1g}: p as with all of them")
        return out


def _settled(low: np.ndarray, high: np.ndarray, labels: np.ndarray, correction: str,
             alphas: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """``(n_obs, g)`` whether the decision is the same at both ends of the boxes at every alpha, and the
    decisions at the high end ``(n_alpha, n_obs, g)``."""
    c_lo = correct_rows_within_families(low, labels, correction=correction)
    c_hi = correct_rows_within_families(high, labels, correction=correction)
    dec = np.stack([reject(c_hi, a) for a in alphas])
    same = np.stack([reject(c_lo, a) == d for a, d in zip(alphas, dec)]).all(axis=0)
    return same, dec


def sequential_pvalues(
    mat: ScoreMatrix, *, test: str, taus, alphas: Sequence[float], correction: str, labels: np.ndarray,
    seed: int, n_resamples: int, min_n: int, confidence: float | None = None, sequential: bool = True,
    risk: float = RESAMPLING_RISK, keep_fixed_b: bool = True, importance: bool = False,
) -> SequentialRun:
    """p-values of a resampling test for every cell of ``mat``, each cell stopping once settled (module doc).

    ``taus``: one number, one per hypothesis ``(g,)``, or ``(g, n_obs)`` (the sensitivity grid: one row of
    p-values per tau; each (hypothesis, tau) cell stops counting once its decisions at every alpha are settled,
    keeping its count and draws, and a hypothesis stops drawing once all its taus are settled). ``labels``: the family of each
    hypothesis. ``confidence``: also build the test's result per block (bounds at that level and above).
    ``sequential=False`` (or a correction not known to be monotone): every cell draws B, in one pass for
    all taus. ``keep_fixed_b=False`` (tables of decisions only, such as the tau grid): every cell, drawn to
    B or not, takes the smaller of its Monte Carlo p-value and the test's draw-free bound (a strong head is
    then decided by its bound at levels below ``1 / (1 + B)``, and a cell drawn to B for one tau keeps the
    bound at the others); True: cells drawn to B keep the fixed-B run's p-value, and a cell the bound shows
    would see no exceedance in B draws reports ``1 / (1 + B)``, the fixed-B run's.
    ``importance=True`` (tables of decisions only; a sequential run of a stream with tilted draws, the
    bootstrap-t): the cells not settled after :data:`IMPORTANCE_AFTER` plain draws estimate their p-value by
    importance sampling (:func:`_importance`) instead of drawing on to B.
    """
    spec = get_test(test)
    if spec.stream is None:
        raise ValueError(f"test {test!r} has no stream of draws to read sequentially")
    g = len(mat.n)
    tau_all = tau_matrix(g, np.broadcast_to(taus, (g,)) if np.ndim(taus) == 0 else taus)
    n_obs = tau_all.shape[1]
    labels = np.asarray(labels, dtype=object)
    blocks = []
    for rows, x in mat.blocks(min_n=min_n):
        x = np.sort(x, axis=1)
        stream = spec.stream(x, tau_all[rows], seed=seed, n_resamples=n_resamples, confidence=confidence)
        stream.bounds = (mat.bounds, rows)  # a bound of the same row and t is computed once per matrix
        blocks.append((rows, x, stream))
    defined = np.zeros(g, dtype=bool)
    exact = np.zeros(g, dtype=bool)
    for rows, _, s in blocks:
        defined[rows] = np.isfinite(s.obs).all(axis=1)
        exact[rows] = s.exact
    total = int(n_resamples)
    steps = looks(total) if sequential and correction in MONOTONE_CORRECTIONS else [total]
    importance = (importance and len(steps) > 1 and total > IMPORTANCE_AFTER
                  and all(s.exact or s.tilted_cells is not None for _, _, s in blocks))
    rounds = 0
    if importance:
        steps = [look for look in steps if look < IMPORTANCE_AFTER] + [IMPORTANCE_AFTER]
        rounds = len(looks(MAX_DRAWS, FIRST_DRAWS))
    n_cells = int((defined & ~exact).sum()) * n_obs
    bound_all = not keep_fixed_b and len(steps) > 1  # (a run of B draws everywhere is the fixed-B run)
    eps = risk / max(n_cells * (len(steps) + rounds), 1)
    low = np.full((n_obs, g), np.nan)
    high = np.full((n_obs, g), np.nan)
    p = np.full((n_obs, g), np.nan)
    bounded = np.zeros((n_obs, g), dtype=bool)
    active = defined.copy()
    stopped = np.zeros(g, dtype=bool)
    settled = np.zeros((n_obs, g), dtype=bool)  # cells whose decision is settled: their counts stop
    decided = np.zeros((len(alphas), n_obs, g), dtype=bool)  # the decisions of the settled cells
    for rows, _, s in blocks:  # enumerated cells: everything at once
        if s.exact:
            s.advance(np.arange(len(rows)), s.total)
            active[rows] = False
    for look in steps:
        for rows, _, s in blocks:
            if s.exact:
                continue
            local = np.nonzero(active[rows])[0]  # a stream that keeps null statistics counts every cell
            s.advance(local, look, counted=None if s.top is not None else ~settled[:, rows[local]].T)
        _collect(blocks, p, low, high, eps, bounded, bound_all)
        if look >= total:
            break
        same, dec = _settled(low, high, labels, correction, alphas)
        now = same & active[None, :] & ~settled
        decided = np.where(now[None], dec, decided)
        settled |= now
        done = active & settled.all(axis=0)  # every cell of the row settled: the row stops drawing
        stopped |= done
        active &= ~done
        if not active.any():
            break
    tilted = np.zeros((n_obs, g), dtype=np.int64)
    if importance and active.any():
        kept = _importance(blocks, active=active, settled=settled, decided=decided, p=p, low=low, high=high,
                           tilted=tilted, labels=labels, correction=correction, alphas=alphas, eps=eps, seed=seed)
        done = active & settled.all(axis=0)
        stopped |= done
        active &= ~done
    # the reported p-values must give every settled cell its decision; redraw (to B) the rows they do not
    while settled.any():
        p_corr = correct_rows_within_families(p, labels, correction=correction)
        final = np.stack([reject(p_corr, a) for a in alphas])
        wrong = (settled & (final != decided).any(axis=0)).any(axis=0)
        if not wrong.any():
            break
        for b, (rows, x, s) in enumerate(blocks):
            local = np.nonzero(wrong[rows])[0]
            if local.size:
                again = spec.stream(x[local], tau_all[rows][local], seed=seed, n_resamples=n_resamples,
                                    confidence=confidence)
                again.advance(np.arange(local.size), total)
                s.count[local], s.drawn[local], s.drawn_obs[local] = again.count, again.drawn, again.drawn_obs
                if s.top is not None and again.top is not None:
                    s.top[local], s.filled[local] = again.top, again.filled
        stopped &= ~wrong
        settled[:, wrong] = False
        _collect(blocks, p, low, high, eps, bounded, bound_all)
        tilted[:, wrong] = 0
        if tilted.any():  # the estimates of the cells not redrawn stand
            on = tilted > 0
            p[on], low[on], high[on] = kept[0][on], kept[1][on], kept[2][on]
    drawn = np.zeros(g, dtype=np.int64)
    for rows, _, s in blocks:
        drawn[rows] = s.drawn
        full = (s.drawn_obs >= s.total).T  # (n_obs, k): cells counted over all B draws
        low[:, rows] = np.where(full, p[:, rows], low[:, rows])
        high[:, rows] = np.where(full, p[:, rows], high[:, rows])
    run = SequentialRun(p=p, low=low, high=high, drawn=drawn, stopped=stopped, total=total, eps=eps,
                        streams=blocks, bounded=bounded, tilted=tilted if importance else None)
    if confidence is not None:
        notes = run.notes()
        for rows, x, s in blocks:
            res = spec.stream_result(x, s, tau=tau_all[rows][:, 0], confidence=confidence, seed=seed)
            res.p_unc = np.where(np.isnan(res.p_unc), np.nan, p[0, rows])  # the bound where it is reported
            res.note = ["; ".join(filter(None, [a, notes[r]])) for a, r in zip(res.note, rows)]
            run.results.append((rows, res))
    return run


def _collect(blocks, p, low, high, eps, bounded, bound_all) -> None:
    """The p-values and boxes of every cell from its stream's count and draw-free bound (in place); the bound
    serves the cells not drawn to B, or every cell with ``bound_all``."""
    for rows, _, s in blocks:
        short = s.drawn_obs < s.total
        served = np.ones_like(short) if bound_all else short
        tail = s.tail if served.any() and not s.exact else None  # (computed on first use)
        # certified: no draw yet and, by the bound, none of the B would exceed but with probability eps
        s.certified = (None if tail is None or bound_all
                       else (s.count == 0) & (tail * s.total <= eps) & short)
        p_rows = s.pvalues()  # (k, n_obs)
        lo, hi = clopper_pearson(s.count, s.drawn_obs, eps)
        bounded[:, rows] = False
        if s.exact:
            lo, hi = p_rows, p_rows
        elif tail is not None:  # p_inf <= tail surely: it caps the box, and a cell served reports the smaller
            certified = s.certified if s.certified is not None else np.zeros(short.shape, dtype=bool)
            hi = np.where(certified, p_rows, np.minimum(hi, tail))  # of its MC p and the bound
            lo = np.where(certified, 0.0, lo)
            by_bound = served & ~certified & (tail < p_rows)
            p_rows = np.where(by_bound, tail, p_rows)
            bounded[:, rows] = by_bound.T
        ok = np.isfinite(s.obs)
        p[:, rows] = np.where(ok, p_rows, np.nan).T
        low[:, rows] = np.where(ok, np.minimum(lo, p_rows), np.nan).T
        high[:, rows] = np.where(ok, np.maximum(hi, p_rows), np.nan).T


def _importance(blocks, *, active, settled, decided, p, low, high, tilted, labels, correction, alphas, eps,
                seed) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Settle the cells still open after the plain draws by importance sampling (in place).

    Every open cell (a row still drawing, a tau not settled) gets a
    :class:`~headstats.stats.onesample.tilted.TiltedCell` seeded by ``(seed, stream, row, tau)``, and draws
    :data:`~headstats.stats.onesample.tilted.FIRST_DRAWS` tilted resamples, then doubles them each round
    up to :data:`~headstats.stats.onesample.tilted.MAX_DRAWS`. Its reported p-value is the estimate
    :math:`\hat p` (or the test's draw-free bound U where smaller), and its box the intersection of the plain
    draws' Clopper-Pearson box, :math:`\hat p \pm z\,\mathrm{se}` (z the normal quantile of
    :math:`1 - \epsilon / 2`, once the cell has :data:`~headstats.stats.onesample.tilted.MIN_HITS` hits) and
    :math:`[0, U]`, widened to hold :math:`\hat p` (before it has that many hits, a cell reports its plain
    draws' p-value and box, and one that never has them keeps them). After each round the boxes decide as in
    the plain looks (:func:`_settled`), and the cells settled stop. A cell not settled after the last round is decided by its
    estimate (its box straddles the level: within a few standard errors of it, where the full-B run's count
    is no surer). A cell also stops, decided by its estimate, once its standard error is at most that of
    the Monte Carlo p-value of B plain draws, :math:`\sqrt{\hat p (1 - \hat p) / B}`: its decision is then
    at least as sure as the full-B run's. Returns the reported p-values and boxes ``(p, low, high)``, to
    restore after a redraw.
    """
    total = max(int(s.total) for _, _, s in blocks if not s.exact)
    z = float(sps.norm.isf(eps / 2))
    cells = []  # (row, tau, cell, the stream's bound)
    for b, (rows, _, s) in enumerate(blocks):
        if s.exact:
            continue
        open_ = (~settled[:, rows].T) & active[rows][:, None] & np.isfinite(s.obs)  # (k, n_obs)
        local, cols = np.nonzero(open_)
        made = s.tilted_cells(local, cols, [(int(seed), b, int(r), int(j)) for r, j in zip(local, cols)])
        tail = s.tail
        cells += [(int(rows[r]), int(j), cell, float(tail[r, j])) for r, j, cell in zip(local, cols, made)]
    mc_p, mc_low, mc_high = p.copy(), low.copy(), high.copy()
    every = list(cells)
    draws = FIRST_DRAWS
    while cells:
        for r, j, cell, tail in cells:
            cell.draw(draws - cell.drawn)
            est, se = cell.estimate, cell.standard_error
            p[j, r] = min(est, tail) if cell.hits >= MIN_HITS else mc_p[j, r]  # (few hits: not yet an estimate)
            lo, hi = mc_low[j, r], min(mc_high[j, r], tail)
            if np.isfinite(se):
                lo, hi = max(lo, est - z * se), min(hi, est + z * se)
            low[j, r], high[j, r] = min(lo, p[j, r]), max(hi, p[j, r])
            tilted[j, r] = cell.drawn
        same, dec = _settled(low, high, labels, correction, alphas)
        now = same & (tilted > 0) & ~settled
        decided[:] = np.where(now[None], dec, decided)
        settled |= now
        if draws >= MAX_DRAWS:
            break
        cells = [c for c in cells if not settled[c[1], c[0]]
                 and not c[2].standard_error <= math.sqrt(c[2].estimate * (1 - c[2].estimate) / total)]
        draws *= 2
    for r, j, cell, _ in every:  # too few hits to trust the estimate: the plain draws' p-value and box
        if cell.hits < MIN_HITS:
            p[j, r], low[j, r], high[j, r], tilted[j, r] = mc_p[j, r], mc_low[j, r], mc_high[j, r], 0
    return p.copy(), low.copy(), high.copy()
