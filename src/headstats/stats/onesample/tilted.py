r"""Importance sampling of the bootstrap-t tail: the p-values of cells near their level without B draws.

A cell of the tau grid (:func:`~headstats.stats.sensitivity.tau_sensitivity`) whose p-value lies near its
corrected level, :math:`10^{-5}` to :math:`10^{-3}` on the quickstart, needs about :math:`B = 10 m / \alpha`
plain draws for a count that decides it, and even then its Monte Carlo p-value has a relative standard error
of about :math:`1 / \sqrt{B p} \approx 0.3`. Drawing the resamples from other laws and weighting them
(Johns 1988; Davison & Hinkley 1997, section 9.4) estimates the same infinite-draw bootstrap p-value

.. math::
    p_\infty = P^*(t^* \ge t) = E_q\left[\mathbf 1\{t^* \ge t\}\, W\right], \qquad
    W = \frac{N^{-N}}{\sum_k \alpha_k \prod_i \pi_{ki}^{c_i}}
      = \frac{1}{\sum_k \alpha_k e^{N (\lambda_k M_1 - \mu_k M_2 - L_k)}},

where q is the mixture of the laws :math:`\pi_{ki} \propto e^{\lambda_k z_i - \mu_k z_i^2}` of one draw
over the scores z (centred, unit root mean square) with shares :math:`\alpha_k`, :math:`c_i` how often input
i is drawn, :math:`M_1, M_2` the resample's means of z and :math:`z^2`, and
:math:`L_k = \log \frac1N \sum_i e^{\lambda_k z_i - \mu_k z_i^2}`. The estimator
:math:`\hat p = \frac1R \sum_r \mathbf 1\{t^*_r \ge t\} W_r` is unbiased for any mixture; the mixture sets
its variance. :func:`mixture_tilts` takes the plain law (share :data:`DEFENSIVE`, which bounds every weight by
its inverse; Owen & Zhou 2000) and the saddle-point tilts that the draw-free bound
(:mod:`~headstats.stats.onesample.tailbound`) finds for each of its pieces of :math:`\sqrt{M_2}`, sharing the
rest in proportion to each piece's bound. The pieces matter: :math:`t^* \ge t` is reached by resamples with a
large mean and also by resamples of small spread with a modest mean, which a tilt of the mean alone misses
(its estimates fall 39-79 % below the exact p-value of a skewed sample of 10 at t = 4 to 6; the mixture's are
within their standard errors, ``tests/stats/onesample/test_tilted.py``; docs/statistics.md, "The tau grid's
cells near their level").

The draws of a cell come from its own generator, seeded by the run's seed and the cell's place (its stream,
row and tau), so a cell's estimate does not depend on which other cells are drawn; each draw picks its N
inputs from its component's law through a guide table (Chen & Asau 1974).
"""

from __future__ import annotations

import math

import numpy as np


#: The share of a cell's draws taken from the plain bootstrap law (the defensive part of the mixture: it bounds
#: every weight by ``1 / DEFENSIVE``, so the estimate's variance by ``p / DEFENSIVE``; Owen & Zhou 2000).
DEFENSIVE = 0.1
#: The guide table of a discrete law has this many cells per category (Chen & Asau 1974).
GUIDE_PER_CATEGORY = 4
#: The tilted draws of a cell per round; each later round doubles the cell's total.
FIRST_DRAWS = 250
#: A cell's tilted draws at most; a cell still not settled then is decided by its estimate.
MAX_DRAWS = 32_000
#: A cell's standard error is trusted only once this many of its tilted draws reached the observed t.
MIN_HITS = 10


def studentized(m1: np.ndarray, m2: np.ndarray, mean, n: int) -> np.ndarray:
    r""":math:`t^* = M_1 / \sqrt{(M_2 - M_1^2) \frac{N}{N-1} / N}` from a resample's means of the centred scores
    and their squares (elementwise); a resample of one repeated value (no spread) gives :math:`\pm\infty` where
    its mean moved (beyond :math:`10^{-12}` of ``mean``, the row's mean, broadcast to them), else 0."""
    var = np.maximum(m2 - m1 * m1, 0.0) * n / (n - 1) if n > 1 else np.full_like(m1, np.nan)
    se = np.sqrt(var / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        moved = np.abs(m1) > 1e-12 * (np.abs(mean) + 1)
        return np.where(se > 0, m1 / se, np.where(moved, np.sign(m1) * np.inf, 0.0))


def guide_tables(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cumulative laws of the rows of ``p`` (``(K, n)``; last value +inf) and their guide tables
    (Chen & Asau 1974): for a uniform ``u``, row k's draw is the first ``i`` with ``cdf[k, i] > u``, and
    ``guide[k, floor(u T)]`` is at most that ``i``."""
    cdf = np.cumsum(np.asarray(p, dtype=float), axis=1)
    cdf /= cdf[:, -1:]
    cdf[:, -1] = np.inf  # every u < 1 is below it, whatever the rounding of the sum
    size = GUIDE_PER_CATEGORY * cdf.shape[1]
    grid = np.arange(size) / size
    guide = np.stack([np.searchsorted(row, grid, side="right") for row in cdf])
    return cdf, guide


def draw_from_guides(cdf: np.ndarray, guide: np.ndarray, law: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Indices drawn by uniforms ``u`` (``(R, n)``) from the laws ``law`` (``(R,)``, rows of
    :func:`guide_tables`): the guide's start, then a step up while the cumulative law is not above ``u``
    (few steps: a guide cell spans few categories)."""
    n, size = cdf.shape[1], guide.shape[1]
    start = (law * n)[:, None]  # each draw's row of the flattened cumulative laws
    flat = guide.ravel()[(law * size)[:, None] + (u * size).astype(np.intp)] + start
    cdf_flat, uf, ff = cdf.ravel(), u.reshape(-1), flat.reshape(-1)
    todo = np.flatnonzero(cdf_flat[ff] <= uf)
    while todo.size:
        ff[todo] += 1
        todo = todo[cdf_flat[ff[todo]] <= uf[todo]]
    return flat - start


class TiltedCell:
    r"""The importance-sampling estimate of one cell's :math:`p_\infty = P^*(t^* \ge t)`, drawn in rounds.

    ``y``: the cell's centred scores and ``mean`` their mean before centring; ``t``: its observed bootstrap-t;
    ``limit``: the value a null statistic must reach to count (t less the count's slack, as the plain draws
    compare); ``seed``: the cell's seed (a sequence of ints); ``mixture``: its :func:`mixture_tilts` when
    found already (for many cells at once). The mixture's components are the plain law and the tilts of
    :func:`~headstats.stats.onesample.tailbound.find_tilts` at the cell's t (module doc).
    """

    def __init__(self, y: np.ndarray, mean: float, t: float, limit: float, seed, mixture=None) -> None:
        self.y = np.asarray(y, dtype=float)
        self.mean = float(mean)
        self.n = self.y.size
        self.limit = float(limit)
        self.rng = np.random.default_rng(seed)
        self.s0 = float(np.sqrt((self.y * self.y).mean()))
        z = self.y / self.s0 if self.s0 > 0 else self.y
        if mixture is None:
            from headstats.stats.onesample.tailbound import tilts_at

            mixture = mixture_tilts(*tilts_at(self.y[None, :], np.array([t]), np.array([t - limit])))[0]
        lam, mu, share = mixture
        # the log mgf of each component, so its law's density against the plain one is e^{N (lam M1 - mu M2 - L)}
        e = lam[:, None] * z[None, :] - mu[:, None] * (z * z)[None, :]
        top = e.max(axis=1)
        self.lam, self.mu, self.share = lam, mu, share
        self.log_mgf = np.log(np.exp(e - top[:, None]).mean(axis=1)) + top
        self.cdf, self.guide = guide_tables(np.exp(e - top[:, None]))
        self.drawn = 0
        self.hits = 0
        self._weights: list[np.ndarray] = []  # the weights of the hits (the other draws weigh 0)

    def draw(self, draws: int) -> None:
        """Draw ``draws`` more resamples from the mixture and add them to the estimate."""
        n, draws = self.n, int(draws)
        law = np.repeat(np.arange(self.share.size), self.rng.multinomial(draws, self.share))
        ys = self.y[draw_from_guides(self.cdf, self.guide, law, self.rng.random((draws, n)))]
        m1 = ys.mean(axis=1)
        ys *= ys
        m2 = ys.mean(axis=1)
        hit = studentized(m1, m2, self.mean, n) >= self.limit
        self._weights.append(self.weight(m1[hit], m2[hit]))
        self.drawn += draws
        self.hits += int(hit.sum())

    def weight(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        r"""The plain law's density against the mixture's at resamples with means ``m1`` of y and ``m2`` of
        :math:`y^2`: :math:`1 / \sum_k \alpha_k e^{N(\lambda_k M_1 - \mu_k M_2 - L_k)}` (M in units of
        :math:`s_0`), at most :math:`1 / \alpha_0`."""
        if m1.size == 0:
            return m1
        s0 = self.s0 if self.s0 > 0 else 1.0
        a1, a2 = m1 / s0, m2 / (s0 * s0)
        with np.errstate(divide="ignore", over="ignore"):
            log_terms = (np.log(self.share)[:, None]
                         + self.n * (self.lam[:, None] * a1[None, :] - self.mu[:, None] * a2[None, :]
                                     - self.log_mgf[:, None]))
            top = log_terms.max(axis=0)
            return np.exp(-top) / np.exp(log_terms - top).sum(axis=0)

    @property
    def estimate(self) -> float:
        r""":math:`\hat p = \frac1R \sum_r \mathbf 1\{t^*_r \ge t\} W_r`."""
        return float(sum(w.sum() for w in self._weights)) / self.drawn if self.drawn else math.nan

    @property
    def standard_error(self) -> float:
        r"""The standard error of :attr:`estimate`, :math:`\sqrt{(\overline{W^2} - \hat p^2) / (R - 1)}`
        (NaN before :data:`MIN_HITS` hits: too few to estimate the spread of the weights)."""
        if self.hits < MIN_HITS or self.drawn < 2:
            return math.nan
        w = np.concatenate(self._weights)
        scale = float(w.max()) or 1.0  # (weights may be far below the square root of the smallest double)
        var = max(float(((w / scale) ** 2).sum()) / self.drawn - (self.estimate / scale) ** 2, 0.0)
        return scale * math.sqrt(var / (self.drawn - 1))


def mixture_tilts(tilts, c: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    r"""The components of each cell's mixture: per row of ``tilts``, ``(lam, mu, share)``, the plain law first.

    ``tilts``: the :class:`~headstats.stats.onesample.tailbound.Tilts` of the cells' pieces at ``c``
    (:func:`~headstats.stats.onesample.tailbound.tilts_at`: those the draw-free bound found). For
    :math:`c > 0`: the two-dimensional saddle-point tilt of each piece (:math:`e^{\lambda z - \mu z^2}`,
    aimed at the event's edge in that range of :math:`\sqrt{M_2}`), the first piece's chord tilt and the
    one-dimensional tilts of the pieces that have one, each piece's tilts sharing :math:`1 -`
    :data:`DEFENSIVE` in proportion to the piece's Chernoff bound (an upper estimate of its part of
    :math:`p_\infty`). At :math:`c \le 0` (the event is not rare) the plain law alone.
    """
    c = np.atleast_1d(np.asarray(c, dtype=float))
    plain = (np.zeros(1), np.zeros(1), np.ones(1))
    out = [plain] * c.size
    with np.errstate(all="ignore"):
        log_bound = tilts.log_bound(c)
        kappa = c / tilts.edges[:, 1]
    for i in np.flatnonzero(c > 0):
        lam, mu, weight = [], [], []
        for j in np.flatnonzero(np.isfinite(log_bound[i])):
            own = [(tilts.lam[i, j], tilts.mu[i, j])]
            if j == 0:
                own.append((tilts.chord_lam[i], tilts.chord_lam[i] * kappa[i]))
            if tilts.mean_lam[i, j] > 0:
                own.append((tilts.mean_lam[i, j], 0.0))
            own = [(a, b) for a, b in own if np.isfinite(a) and np.isfinite(b)]
            for a, b in own:
                lam.append(a)
                mu.append(b)
                weight.append(math.exp(log_bound[i, j]) / len(own))
        weight = np.array(weight)
        if len(lam) and weight.sum() > 0:
            share = np.concatenate([[DEFENSIVE], (1.0 - DEFENSIVE) * weight / weight.sum()])
            out[i] = (np.concatenate([[0.0], lam]), np.concatenate([[0.0], mu]), share)
    return out
