r"""A bound on the bootstrap-t p-value computed without drawing: Chernoff's inequality on the resampling law.

The bootstrap-t test (:func:`~headstats.stats.onesample.builtin.bootstrap_test`) counts resamples with
:math:`t^* \ge t`. With :math:`y_i = s_i - \bar s` (the centred scores) and :math:`M_1, M_2` the means of
:math:`y^*` and :math:`y^{*2}` over a resample of N draws,
:math:`t^* = M_1 \sqrt{N - 1} / \sqrt{M_2 - M_1^2}`, so for :math:`t > 0`

.. math::
    \{t^* \ge t\} = \{M_1 \ge c \sqrt{M_2}\}, \qquad c = t / \sqrt{N - 1 + t^2}

(a resample of one repeated value, :math:`t^* = +\infty`, included). The infinite-draw p-value
:math:`p_\infty = P^*(M_1 \ge c\sqrt{M_2})` is a probability under N iid draws from the empirical
distribution, whose every moment generating function is known exactly: with
:math:`\Lambda(\lambda, \mu) = \log \frac1N \sum_i e^{\lambda y_i - \mu y_i^2}`,
:math:`E^* e^{N(\lambda M_1 - \mu M_2)} = e^{N \Lambda(\lambda, \mu)}`. Cut the range of
:math:`u = \sqrt{M_2} \in [0, \max_i |y_i|]` into pieces :math:`[a, b]`; on a piece, for any
:math:`\lambda \ge 0` and any :math:`\mu`, :math:`\lambda M_1 - \mu M_2 \ge \min_{u \in [a, b]} (\lambda c u -
\mu u^2) = \min(\lambda c a - \mu a^2, \lambda c b - \mu b^2) =: h`, so by Markov's inequality (Chernoff 1952)

.. math::
    P^*(M_1 \ge c \sqrt{M_2},\ \sqrt{M_2} \in [a, b]) \le e^{N (\Lambda(\lambda, \mu) - h)},

and the sum over pieces bounds :math:`p_\infty`. Every :math:`(\lambda, \mu)` gives a valid bound; each piece
takes the one of a few Newton steps towards the saddle point of the piece's end nearest :math:`u = s_0` (the
root mean square of y), where the resamples' spread concentrates. The bound holds for every sample, with no
probability of error and no draws; it is within a small factor of :math:`p_\infty` when t is large (the
Chernoff bound of a mean is :math:`e^{-t^2/2}` against the normal tail :math:`\approx e^{-t^2/2} / (t
\sqrt{2\pi})`), so it settles heads assigned with a clear margin, the ones a count of draws can show only
after about B of them.

The counted event compares with a slack (``null >= obs - slack``, 100 ulp of t) and the null statistics are
computed in floating point; the bound is taken at :math:`t (1 - 10^{-9})` less twice the slack, which covers
both.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from scipy.special import logsumexp

#: Edges of the pieces of :math:`u = \sqrt{M_2} / s_0` (fine near 1, where the resamples' spread lies); the
#: last piece ends at :math:`\max_i |y_i| / s_0`, above which :math:`M_2` cannot lie.
PIECE_EDGES = np.array([0.0, 0.6, 0.75, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15, 1.25, 1.4, 1.7, 2.2, 3.0, 5.0,
                        10.0])
#: Newton steps per piece (each a convex problem; any point gives a valid bound, the steps only tighten it).
NEWTON_STEPS = 6
#: The relative margin on t for the rounding of the null statistics.
T_MARGIN = 1e-9
#: Below this t no bound is computed (it could not settle a level below 0.05).
T_MIN = 2.0
#: The largest quantile :func:`bootstrap_t_quantile` looks for (small N have far quantiles).
T_QUANTILE_MAX = 100.0
#: Above this t the bound at T_CAP is used (far below any corrected level; the tilts stay well conditioned).
T_CAP = 10.0


def _log_mgf(z: np.ndarray, z2: np.ndarray, lam: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Lambda(lam, mu)`` per row (``(k,)``) and the tilted law ``q_i = e^{lam z_i - mu z_i^2} / sum`` (``(k, N)``)."""
    with np.errstate(all="ignore"):
        e = lam[:, None] * z - mu[:, None] * z2
        top = e.max(axis=1)
        q = np.exp(e - top[:, None])
        total = q.sum(axis=1)
        q /= total[:, None]
        return np.log(total) + top - np.log(z.shape[1]), q


def _saddle(z: np.ndarray, z2: np.ndarray, m1: np.ndarray, m2: np.ndarray, lam: np.ndarray, mu: np.ndarray,
            steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Damped Newton steps from ``(lam, mu)`` towards the minimum of the convex
    :math:`G = \Lambda(\lambda, \mu) - \lambda m_1 + \mu m_2` over :math:`\lambda \ge 0` (the tilt whose
    means of z and :math:`z^2` are ``m1`` and ``m2``); each step is kept only where it lowers G."""
    L, q = _log_mgf(z, z2, lam, mu)
    with np.errstate(all="ignore"):
        g = L - lam * m1 + mu * m2
    bad = ~np.isfinite(g) | (g > 0)  # start from (0, 0), where G = 0, when the given start is worse
    if bad.any():
        lam, mu, g, L = (np.where(bad, 0.0, lam), np.where(bad, 0.0, mu), np.where(bad, 0.0, g),
                         np.where(bad, 0.0, L))
        q = np.where(bad[:, None], 1.0 / z.shape[1], q)
    lam, mu, g, L = (np.array(a, dtype=float) for a in (lam, mu, g, L))
    m1, m2 = (np.broadcast_to(np.asarray(a, dtype=float), lam.shape) for a in (m1, m2))
    act = np.arange(lam.size)  # rows still moving: each row's steps depend on that row alone
    for _ in range(steps):
        qa, za, z2a = q[act], z[act], z2[act]
        qz, qz2 = qa * za, qa * z2a
        e1, e2 = qz.sum(axis=1), qz2.sum(axis=1)
        e3, e4 = (qz2 * za).sum(axis=1), (qz2 * z2a).sum(axis=1)
        g1, g2 = e1 - m1[act], m2[act] - e2
        h11, h12, h22 = e2 - e1 * e1, e1 * e2 - e3, e4 - e2 * e2
        with np.errstate(all="ignore"):
            det = h11 * h22 - h12 * h12
            d1 = np.nan_to_num((h22 * g1 - h12 * g2) / det)
            d2 = np.nan_to_num((h11 * g2 - h12 * g1) / det)
            todo = np.abs(g1 * d1 + g2 * d2) > 1e-10  # the Newton decrement: rows not yet at their minimum
        act, d1, d2 = act[todo], d1[todo], d2[todo]
        if act.size == 0:
            break
        pending = np.ones(act.size, dtype=bool)
        for s in (1.0, 0.3, 0.1, 0.03):  # a damped step where the full one does not lower G
            sub = act[pending]
            nl, nm = np.maximum(lam[sub] - s * d1[pending], 0.0), mu[sub] - s * d2[pending]
            nL, nq = _log_mgf(z[sub], z2[sub], nl, nm)
            with np.errstate(all="ignore"):
                ng = nL - nl * m1[sub] + nm * m2[sub]
            better = np.isfinite(ng) & (ng < g[sub])
            won = sub[better]
            lam[won], mu[won], g[won], L[won] = nl[better], nm[better], ng[better], nL[better]
            q[won] = nq[better]
            pending[np.flatnonzero(pending)[better]] = False
            if not pending.any():
                break
        act = act[~pending]  # a row no step lowered would search the same steps again: it has stopped
    return lam, mu, L


@dataclass
class Tilts:
    """The tilts of :func:`chernoff_tail`'s pieces for some c; with them the bound at any c is cheap
    (:meth:`log_bound`), and valid (any tilt gives a bound), tight near the c they were found for."""

    z: np.ndarray
    edges: np.ndarray  # (k, P + 1)
    lam: np.ndarray  # (k, P) the two-dimensional tilts and their log mgf
    mu: np.ndarray
    L: np.ndarray
    chord_lam: np.ndarray  # (k,) the first piece's one-dimensional tilt
    mean_lam: np.ndarray  # (k, P) the one-dimensional tilt of M_1 >= c a (0: none) and its log mgf
    mean_L: np.ndarray

    def row(self, i: int) -> "Tilts":
        """Row ``i`` alone (a Tilts of one row)."""
        return Tilts(*(getattr(self, f.name)[i:i + 1] for f in fields(self)))

    @staticmethod
    def stack(rows: list["Tilts"]) -> "Tilts":
        """The rows of several Tilts of the same N, in order."""
        return Tilts(*(np.concatenate([getattr(r, f.name) for r in rows]) for f in fields(Tilts)))

    def log_bound(self, c: np.ndarray) -> np.ndarray:
        """``(k, P)`` the log of each piece's bound at ``c`` (``(k,)``); -inf for an empty piece."""
        z, n = self.z, self.z.shape[1]
        a, b = self.edges[:, :-1], self.edges[:, 1:]
        cc = np.asarray(c, dtype=float)[:, None]
        with np.errstate(all="ignore"):
            h = np.minimum(self.lam * cc * a - self.mu * a * a, self.lam * cc * b - self.mu * b * b)
            piece = np.minimum(n * (self.L - h), 0.0)
            piece = np.where(np.isfinite(piece), piece, 0.0)
            piece = np.fmin(piece, n * (self.mean_L - self.mean_lam * cc * a))  # (fmin: a NaN term tells nothing)
            kappa = cc[:, 0] / self.edges[:, 1]
            e = self.chord_lam[:, None] * (z - kappa[:, None] * z * z)
            top = e.max(axis=1)
            chord = n * (np.log(np.exp(e - top[:, None]).mean(axis=1)) + top)
        piece[:, 0] = np.fmin(piece[:, 0], chord)
        return np.where(b > a, piece, -np.inf)

    def bound(self, c: np.ndarray) -> np.ndarray:
        """``(k,)`` the bound at ``c``: the sum over pieces, at most 1."""
        return np.minimum(np.exp(logsumexp(self.log_bound(c), axis=1)) * (1.0 + 1e-9), 1.0)


def find_tilts(z: np.ndarray, c: np.ndarray, steps: int = NEWTON_STEPS) -> Tilts:
    r"""The tilts of every piece for the thresholds ``c`` (module doc): a few damped Newton steps per piece,
    each piece starting from its neighbour's tilt nearer :math:`u = 1`; the first piece also gets the
    one-dimensional tilt of :math:`M_1 \ge (c / b) M_2`, and a piece whose tilt stays far from small that of
    :math:`M_1 \ge c a`."""
    k, n = z.shape
    c = np.asarray(c, dtype=float)
    top = np.abs(z).max(axis=1)
    edges = np.minimum(np.broadcast_to(PIECE_EDGES, (k, PIECE_EDGES.size)), top[:, None])
    edges = np.concatenate([edges[:, :-1], top[:, None]], axis=1)
    n_pieces = edges.shape[1] - 1
    lam_all, mu_all, L_all = (np.zeros((k, n_pieces)) for _ in range(3))
    z2 = z * z
    centre = int(np.searchsorted(PIECE_EDGES, 1.0))  # pieces [.., 1] below, [1, ..] above
    for order in (range(centre - 1, -1, -1), range(centre, n_pieces)):
        lam = c / (1.0 - c * c).clip(1e-6)  # a normal law's saddle point at u = 1
        mu = 0.5 * (1.0 / (1.0 - c * c).clip(1e-6) - 1.0)
        first = True
        for j in order:
            a, b = edges[:, j], edges[:, j + 1]
            v = np.where(b <= 1.0, b, a)  # the end nearest u = 1
            lam, mu, L = _saddle(z, z2, c * v, v * v, lam, mu, steps + (4 if first else 0))
            first = False
            lam_all[:, j], mu_all[:, j], L_all[:, j] = lam, mu, L
    with np.errstate(all="ignore"):
        _, chord_lam = _linear_log_mgf(z - (c / edges[:, 1])[:, None] * z2, steps)
    tilts = Tilts(z, edges, lam_all, mu_all, L_all, chord_lam, np.zeros((k, n_pieces)), np.zeros((k, n_pieces)))
    # a piece [a, b] whose tilt did not settle (no saddle point: the event lies at the edge of what resamples
    # can reach): M_1 >= c a there, Chernoff in one dimension
    loose = tilts.log_bound(c) > -20.0
    loose[:, 0] = False
    for j in np.nonzero(loose.any(axis=0))[0]:
        rows = loose[:, j]
        tilts.mean_L[rows, j], tilts.mean_lam[rows, j] = _linear_log_mgf(z[rows] - (c[rows] * edges[rows, j])[:, None],
                                                                         steps)
        with np.errstate(all="ignore"):
            tilts.mean_L[rows, j] += tilts.mean_lam[rows, j] * c[rows] * edges[rows, j]  # the log mgf of z itself
    bad = ~(np.isfinite(tilts.mean_L) & np.isfinite(tilts.mean_lam))
    tilts.mean_L[bad], tilts.mean_lam[bad] = 0.0, 0.0  # (no tilt: no bound from it)
    return tilts


def chernoff_tail(z: np.ndarray, c: np.ndarray, steps: int = NEWTON_STEPS) -> np.ndarray:
    r"""Upper bound on :math:`P^*(M_1 \ge c \sqrt{M_2})` for N iid draws from each row of ``z`` (module doc).

    Parameters
    ----------
    z : numpy.ndarray
        ``(k, N)`` centred scores scaled to :math:`\frac1N \sum z_i^2 = 1`.
    c : numpy.ndarray
        ``(k,)`` the threshold of each row, in (0, 1].

    Returns
    -------
    numpy.ndarray
        ``(k,)`` bounds in (0, 1].
    """
    if z.shape[0] == 0:
        return np.zeros(0)
    return find_tilts(z, c, steps).bound(c)


def _linear_log_mgf(w: np.ndarray, steps: int) -> np.ndarray:
    r"""Per row, the smallest over a few Newton steps from 0 of :math:`\log \frac1N \sum_i e^{\lambda w_i}`,
    :math:`\lambda \ge 0`: the Chernoff exponent of :math:`P(\bar w^* \ge 0)` for N draws of ``w``'s row,
    and the :math:`\lambda` that gives it."""
    k, n = w.shape
    zero = np.zeros_like(w)
    lam, best = np.zeros(k), np.zeros(k)
    q = np.full(w.shape, 1.0 / n)
    for _ in range(steps):
        m1 = (q * w).sum(axis=1)
        var = (q * w * w).sum(axis=1) - m1 * m1
        with np.errstate(all="ignore"):
            step = np.nan_to_num(m1 / var)
        todo = np.abs(m1 * step) > 1e-10
        if not todo.any():
            break
        for s in (1.0, 0.3, 0.1):
            with np.errstate(all="ignore"):
                nl = np.maximum(lam - s * step, 0.0)
            nL, nq = _log_mgf(w, zero, nl, np.zeros(k))
            better = todo & np.isfinite(nL) & (nL < best)
            lam, best = np.where(better, nl, lam), np.where(better, nL, best)
            q = np.where(better[:, None], nq, q)
            todo &= ~better
            if not todo.any():
                break
    return best, lam


def bound_points(t: np.ndarray, slack, *, cap: bool = True) -> np.ndarray:
    """The t at which the bounds are taken: ``t (1 - T_MARGIN)`` less twice the count's slack (so the bound
    covers the rounding of the null statistics), and (``cap``) :data:`T_CAP` for any larger t."""
    t = np.asarray(t, dtype=float)
    at = t * (1.0 - T_MARGIN) - 2.0 * np.broadcast_to(np.asarray(slack, dtype=float).reshape(t.shape[0], -1)
                                                       if np.ndim(slack) else slack, t.shape)
    return np.where(at >= T_CAP, T_CAP, at) if cap else at


def tilts_at(x: np.ndarray, t: np.ndarray, slack: np.ndarray, *,
             memo: tuple[dict, np.ndarray] | None = None) -> tuple[Tilts, np.ndarray]:
    """The tilts of :func:`find_tilts` for each row of ``x`` (``(k, N)``) at its ``t`` (``(k,)``), at the point
    :func:`bound_points` gives as :func:`bootstrap_t_tail` takes its bound (not capped: a tilt aimed at a
    smaller t seldom reaches a far larger one), and the c they are for: those :func:`bootstrap_t_tail` found
    for the same row and t are taken from ``memo``, the others found now."""
    x = np.asarray(x, dtype=float)
    y = x - x.mean(axis=1, keepdims=True)
    s0 = np.sqrt((y * y).mean(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where((s0 > 0)[:, None], y / s0[:, None], 0.0)
    n = x.shape[1]
    at = bound_points(np.asarray(t, dtype=float)[:, None], np.asarray(slack, dtype=float)[:, None], cap=False)[:, 0]
    at = np.maximum(at, 0.0)
    c = at / np.sqrt(n - 1 + at * at)
    known, keys = memo if memo is not None else ({}, np.arange(x.shape[0]))
    rows: list = [known[name][1] if name in known else None
                  for name in zip(keys.tolist(), at.tolist())]
    missing = [i for i, row in enumerate(rows) if row is None]
    if missing:
        found = find_tilts(z[missing], c[missing])
        for j, i in enumerate(missing):
            rows[i] = found.row(j)
    return Tilts.stack(rows), c


def bootstrap_t_tail(x: np.ndarray, t: np.ndarray, slack: np.ndarray | float = 0.0, *,
                     memo: tuple[dict, np.ndarray] | None = None) -> np.ndarray:
    r"""Upper bounds on the infinite-draw bootstrap-t p-values :math:`P^*(t^* \ge t - \text{slack})`.

    Parameters
    ----------
    x : numpy.ndarray
        ``(k, N)`` scores of k heads (any order).
    t : numpy.ndarray
        ``(k,)`` or ``(k, n_obs)`` observed statistics (one per tau of the sensitivity grid).
    slack : numpy.ndarray or float
        The slack of the count's comparison, broadcast to ``t``.
    memo : (dict, numpy.ndarray), optional
        Bounds computed before, by (key of the row, t at which the bound is taken), and the key of each row of
        ``x`` (its row in a :class:`~headstats.stats.matrix.ScoreMatrix`, whose ``bounds`` this is): a bound
        found there is reused, and the new ones are added (each row's bound depends on that row alone, so
        it is the same number).

    Returns
    -------
    numpy.ndarray
        Bounds shaped as ``t``; 1 where t is below :data:`T_MIN` or not finite (no bound worth computing),
        or the scores are all equal. The bound at :data:`T_CAP` serves every larger t of a row (the p-value
        only falls as t grows), and every bound of a row serves its larger t.
    """
    x = np.asarray(x, dtype=float)
    t = np.asarray(t, dtype=float)
    shape = t.shape
    if t.size == 0:
        return np.ones(shape)
    t2 = t.reshape(t.shape[0], -1)
    k, n = x.shape
    y = x - x.mean(axis=1, keepdims=True)
    s0 = np.sqrt((y * y).mean(axis=1))
    at = bound_points(t2, slack)
    want = np.isfinite(at) & (at >= T_MIN) & (s0 > 0)[:, None] & (n > 1)
    out = np.ones(t2.shape)
    rows, cols = np.nonzero(want)
    if rows.size:
        # one bound per distinct (row, t): the capped t of a row is computed once
        pairs, inverse = np.unique(np.stack([rows, at[rows, cols]], axis=1), axis=0, return_inverse=True)
        r, tt = pairs[:, 0].astype(np.int64), pairs[:, 1]
        known, keys = memo if memo is not None else ({}, np.arange(k))
        names = list(zip(keys[r].tolist(), tt.tolist()))
        u = np.array([known[name][0] if name in known else np.nan for name in names])
        new = np.flatnonzero(np.isnan(u))
        if new.size:
            c = tt[new] / np.sqrt(n - 1 + tt[new] * tt[new])
            tilts = find_tilts(y[r[new]] / s0[r[new], None], c)
            u[new] = tilts.bound(c)
            known.update((names[i], (u[i], tilts.row(j))) for j, i in enumerate(new))
        out[rows, cols] = u[inverse.ravel()]
    # a bound at a smaller t of the same row also bounds a larger t
    order = np.argsort(t2, axis=1, kind="stable")
    env = np.minimum.accumulate(np.take_along_axis(out, order, axis=1), axis=1)
    np.put_along_axis(out, order, env, axis=1)
    out = np.where(np.isfinite(t2), out, 1.0)
    return out.reshape(shape)


def bootstrap_t_quantile(x: np.ndarray, gamma: float, *, bisections: int = 30) -> np.ndarray:
    r"""Per row, a :math:`t_\gamma` with :math:`P^*(t^* \ge t_\gamma) \le \gamma` by the bound: at least the
    :math:`1 - \gamma` quantile of the bootstrap-t law, found without drawing.

    The tilts are found once, at the normal quantile :math:`z_{1 - \gamma}` (within :data:`T_MIN` and
    :data:`T_CAP`); the bound with those tilts falls as t grows, and a bisection finds where it meets
    :math:`\gamma`. ``mean - t_gamma * sd / sqrt(N)`` is then a bootstrap-t lower bound at level
    :math:`1 - \gamma`, conservative by the bound's slack. NaN where the scores are all equal, +inf where even
    the bound at :data:`T_QUANTILE_MAX` is above :math:`\gamma`.
    """
    from scipy.stats import norm

    x = np.asarray(x, dtype=float)
    k, n = x.shape
    out = np.full(k, np.nan)
    y = x - x.mean(axis=1, keepdims=True)
    s0 = np.sqrt((y * y).mean(axis=1))
    ok = (s0 > 0) & (n > 1)
    if not ok.any():
        return out
    z = y[ok] / s0[ok, None]

    def c_of(t):
        return t / np.sqrt(n - 1 + t * t)

    t0 = float(np.clip(norm.isf(gamma), T_MIN, T_CAP))
    tilts = find_tilts(z, np.full(z.shape[0], c_of(t0)))
    lo, hi = np.full(z.shape[0], c_of(T_MIN)), np.full(z.shape[0], c_of(T_QUANTILE_MAX))
    reach = tilts.bound(hi) <= gamma
    for _ in range(bisections):
        mid = 0.5 * (lo + hi)
        below = tilts.bound(mid) <= gamma
        hi, lo = np.where(below, mid, hi), np.where(below, lo, mid)
    t = hi * np.sqrt(n - 1) / np.sqrt(1.0 - hi * hi) * (1.0 + T_MARGIN)
    out[ok] = np.where(reach, t, np.inf)
    return out
