r"""The seeded null draws of the resampling tests, on demand: a :class:`NullStream` per ``(k, n)`` block.

A run with a fixed number B of resamples and a sequential run (:mod:`~headstats.stats.onesample.sequential`)
read the same stream: the resamples are generated in blocks of :data:`RESAMPLE_BLOCK` from
``numpy.random.default_rng(seed)`` (every row of a block sees the same resamples), and a row that is advanced
to B has exactly the exceedance count, p-value and bound of the fixed-B run. A row may stop earlier; its count
is then that of its first L draws.

Each stream compares its null statistics with one or more observed statistics per row (one per tau of the
sensitivity grid: the bootstrap-t statistics do not depend on tau, so one set of draws serves every tau).
"""

from __future__ import annotations

import math

import numpy as np

from headstats.stats.onesample.tailbound import bootstrap_t_quantile, bootstrap_t_tail, tilts_at
from headstats.stats.onesample.tilted import TiltedCell, mixture_tilts, studentized

#: Resampling tests draw their resamples in blocks of this many, so results do not depend on memory.
RESAMPLE_BLOCK = 1000
#: A bound from a stopped cell's draws needs at least this many of them beyond the quantile (else NaN).
MIN_BEYOND = 10
#: Rows whose null statistics are computed at once (bounds the memory of one block: rows x draws).
ROW_CHUNK = 2048
#: Blocks of null statistics gathered before they are merged into the kept largest ones.
TOP_EVERY = 16
#: The bootstrap-t screen (:meth:`BootstrapStream._exceedances`) serves rows whose smallest limit is below this
#: (above it, the rounding of ``M2 - M1^2`` could exceed the screen's margin near the limit).
SCREEN_MAX = 1e3


def _tolerance(obs: np.ndarray) -> np.ndarray:
    """The slack of ``null >= obs``: 100 ulp of the observed statistic (rounding of the same sum)."""
    return np.abs(np.finfo(float).eps * 100 * obs)


def _counts(null: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """``(rows, n_obs)``: how many of each row's null statistics (``(rows, draws)``, or ``(rows, draws, n_obs)``
    when they depend on the observed statistic) are ``>= limit`` (``(rows, n_obs)``)."""
    if null.ndim == 3:
        return (null >= limit[:, None, :]).sum(axis=1)
    out = np.empty(limit.shape)
    for j in range(limit.shape[1]):  # one limit at a time: a contiguous count, 3x faster than a 3-d one
        out[:, j] = np.count_nonzero(null >= limit[:, j, None], axis=1)
    return out


class NullStream:
    """Exceedance counts of one ``(k, n)`` block against ``obs`` (shape ``(k, n_obs)``), drawn on demand.

    Subclasses give :meth:`_generate` (the ``j``-th block of resamples, in order) and :meth:`_null` (the null
    statistics of some rows for a slice of a block: ``(rows, draws)`` when they do not depend on the observed
    statistic, ``(rows, draws, n_obs)`` when they do). ``exact``: every resample is enumerated (``total`` of
    them) and the p-value is ``count / total``; else ``(1 + count) / (1 + drawn)``.
    """

    exact: bool = False

    def __init__(self, obs: np.ndarray, total: int, keep: int = 0) -> None:
        self.obs = np.asarray(obs, dtype=float).reshape(obs.shape[0], -1)
        self.k = self.obs.shape[0]
        self.total = int(total)
        self.count = np.zeros(self.obs.shape)
        self.drawn = np.zeros(self.k, dtype=np.int64)
        #: ``(k, n_obs)`` draws counted per observed statistic: a row's :attr:`drawn`, or fewer where the count of
        #: one observed statistic was stopped while the row drew on (:meth:`advance`'s ``counted``)
        self.drawn_obs = np.zeros(self.obs.shape, dtype=np.int64)
        self._slack = _tolerance(self.obs)
        self._block_no, self._block = -1, None
        #: the ``keep`` largest null statistics of each row so far (its first :attr:`filled` columns), for quantiles
        self.top = np.empty((self.k, keep)) if keep else None
        #: how many of :attr:`top`'s columns hold a value, per row (all draws until there are ``keep``)
        self.filled = np.zeros(self.k, dtype=np.int64)

    # -- to give ------------------------------------------------------------------------------------------
    def _generate(self, j: int, size: int):
        raise NotImplementedError

    def _null(self, rows: np.ndarray, block, a: int, b: int) -> np.ndarray:
        raise NotImplementedError

    # -- reading ------------------------------------------------------------------------------------------
    def _block_at(self, j: int):
        if j < self._block_no:
            raise ValueError("a NullStream reads its blocks in order; make a new one to read again")
        while self._block_no < j:
            self._block_no += 1
            size = min(RESAMPLE_BLOCK, self.total - self._block_no * RESAMPLE_BLOCK)
            self._block = self._generate(self._block_no, size)
        return self._block

    def advance(self, rows: np.ndarray, upto: int, counted: np.ndarray | None = None) -> None:
        """Draw for ``rows`` (which have all drawn the same number so far) until each has ``upto`` draws.

        ``counted``: ``(len(rows), n_obs)``, the observed statistics whose counts go on (default: all); the
        others keep the count of the draws they had (their :attr:`drawn_obs`)."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size == 0:
            return
        start = int(self.drawn[rows[0]])
        upto = min(int(upto), self.total)
        if (self.drawn[rows] != start).any():
            raise ValueError("rows advanced together must have drawn the same number of resamples")
        pos = start
        pending: dict[int, list[np.ndarray]] = {}
        parts = [rows[r0:r0 + ROW_CHUNK] for r0 in range(0, rows.size, ROW_CHUNK)]
        on = np.ones((rows.size, self.obs.shape[1]), dtype=bool) if counted is None else np.asarray(counted, bool)
        if self.top is not None and not on.all():
            raise ValueError("a stream that keeps null statistics counts every observed statistic")
        # null >= limit is counted; NaN (never reached) where a count does not go on
        limits = [np.where(on[r0:r0 + ROW_CHUNK], self.obs[part] - self._slack[part], np.nan)
                  for r0, part in zip(range(0, rows.size, ROW_CHUNK), parts)]
        while pos < upto:
            j = pos // RESAMPLE_BLOCK
            a = pos - j * RESAMPLE_BLOCK
            b = min(RESAMPLE_BLOCK, upto - j * RESAMPLE_BLOCK)
            block = self._block_at(j)
            for r0, part, limit in zip(range(0, rows.size, ROW_CHUNK), parts, limits):
                if self.top is None:  # counts only: the stream may skip the draws that cannot reach a limit
                    self.count[part] += self._exceedances(part, block, a, b, limit)
                    continue
                null = self._null(part, block, a, b)  # (len(part), b - a[, n_obs])
                self.count[part] += _counts(null, limit)
                pending.setdefault(r0, []).append(null)
                if len(pending[r0]) >= TOP_EVERY:
                    self._keep_top(part, pending.pop(r0))
            pos = j * RESAMPLE_BLOCK + b
        for r0, nulls in pending.items():
            self._keep_top(rows[r0:r0 + ROW_CHUNK], nulls)
        self.drawn[rows] = upto
        self.drawn_obs[rows] = np.where(on, upto, self.drawn_obs[rows])

    def _exceedances(self, rows: np.ndarray, block, a: int, b: int, limit: np.ndarray) -> np.ndarray:
        """``(len(rows), n_obs)``: how many null statistics of the slice are ``>= limit``; a stream may
        compute them without every null statistic (:meth:`BootstrapStream._exceedances`)."""
        return _counts(self._null(rows, block, a, b), limit)

    def _keep_top(self, rows: np.ndarray, nulls: list[np.ndarray]) -> None:
        """Merge blocks of null statistics into the kept largest ones of ``rows``."""
        keep = self.top.shape[1]
        new = np.concatenate(nulls, axis=1)
        f = int(self.filled[rows[0]])  # rows advanced together have drawn, so kept, the same number
        if f + new.shape[1] <= keep:  # room for all of them: no selection yet
            self.top[rows, f:f + new.shape[1]] = new
            self.filled[rows] = f + new.shape[1]
            return
        both = np.concatenate([self.top[rows, :f], new], axis=1)
        self.top[rows] = np.partition(both, both.shape[1] - keep, axis=1)[:, both.shape[1] - keep:]
        self.filled[rows] = keep

    #: ``(k, n_obs)`` upper bounds on each row's infinite-draw p-value known without drawing (None: none)
    tail: np.ndarray | None = None
    #: ``tilted_cells(rows, cols, seeds)``: importance-sampling estimates of the rows' p-values at their observed
    #: statistics ``cols`` (:class:`~headstats.stats.onesample.tilted.TiltedCell`); None: the stream has none
    tilted_cells = None
    #: ``(memo, keys)``: bounds computed before and the key of each row (:func:`bootstrap_t_tail`'s ``memo``),
    #: set by the run that reads the stream; None: none kept
    bounds: tuple[dict, np.ndarray] | None = None
    #: ``(k, n_obs)`` rows whose count of all ``total`` draws is known to be 0 but for a stated risk (set by
    #: the sequential run from :attr:`tail`): their p-value is the fixed-B run's, ``1 / (1 + total)``
    certified: np.ndarray | None = None

    def pvalues(self) -> np.ndarray:
        """``(k, n_obs)``: ``count / total`` when enumerated, else ``(1 + count) / (1 + drawn_obs)``, and
        ``1 / (1 + total)`` where :attr:`certified`."""
        if self.exact:
            return self.count / self.total
        p = (1.0 + self.count) / (1.0 + self.drawn_obs)
        if self.certified is not None:
            p = np.where(self.certified, 1.0 / (1.0 + self.total), p)
        return p

    def quantile(self, level: np.ndarray | float) -> np.ndarray:
        """The ``level`` quantile (numpy's linear rule) of each row's null statistics drawn so far.

        From the kept largest values; NaN where they do not reach the order statistics the level needs.
        An interpolation towards an infinite statistic gives +inf (no finite bound).
        """
        level = np.broadcast_to(np.asarray(level, dtype=float), (self.k,))
        if self.top is None:
            return np.full(self.k, np.nan)
        keep = self.top.shape[1]
        n = self.drawn.astype(float)
        h = (n - 1) * level
        lo = np.floor(h)
        ok = (n > 0) & np.isfinite(level) & (n - 1 - lo < keep)
        lo_i = np.where(ok, lo, 0).astype(np.int64)
        hi_i = np.minimum(lo_i + 1, np.maximum(self.drawn - 1, 0))
        a, b = np.full(self.k, -np.inf), np.full(self.k, -np.inf)
        for f in np.unique(self.filled[self.filled > 0]):  # rows with the same number kept: sort only those
            sel = np.nonzero(self.filled == f)[0]
            desc = -np.sort(-self.top[sel, :f], axis=1)
            at = np.arange(sel.size)
            a[sel] = desc[at, np.clip(self.drawn[sel] - 1 - lo_i[sel], 0, f - 1)]
            b[sel] = desc[at, np.clip(self.drawn[sel] - 1 - hi_i[sel], 0, f - 1)]
        t = h - lo
        with np.errstate(invalid="ignore"):  # numpy's linear rule (its _lerp), +inf towards an infinite value
            diff = b - a
            out = np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)
        return np.where(ok, np.nan_to_num(out, nan=np.inf), np.nan)


class BootstrapStream(NullStream):
    r"""Bootstrap-t statistics :math:`t^*_b = (\bar s^*_b - \bar s) / (s^*_b / \sqrt N)` of each row.

    ``x``: the block's scores, each row sorted (so the draws do not depend on how inputs are ordered);
    ``taus``: ``(k, n_obs)``, the thresholds whose observed :math:`t = (\bar s - \tau) / (s / \sqrt N)` are
    compared. ``exact``: all :math:`N^N` resamples in order (when :math:`N^N \le B`, N <= 12).
    :attr:`tail` is Chernoff's bound on the infinite-draw p-value (:mod:`~headstats.stats.onesample.tailbound`).
    """

    def __init__(self, x: np.ndarray, taus: np.ndarray, *, seed: int, n_resamples: int, keep: int = 0) -> None:
        k, n = x.shape
        self.n = n
        self.mean = x.mean(axis=1)
        sd = x.std(axis=1, ddof=1) if n > 1 else np.full(k, np.nan)
        taus = np.asarray(taus, dtype=float).reshape(k, -1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where((sd > 0)[:, None], (self.mean[:, None] - taus) / (sd[:, None] / math.sqrt(n)), np.nan)
        self.exact = n <= 12 and n**n <= n_resamples
        super().__init__(t, n**n if self.exact else int(n_resamples), keep)
        self.xc = x - self.mean[:, None]
        self._rng = np.random.default_rng(seed)
        self._tail = None

    @property
    def tail(self) -> np.ndarray:
        """Chernoff's bound on each row's infinite-draw p-value at each observed t
        (:func:`~headstats.stats.onesample.tailbound.bootstrap_t_tail`), computed on first use."""
        if self._tail is None:
            self._tail = bootstrap_t_tail(self.xc, self.obs, self._slack, memo=self.bounds)
        return self._tail

    def quantile_bound(self, level: float, rows: np.ndarray) -> np.ndarray:
        """For ``rows``: a value at least the ``level`` quantile of the bootstrap-t law, from the bound without
        drawing (:func:`~headstats.stats.onesample.tailbound.bootstrap_t_quantile`)."""
        return bootstrap_t_quantile(self.xc[rows], 1.0 - level)

    def tilted_cells(self, rows: np.ndarray, cols: np.ndarray, seeds: list) -> list[TiltedCell]:
        """The importance-sampling estimates of the p-values of cells ``(rows[i], cols[i])`` (row, observed t),
        their mixtures found at once, each seeded by ``seeds[i]``."""
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        if rows.size == 0:
            return []
        t = self.obs[rows, cols]
        memo = None if self.bounds is None else (self.bounds[0], np.asarray(self.bounds[1])[rows])
        mixtures = mixture_tilts(*tilts_at(self.xc[rows], t, self._slack[rows, cols], memo=memo))
        return [TiltedCell(self.xc[r], float(self.mean[r]), float(t[i]), float(t[i] - self._slack[r, c]), seed,
                           mixture=mixtures[i])
                for i, (r, c, seed) in enumerate(zip(rows.tolist(), cols.tolist(), seeds))]

    def _generate(self, j: int, size: int):
        n = self.n
        if self.exact:
            codes = np.arange(j * RESAMPLE_BLOCK, j * RESAMPLE_BLOCK + size)[:, None]
            idx = (codes // (n ** np.arange(n))[None, :]) % n
        else:
            idx = self._rng.integers(0, n, size=(size, n))
        idx += np.arange(0, size * n, n)[:, None]  # resample b's inputs counted in bins b n .. b n + n - 1
        w = np.bincount(idx.ravel(), minlength=size * n).reshape(size, n)
        return w.astype(float).T  # (n, b): how often each input is drawn in each resample

    def _moments(self, rows: np.ndarray, block, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """The resample means of ``y`` and ``y^2`` (``y`` the centred scores), ``(len(rows), b - a)`` each."""
        xr = self.xc[rows]
        w = block[:, a:b]
        return xr @ w / self.n, (xr * xr) @ w / self.n

    def _studentized(self, m1: np.ndarray, m2: np.ndarray, mean: np.ndarray) -> np.ndarray:
        """:func:`~headstats.stats.onesample.tilted.studentized` with this stream's N."""
        return studentized(m1, m2, mean, self.n)

    def _null(self, rows: np.ndarray, block, a: int, b: int) -> np.ndarray:
        m1, m2 = self._moments(rows, block, a, b)
        return self._studentized(m1, m2, self.mean[rows][:, None])

    def _exceedances(self, rows: np.ndarray, block, a: int, b: int, limit: np.ndarray) -> np.ndarray:
        r"""The counts of :meth:`NullStream._exceedances`, computing :math:`t^*` only where it can reach a limit.

        For a row whose smallest limit :math:`\ell` is positive (and below :data:`SCREEN_MAX`),
        :math:`t^* \ge \ell` needs :math:`M_1 > 0` and :math:`M_1^2 (N - 1 + \ell^2) \ge \ell^2 M_2` (square
        :math:`M_1 \sqrt{N-1} / \sqrt{M_2 - M_1^2} \ge \ell`); the screen keeps every draw with
        :math:`M_1^2 (N - 1 + \ell^2) \ge (1 - 10^{-6}) \ell^2 M_2`, a margin far above the rounding of either
        side, and :math:`t^*` is computed, by the same operations as :meth:`_null`, for those draws only. The
        counts are those of every null statistic, so a row's p-value does not change (tested against the full
        computation). Most draws of a row whose observed t is large are screened out at the cost of a few
        elementwise operations, in place of the dozen of :math:`t^*` and one comparison per limit.
        """
        m1, m2 = self._moments(rows, block, a, b)
        n = self.n
        low = np.where(np.isnan(limit), np.inf, limit).min(axis=1)  # (a NaN limit counts nothing)
        screened = (low > 0) & (low < SCREEN_MAX) if n > 1 else np.zeros(len(rows), dtype=bool)
        out = np.zeros(limit.shape)
        if (~screened).any():  # the others: every t*
            full = np.nonzero(~screened)[0]
            t = self._studentized(m1[full], m2[full], self.mean[rows[full]][:, None])
            out[full] = _counts(t, limit[full])
        if screened.any():
            sel = np.nonzero(screened)[0]
            l2 = (low[sel] ** 2)[:, None]
            a1, a2 = m1[sel], m2[sel]
            keep = (a1 > 0) & (a1 * a1 * (n - 1 + l2) >= (1.0 - 1e-6) * l2 * a2)
            r, c = np.nonzero(keep)
            if r.size:
                t = self._studentized(a1[r, c], a2[r, c], self.mean[rows[sel[r]]])
                hit = t[:, None] >= limit[sel[r]]  # (kept draws, n_obs)
                np.add.at(out, sel[r], hit.astype(float))
        return out


class SignFlipStream(NullStream):
    r"""Sign-flip means :math:`\frac1N \sum_i \epsilon_i d_i` of ``d = x - tau`` for each row and each tau.

    ``x``: the block's scores, each row sorted; ``taus``: ``(k, n_obs)``. ``exact``: all :math:`2^N` sign
    vectors in order (when :math:`2^N \le B`). The signs are shared by every tau (one draw, one matmul per
    tau), as the fixed-B test draws them. :attr:`tail` is Hoeffding's bound on the infinite-draw p-value.
    """

    def __init__(self, x: np.ndarray, taus: np.ndarray, *, seed: int, n_resamples: int) -> None:
        k, n = x.shape
        self.n = n
        taus = np.asarray(taus, dtype=float).reshape(k, -1)
        self.d = [x - taus[:, [j]] for j in range(taus.shape[1])]
        obs = np.stack([d.mean(axis=1) for d in self.d], axis=1)
        self.exact = n < 63 and 2**n <= n_resamples
        super().__init__(obs, 2**n if self.exact else int(n_resamples))
        self._rng = np.random.default_rng(seed)
        # Hoeffding (1963) for a Rademacher sum: P(sum e_i d_i >= s) <= exp(-s^2 / (2 sum d_i^2)), s > 0, with
        # s the observed sum less twice the slack of the count's comparison (so it bounds what is counted)
        with np.errstate(divide="ignore", invalid="ignore"):
            s = n * (obs - 2 * self._slack)
            sq = np.stack([(d * d).sum(axis=1) for d in self.d], axis=1)
            self.tail = np.where(s > 0, np.exp(-(s * s) / (2 * sq)), 1.0)

    def _generate(self, j: int, size: int):
        n = self.n
        if self.exact:
            codes = np.arange(j * RESAMPLE_BLOCK, j * RESAMPLE_BLOCK + size)
            return 1.0 - 2.0 * ((codes[:, None] >> np.arange(n)[None, :]) & 1)
        return self._rng.choice(np.array([-1.0, 1.0]), size=(size, n))

    def _null(self, rows: np.ndarray, block, a: int, b: int) -> np.ndarray:
        signs = block[a:b].T
        return np.stack([d[rows] @ signs / self.n for d in self.d], axis=2)
