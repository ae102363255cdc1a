r"""Rank machinery shared by the one-sample and the paired tests: the signed-rank null, Walsh averages.

For a sample :math:`x_1..x_n` the :math:`M = n(n+1)/2` **Walsh averages** are :math:`(x_i + x_j)/2,
i \le j`. Their median is the Hodges-Lehmann estimate of the pseudo-median, and inverting the Wilcoxon
signed-rank test gives confidence bounds that are order statistics of them: the bound at one-tail level
``tail`` is the C-th smallest Walsh average, where ``C - 1`` is the largest c with
:math:`P(T^+ \le c) \le` ``tail`` under H0 (Hollander & Wolfe 1999, section 3.3).

Walsh order statistics are *selected*, never all materialised: for a sorted sample the number of Walsh sums
at most t is :math:`\sum_i \#\{j \ge i : x_i + x_j \le t\}`, one ``searchsorted`` over the sample
(:math:`O(n \log n)`). A systematic sample of the candidates gives two pivots that bracket the wanted rank;
the exact counts at the pivots shrink the candidates to a band (a few rounds of Floyd-Rivest selection in
the sorted "matrix" of Walsh sums, as in Monahan 1984, ACM TOMS 10:265), and once the band is small it is
materialised and partitioned. Sums are compared exactly as floating-point numbers ``x_i + x_j``, so the
result is bit for bit the one of sorting all M averages (the test suite checks this by brute force).

Everything here is vectorised over the rows of a ``(k, n)`` array (one row per head); the statistics layer
imports numpy and scipy only.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special

#: Up to this n the signed-rank null distribution is exact (enumerated); above it, the normal approximation.
EXACT_MAX_N = 50
#: Rows whose M Walsh averages are at most this many are sorted outright (vectorised over rows).
MATERIALISE_MAX = 20_000
#: Size of the systematic sample of candidate Walsh sums drawn in each selection round (at least).
_SAMPLE_MIN = 4096
#: Rows materialised at once by the brute-force path, in Walsh averages.
_CHUNK = 2_000_000


# ----------------------------------------------------------------------------------------------------------
# the signed-rank null distribution
# ----------------------------------------------------------------------------------------------------------
@lru_cache(maxsize=64)
def signrank_null_cdf(n: int) -> np.ndarray:
    r"""``P(T+ <= t)`` for ``t = 0..n(n+1)/2`` under H0 without ties.

    Counts the subsets of :math:`\{1..n\}` by their sum (``2^n`` subsets, each as likely); the counts are
    integers below :math:`2^{53}` for ``n <= 50``, so the result is exact. The array is cached: do not
    modify it.
    """
    m = n * (n + 1) // 2
    counts = np.zeros(m + 1, dtype=float)
    counts[0] = 1.0
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[: m + 1 - k].copy()
    cdf = np.cumsum(counts) / 2.0**n
    cdf.flags.writeable = False
    return cdf


def signrank_critical_count(n: int, tail: float) -> int:
    r"""The number of values ``t`` of :math:`T^+` with :math:`P(T^+ \le t) \le` ``tail`` under H0.

    Equivalently ``C`` with ``C - 1`` the largest c such that :math:`P(T^+ \le c) \le` ``tail``: the
    1-based rank of the Walsh average that bounds a one-tail-``tail`` interval (0 when even
    :math:`P(T^+ = 0) = 2^{-n}` exceeds ``tail``: no bound reaches that level). Exact for ``n <=``
    :data:`EXACT_MAX_N`; above, the normal approximation *without* continuity or tie correction, evaluated
    with :func:`signrank_normal_sf` itself, :math:`P(T^+ \le c) := P(T^+ \ge M - c)`, so that the bound and
    the p-value (scipy's default above n = 50) come from the same numbers: the bound lies above tau exactly
    when :math:`p \le` ``tail`` (for untied scores none equal to tau).
    """
    n = int(n)
    if n <= EXACT_MAX_N:
        return int(np.searchsorted(signrank_null_cdf(n), tail, side="right"))
    m = n * (n + 1) // 2
    sigma = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    guess = int(math.floor(m / 2.0 + special.ndtri(tail) * sigma)) + 1
    lo, hi = max(0, guess - 4), min(m, guess + 4)
    while True:  # widen until the window holds the last c that qualifies (the first guess always does)
        c = np.arange(lo, hi + 1)
        ok = signrank_normal_sf(m - c, n, 0.0) <= tail  # non-decreasing in c
        if ok.all() and hi < m:
            hi = min(m, hi + 64)
        elif not ok.any() and lo > 0:
            lo = max(0, lo - 64)
        else:
            return int(c[ok].max()) + 1 if ok.any() else 0


def walsh_rank_bound(n: int, tail: float) -> int:
    """``C`` of :func:`signrank_critical_count`, at most ``(M + 1) // 2``; 0 when n is too small to reach the
    level (then the interval end is infinite, as in :func:`walsh_interval`: no finite Walsh average bounds
    the pseudo-median at that confidence)."""
    m = n * (n + 1) // 2
    return min(signrank_critical_count(n, tail), (m + 1) // 2)


#: Elements of ``d`` ranked at a time by :func:`signed_rank_parts` (2**21: about 16 MiB per float64 temporary),
#: so that its memory does not grow with the number of inputs times the number of heads and roles.
RANK_BLOCK_ELEMENTS = 1 << 21


def signed_rank_parts(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""``(T+, n', ties, tied)`` of each row of ``d`` (2-D, no NaNs), with one sort per row.

    Rows are ranked in blocks of at most :data:`RANK_BLOCK_ELEMENTS` elements (each row is independent, so the
    result is that of one block), which bounds the sort's temporaries.

    Zeros are dropped (``zero_method="wilcox"``); the non-zero :math:`|d_i|` get average ranks 1..n'.
    ``T+`` is the sum of the ranks of the positive :math:`d_i`, ``ties`` the tie term
    :math:`\sum_g (t_g^3 - t_g)` over groups of equal non-zero :math:`|d_i|`, ``tied`` whether a row has such a
    group or a zero. ``T+`` is first summed with ordinal ranks (one matrix product) and then corrected on the
    few tied groups; ranks are half-integers, so every sum is exact.
    """
    d = np.atleast_2d(np.asarray(d, dtype=float))
    k, n = d.shape
    rows = max(1, RANK_BLOCK_ELEMENTS // max(n, 1))
    if k > rows:
        parts = [_signed_rank_block(d[start:start + rows]) for start in range(0, k, rows)]
        return tuple(np.concatenate(column) for column in zip(*parts))  # type: ignore[return-value]
    return _signed_rank_block(d)


def _signed_rank_block(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`signed_rank_parts` of one block of rows."""
    k, n = d.shape
    n_nonzero = (d != 0).sum(axis=1)
    ties = np.zeros(k)
    if n == 0:
        return np.zeros(k), n_nonzero, ties, np.zeros(k, dtype=bool)
    # zeros sort last (as +inf), after every non-zero |d|
    order = np.argsort(np.where(d != 0, np.abs(d), np.inf), axis=1)
    d_sorted = np.take_along_axis(d, order, axis=1)
    a = np.abs(d_sorted)
    positive = d_sorted > 0
    t_plus = positive.astype(float) @ np.arange(1.0, n + 1.0)  # ordinal ranks
    # tied groups: runs of equal non-zero |d| in sorted order
    rows, cols = np.nonzero(a[:, 1:] == a[:, :-1])
    keep = a[rows, cols] != 0
    rows, cols = rows[keep], cols[keep]  # element cols + 1 ties with element cols
    if rows.size:
        flat = rows.astype(np.int64) * n + cols
        new = np.ones(flat.size, dtype=bool)
        new[1:] = flat[1:] != flat[:-1] + 1
        group = np.cumsum(new) - 1
        g_row = rows[new]
        g_first = cols[new]
        g_last = np.zeros(g_first.size, dtype=np.int64)
        np.maximum.at(g_last, group, cols + 1)
        size = g_last - g_first + 1
        # members of each group, to count their positives and their ordinal ranks
        member_group = np.repeat(np.arange(size.size), size)
        member = g_first[member_group] + (np.arange(member_group.size) - np.repeat(np.cumsum(size) - size, size))
        is_pos = positive[g_row[member_group], member]
        n_pos = np.bincount(member_group, weights=is_pos, minlength=size.size)
        ordinal = np.bincount(member_group, weights=is_pos * (member + 1.0), minlength=size.size)
        average = (g_first + 1) + (g_last - g_first) / 2.0
        t_plus += np.bincount(g_row, weights=n_pos * average - ordinal, minlength=k)
        size_f = size.astype(float)
        ties = np.bincount(g_row, weights=size_f**3 - size_f, minlength=k)
    tied = (ties > 0) | (n_nonzero < n)
    return t_plus, n_nonzero, ties, tied


def signed_rank_sums(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""``(T+, n')`` of each row of ``d``: the sum of the ranks of :math:`|d_i|` over :math:`d_i > 0`.

    Zeros are dropped (``zero_method="wilcox"``) and ties get average ranks; ``n'`` counts the non-zero
    entries. ``d`` is 1-D (one sample) or 2-D (one per row) without NaNs.
    """
    d = np.asarray(d, dtype=float)
    t_plus, n_nonzero, _, _ = signed_rank_parts(d)
    return (t_plus[0], n_nonzero[0]) if d.ndim == 1 else (t_plus, n_nonzero)


def signrank_normal_sf(t_plus, n_nonzero, ties) -> np.ndarray:
    r""":math:`P(T^+ \ge t)` by the normal approximation with tie correction and no continuity correction.

    .. math:: z = \frac{T^+ - n'(n'+1)/4}{\sqrt{(n'(n'+1)(2n'+1) - \mathrm{ties}/2) / 24}}, \qquad p = 1 - \Phi(z),

    in the order of operations of ``scipy.stats.wilcoxon(..., alternative="greater", method="asymptotic")``
    (its default above n = 50), so that the p-values are the same numbers. NaN where n' = 0.
    """
    count = np.asarray(n_nonzero, dtype=float)
    mn = count * (count + 1.0) * 0.25
    se = count * (count + 1.0) * (2.0 * count + 1.0)
    se = np.sqrt((se - np.asarray(ties, dtype=float) / 2) / 24)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (np.asarray(t_plus, dtype=float) - mn) / se
    return special.ndtr(-z)


# ----------------------------------------------------------------------------------------------------------
# Walsh order statistics
# ----------------------------------------------------------------------------------------------------------
def walsh_order_statistics(
    x: np.ndarray, ranks, *, materialise_max: int = MATERIALISE_MAX
) -> np.ndarray:
    r"""The ``ranks``-th smallest Walsh averages :math:`(x_i + x_j)/2, i \le j` of each row of ``x``.

    Parameters
    ----------
    x : numpy.ndarray
        ``(k, n)`` finite values (1-D is one row), in any order.
    ranks : int or sequence of int
        1-based ranks, each in ``1..M`` with ``M = n(n+1)/2``; the same for every row.
    materialise_max : int
        Rows with ``M <= materialise_max`` sort all their Walsh averages (vectorised over rows); longer rows
        are selected in :math:`O(n \log n)` (see the module docstring). The answer does not depend on it.

    Returns
    -------
    numpy.ndarray
        ``(k, len(ranks))`` (or ``(len(ranks),)`` for 1-D ``x``): the Walsh averages, exactly
        ``(x_i + x_j) / 2.0`` of the pair that a full sort would put at that rank.
    """
    x = np.asarray(x, dtype=float)
    one = x.ndim == 1
    x2 = np.atleast_2d(x)
    k, n = x2.shape
    q = np.atleast_1d(np.asarray(ranks, dtype=np.int64)) - 1
    m = n * (n + 1) // 2
    if q.size and (q.min() < 0 or q.max() >= m):
        raise ValueError(f"Walsh ranks must lie in 1..{m} for n={n}, got {(q + 1).tolist()}")
    out = np.empty((k, q.size))
    if k and q.size:
        if m <= materialise_max:
            _materialised(x2, q, out)
        else:
            xs = np.sort(x2, axis=1)
            with np.errstate(over="ignore"):  # sums beyond the float range are +-inf, as in a full sort
                for row in range(k):
                    for c, rank in enumerate(q):
                        out[row, c] = _select_walsh_sum(xs[row], int(rank)) / 2.0
    return out[0] if one else out


def _materialised(x: np.ndarray, q: np.ndarray, out: np.ndarray) -> None:
    """Brute force: all Walsh averages of a chunk of rows, partitioned at the ranks ``q`` (0-based)."""
    n = x.shape[1]
    iu = np.triu_indices(n)
    rows_per_chunk = max(1, _CHUNK // max(1, iu[0].size))
    kth = np.unique(q)
    for start in range(0, x.shape[0], rows_per_chunk):
        xs = x[start:start + rows_per_chunk]
        walsh = (xs[:, iu[0]] + xs[:, iu[1]]) / 2.0
        out[start:start + rows_per_chunk] = np.partition(walsh, kth, axis=1)[:, q]


def _prefix_le(xs: np.ndarray, t: float) -> np.ndarray:
    """``p[i] = #{j : xs[i] + xs[j] <= t}`` (floating-point sums) for sorted ``xs``, exactly.

    ``j -> xs[i] + xs[j]`` is non-decreasing, so the pairs form a prefix; ``searchsorted(xs, t - xs[i])``
    finds it up to the rounding of ``t - xs[i]``, and the boundary is then moved across whole runs of tied
    values until ``xs[i] + xs[p - 1] <= t < xs[i] + xs[p]`` holds as computed.
    """
    n = xs.size
    with np.errstate(invalid="ignore", over="ignore"):
        p = np.searchsorted(xs, t - xs, side="right")
    while True:
        up = p < n
        up[up] = xs[up] + xs[p[up]] <= t
        down = p > 0
        down[down] = xs[down] + xs[p[down] - 1] > t
        if not (up.any() or down.any()):
            return p
        p[up] = np.searchsorted(xs, xs[p[up]], side="right")
        p[down] = np.searchsorted(xs, xs[p[down] - 1], side="left")


def _count(xs: np.ndarray, t: float, idx: np.ndarray) -> tuple[int, np.ndarray]:
    """Walsh sums ``xs[i] + xs[j] <= t`` with ``i <= j``, and per row i the end of its prefix (>= i)."""
    end = np.maximum(_prefix_le(xs, t), idx)
    return int((end - idx).sum()), end


def _select_walsh_sum(xs: np.ndarray, q: int, *, cap: int | None = None, sample: int | None = None) -> float:
    """The ``q``-th smallest (0-based) Walsh sum ``xs[i] + xs[j], i <= j`` of the sorted 1-D ``xs``.

    The candidates are, per row i, the columns ``lo[i] <= j < hi[i]``; ``below`` sums lie below them all.
    Once at most ``cap`` candidates are left they are partitioned; each round samples ``sample`` of them
    (the defaults suit any n; the tests make both tiny to exercise every branch).
    """
    n = xs.size
    idx = np.arange(n)
    lo, hi, below = idx.copy(), np.full(n, n), 0
    cap = max(MATERIALISE_MAX, 4 * n) if cap is None else cap
    s = max(_SAMPLE_MIN, 2 * n) if sample is None else sample
    while True:
        sizes = hi - lo
        total = int(sizes.sum())
        target = q - below
        if total <= cap:
            rows = np.repeat(idx, sizes)
            starts = np.cumsum(sizes) - sizes
            cols = lo[rows] + (np.arange(total) - starts[rows])
            sums = xs[rows] + xs[cols]
            return float(np.partition(sums, target)[target])
        # a systematic sample of the candidates, in row-major order
        cum = np.cumsum(sizes)
        pos = ((np.arange(s) + 0.5) * (total / s)).astype(np.int64)
        r = np.searchsorted(cum, pos, side="right")
        drawn = np.sort(xs[r] + xs[lo[r] + pos - (cum[r] - sizes[r])])
        frac = (target + 0.5) / total
        margin = 3.0 * math.sqrt(frac * (1.0 - frac) / s) + 2.0 / s
        a = drawn[max(0, int((frac - margin) * s))]
        b = drawn[min(s - 1, int(math.ceil((frac + margin) * s)))]
        lo, hi, below, found = _narrow(xs, idx, q, lo, hi, below, a, b)
        if found is not None:
            return found
        if int((hi - lo).sum()) == total:  # ties kept both pivots at the ends: one pivot always cuts
            p = drawn[min(s - 1, int(frac * s))]
            lo, hi, below, found = _narrow(xs, idx, q, lo, hi, below, p, p)
            if found is not None:
                return found


def _narrow(xs, idx, q, lo, hi, below, a: float, b: float):
    """Keep the candidates in ``[a, b]``, ``(.., a)`` or ``(b, ..]``, whichever holds rank ``q``."""
    if a > -np.inf:
        c_lt, end_lt = _count(xs, np.nextafter(a, -np.inf), idx)  # sums < a
    else:  # a sum that overflowed to -inf: nothing lies below it
        c_lt, end_lt = 0, idx
    c_le, end_le = _count(xs, b, idx)  # sums <= b
    if q < c_lt:
        return lo, np.maximum(np.minimum(hi, end_lt), lo), below, None
    if q >= c_le:
        return np.minimum(np.maximum(lo, end_le), hi), hi, c_le, None
    if a == b:  # every candidate left equals a
        return lo, hi, below, float(a)
    new_lo = np.minimum(np.maximum(lo, end_lt), hi)
    return new_lo, np.maximum(np.minimum(hi, end_le), new_lo), c_lt, None


# ----------------------------------------------------------------------------------------------------------
# bounds and estimates
# ----------------------------------------------------------------------------------------------------------
def walsh_interval(
    x: np.ndarray, *, confidence: float, alternative: str = "greater"
) -> tuple[np.ndarray, np.ndarray]:
    r"""The Walsh-average confidence interval of the pseudo-median of each row: the one implementation.

    Inverting the signed-rank test (Hollander & Wolfe 1999, section 3.3): with :math:`M = n(n+1)/2` Walsh
    averages :math:`W_{(1)} \le \dots \le W_{(M)}` and ``C = walsh_rank_bound(n, tail)``
    (``tail = 1 - confidence`` one-sided, ``(1 - confidence) / 2`` two-sided), the interval is
    :math:`[W_{(C)}, W_{(M+1-C)}]`; ``greater`` keeps only the lower end (upper +inf), ``less`` only the
    upper. When n is too small to reach the confidence (C = 0: e.g. n <= 4 one-sided, n <= 5 two-sided at
    95 %) the bounded ends are infinite: no Walsh average bounds the pseudo-median at that level, and a
    shorter range would be mislabelled. Shared by the one-sample ``wilcoxon`` bound and the paired
    Hodges-Lehmann interval.

    Returns
    -------
    low, high : numpy.ndarray
        ``(k,)`` each (one per row of the 2-D ``x``; 1-D ``x`` is one row).
    """
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be two-sided, greater or less, got {alternative!r}")
    x = np.atleast_2d(np.asarray(x, dtype=float))
    k, n = x.shape
    m = n * (n + 1) // 2
    tail = (1.0 - confidence) / 2.0 if alternative == "two-sided" else 1.0 - confidence
    c = walsh_rank_bound(n, tail) if n else 0
    low, high = np.full(k, -np.inf), np.full(k, np.inf)
    if n == 0:
        return np.full(k, np.nan), np.full(k, np.nan)
    if c >= 1:
        wanted = {"greater": [c], "less": [m + 1 - c], "two-sided": [c, m + 1 - c]}[alternative]
        w = walsh_order_statistics(x, wanted)
        if alternative in ("greater", "two-sided"):
            low = w[:, 0]
        if alternative in ("less", "two-sided"):
            high = w[:, -1]
    return low, high


def walsh_lower_bound(x: np.ndarray, confidence: float) -> np.ndarray:
    """One-sided lower confidence bound of the pseudo-median of each row: the C-th smallest Walsh average.

    :func:`walsh_interval` with ``alternative="greater"``; ``-inf`` for every row when C < 1 (n too small to
    reach the confidence).
    """
    return walsh_interval(x, confidence=confidence, alternative="greater")[0]


def hodges_lehmann(
    d: np.ndarray, *, confidence: float = 0.95, alternative: str = "two-sided"
) -> tuple[float, float, float]:
    """Hodges-Lehmann pseudo-median of ``d`` and its Walsh-average confidence interval.

    Returns ``(estimate, ci_low, ci_high)``: the median of the M Walsh averages (the mean of the two middle
    ones for even M) and the interval of :func:`walsh_interval` (infinite ends when n is too small to reach
    the confidence). Zeros in ``d`` are kept (drop them first to match the ``wilcox`` zero method).
    NaN for empty ``d``.
    """
    d = np.asarray(d, dtype=float).ravel()
    n = d.size
    if n == 0:
        return (np.nan, np.nan, np.nan)
    m = n * (n + 1) // 2
    w = walsh_order_statistics(d, [(m - 1) // 2 + 1, m // 2 + 1])
    estimate = float((w[0] + w[1]) / 2.0)
    low, high = walsh_interval(d, confidence=confidence, alternative=alternative)
    return (estimate, float(low[0]), float(high[0]))
