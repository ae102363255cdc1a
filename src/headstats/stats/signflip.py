r"""The sign-flip test over clusters from the histogram of ``|d|``: exact where it can be, Monte Carlo past that
(METHODS 5.3, 5.4).

A sentence-level (or input-level) paired test of two predictors refers :math:`T = \sum_s d_s` (``d_s``: words the
head gets right minus words the baseline gets right in sentence s) to its sign-flip law: under H0 each sign is a
fair coin, so :math:`T \overset{d}{=} \sum_s \epsilon_s |d_s|`. That law depends only on the multiset of
``|d_s|``: with ``c_v`` clusters of ``|d_s| = v``,

.. math:: T \overset{d}{=} \sum_v v\,(2 X_v - c_v), \qquad X_v \sim \mathrm{Binomial}(c_v, 1/2) \text{ independent},

so an analysis need not keep its sentences: it counts, per batch, the clusters with ``|d_s| = m`` for
``m = 1..K`` (:data:`headstats.engine.collector.SIGNFLIP_MAX_ABS`, K = 64), beside ``sum d_s`` and ``sum d_s^2``.
The p-value (:func:`signflip_pvalues`; one test: :func:`signflip_histogram_test`) takes the first law that
applies, and its ``method`` column says which:

- ``binomial``: every non-zero ``|d_s|`` is the same ``v`` (with counts: every one is 1, ``sum d^2 = c_1``):
  ``T = v (2X - n)``, ``X ~ Binomial(n, 1/2)``, exact for any number of clusters (the sign test);
- ``exact``: integer ``|d_s|`` whose half-support ``S = sum_v c_v v`` is at most :data:`MAX_EXACT_SUPPORT`
  (1,000,000): the exact law, the convolution of the scaled binomials (:func:`signflip_law`), equal to the
  enumeration of all ``2^n`` sign patterns counted by value;
- ``monte_carlo``: a wider support (or magnitudes that are not integers): :data:`N_DRAWS` (99,999) seeded draws of
  the ``X_v``, ``p = (1 + #{T_b >= t}) / (B + 1)`` (two-sided ``|T_b| >= |t|``), a valid p-value for any B (its
  smallest value is ``1 / (B + 1) = 1e-5``);
- ``normal``: only where the histogram is incomplete, i.e. some cluster has ``|d_s| > K`` (the counts miss it:
  ``sum_m c_m m^2 < sum d^2``) or a table has no counts at all (counted by a headstats before them): the
  self-normalised normal approximation ``z = sum d / sqrt(sum d^2)`` (the sign-flip variance is exactly
  ``sum d^2``; Efron 1969).

The convolution is direct, not by FFT: every term is a sum of non-negative products, so a tail of ``1e-90`` keeps
its relative precision (an FFT's error is ``1e-16`` of the largest mass, absolute). Masses that are exactly 0 in
double precision are trimmed from the ends of every factor, so its cost grows with the square of the law's spread,
not of its support: 0.03 s at ``S = 100,000`` (30 magnitudes), about 1 s at ``S = 1.3 million`` (64 magnitudes,
40,000 clusters), where 99,999 Monte Carlo draws of 30 magnitudes take about 0.8 s.

:func:`headstats.stats.accuracy.cluster_signflip_test` is this same test from the per-cluster values: it counts
their ``|d|`` and calls :func:`signflip_histogram_test`.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sps

__all__ = ["MAX_EXACT_SUPPORT", "N_DRAWS", "SIGNFLIP_METHODS", "abs_count_columns", "signflip_law",
           "signflip_pvalues", "signflip_histogram_test"]

#: The largest half-support ``S = sum_v c_v v`` of the exact convolution (above it: Monte Carlo).
MAX_EXACT_SUPPORT = 1_000_000
#: Monte Carlo draws of the sign-flip law past :data:`MAX_EXACT_SUPPORT`.
N_DRAWS = 99_999
#: The ``method`` of each p-value: the law the statistic was referred to.
SIGNFLIP_METHODS = ("none", "binomial", "exact", "monte_carlo", "normal")
ALTERNATIVES = ("greater", "less", "two-sided")
#: Monte Carlo draws held in memory at once.
_BLOCK = 10_000


def signflip_law(abs_counts, magnitudes=None) -> tuple[np.ndarray, np.ndarray]:
    r"""The exact law of :math:`T = \sum_s \epsilon_s |d_s|` under fair signs.

    Parameters
    ----------
    abs_counts : array_like of int
        ``abs_counts[k]``: the clusters with ``|d_s| = magnitudes[k]``.
    magnitudes : array_like of int, optional
        Positive integers; default ``1, 2, ..., len(abs_counts)``.

    Returns
    -------
    values, pmf : ndarray
        Every value T can take (``-S, -S + 2, ..., S``, ``S = sum c_v v``) and its probability.

    Notes
    -----
    On the grid of ``U = sum_v v X_v`` (``T = 2U - S``) each ``v X_v`` lives on a grid of step v: the
    convolution with it is, per residue modulo v, a dense convolution with the ``Binomial(c_v, 1/2)`` pmf.
    Masses that are exactly 0 in double precision (beyond about 38 standard deviations) are dropped from the
    ends of every factor, which changes no number and keeps the cost near the square of the law's spread.
    """
    counts = np.asarray(abs_counts, dtype=np.int64).ravel()
    values = np.arange(1, len(counts) + 1) if magnitudes is None else np.asarray(magnitudes, dtype=np.int64).ravel()
    pmf, low = np.ones(1), 0  # pmf[i] = P(U = low + i)
    for v, c in sorted(zip(values.tolist(), counts.tolist())):
        if c == 0:
            continue
        weights, first = _nonzero(sps.binom.pmf(np.arange(c + 1), c, 0.5))
        out = np.zeros(len(pmf) + v * (len(weights) - 1))
        for r in range(min(v, len(pmf))):  # U + v X on residue r: pmf[r::v] convolved with the binomial pmf
            out[r::v] = np.convolve(pmf[r::v], weights)
        pmf, shift = _nonzero(out)
        low += v * first + shift
    support = int((values * counts).sum())
    full = np.zeros(support + 1)
    full[low:low + len(pmf)] = pmf
    return 2 * np.arange(support + 1) - support, full


def _nonzero(pmf: np.ndarray) -> tuple[np.ndarray, int]:
    """``pmf`` without its leading and trailing zeros (masses below the smallest double, exactly 0 either way:
    the convolution's cost is the product of the lengths that remain), and the index of its first kept entry."""
    kept = np.flatnonzero(pmf)
    return pmf[kept[0]:kept[-1] + 1], int(kept[0])


def _tail(t: float, values: np.ndarray, alternative: str) -> np.ndarray:
    """Which ``values`` are at least as extreme as ``t`` (a tolerance for sums of non-integers)."""
    eps = 1e-9 * max(1.0, abs(t))
    if alternative == "greater":
        return values >= t - eps
    if alternative == "less":
        return values <= t + eps
    return np.abs(values) >= abs(t) - eps


def signflip_histogram_test(t: float, magnitudes, counts, *, alternative: str = "greater", n_draws: int = N_DRAWS,
                  seed=0, max_exact_support: int = MAX_EXACT_SUPPORT) -> tuple[float, str]:
    r"""One sign-flip test of :math:`T = t` from the histogram of ``|d_s|`` (see the module docstring).

    Parameters
    ----------
    t : float
        The observed :math:`\sum_s d_s`.
    magnitudes, counts : array_like
        The distinct positive ``|d_s|`` and how many clusters have each (zero counts are ignored).
    alternative : {"greater", "less", "two-sided"}
        ``P(T >= t)``, ``P(T <= t)`` or ``P(|T| >= |t|)``.
    n_draws : int
        B, the Monte Carlo draws when the law is neither binomial nor exact.
    seed : int or sequence of int
        Seeds the Monte Carlo draws (``numpy.random.default_rng``).
    max_exact_support : int
        The largest ``S = sum c_v v`` whose law is convolved exactly.

    Returns
    -------
    p, method : float, str
        ``method``: ``none`` (no cluster with ``d_s != 0``: p = 1), ``binomial``, ``exact`` or ``monte_carlo``.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}, not {alternative!r}")
    v = np.asarray(magnitudes, dtype=float).ravel()
    c = np.asarray(counts, dtype=np.int64).ravel()
    keep = c > 0
    v, c = v[keep], c[keep]
    if not len(c):
        return 1.0, "none"
    if len(c) == 1:  # T = v (2X - n): the sign test
        n = int(c[0])
        x = (t / v[0] + n) / 2
        upper = sps.binom.sf(np.ceil(x - 1e-9) - 1, n, 0.5)  # P(X >= x)
        lower = sps.binom.cdf(np.floor(x + 1e-9), n, 0.5)    # P(X <= x)
        p = {"greater": upper, "less": lower, "two-sided": 2 * min(upper, lower)}[alternative]
        return float(min(1.0, p)), "binomial"
    integer = np.all(v == np.round(v))
    if integer and (v * c).sum() <= max_exact_support:
        values, pmf = signflip_law(c, v.astype(np.int64))
        return float(min(1.0, pmf[_tail(t, values, alternative)].sum())), "exact"
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, int(n_draws), _BLOCK):  # T_b = sum_v v (2 X_vb - c_v), a block of draws at a time
        x = rng.binomial(c, 0.5, size=(min(_BLOCK, int(n_draws) - start), len(c)))
        hits += int(_tail(t, (2 * x - c) @ v, alternative).sum())
    return (1 + hits) / (int(n_draws) + 1), "monte_carlo"


def abs_count_columns(columns, prefix: str, suffix: str = "") -> list[str]:
    """The columns ``<prefix>1<suffix>, <prefix>2<suffix>, ...`` of a table (the counts of ``|d| = 1, 2, ...``),
    in order."""
    out: list[str] = []
    while f"{prefix}{len(out) + 1}{suffix}" in columns:
        out.append(f"{prefix}{len(out) + 1}{suffix}")
    return out


def signflip_pvalues(sum_d, sum_d2, abs_counts=None, *, alternative: str = "greater", n_draws: int = N_DRAWS,
                     seed: int = 0, max_exact_support: int = MAX_EXACT_SUPPORT) -> tuple[np.ndarray, np.ndarray]:
    r"""p-values of the sign-flip test over clusters from counts, with the law each used (the module docstring).

    Parameters
    ----------
    sum_d, sum_d2 : array_like
        Per test, :math:`\sum_s d_s` and :math:`\sum_s d_s^2` over the clusters.
    abs_counts : array_like, shape (n_tests, K), optional
        ``abs_counts[i, m - 1]``: the clusters of test i with ``|d_s| = m``. A test whose counts do not account
        for its ``sum d^2`` (a cluster with ``|d_s| > K``), or None (no counts): the normal approximation.
    alternative : {"greater", "less", "two-sided"}
        ``greater``: H1 the first predictor is more accurate, ``P(T >= t)``; ``two-sided``: ``P(|T| >= |t|)``.
    n_draws, seed, max_exact_support
        As :func:`signflip_histogram_test`; test i draws with the seed ``(seed, i)``.

    Returns
    -------
    p, method : ndarray
        p = 1 where every ``d_s`` is 0 (method ``none``); NaN where ``sum d^2`` is not finite.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}, not {alternative!r}")
    d = np.atleast_1d(np.asarray(sum_d, dtype=float))
    d2 = np.atleast_1d(np.asarray(sum_d2, dtype=float))
    counts = (np.zeros((len(d), 0), np.int64) if abs_counts is None or not len(d)  # no test: nothing to shape
              else np.asarray(abs_counts, dtype=np.int64).reshape(len(d), -1))
    m = np.arange(1, counts.shape[1] + 1)
    complete = (counts * m * m).sum(1) == d2  # the counts hold every non-zero |d_s|
    p = np.ones(len(d))
    method = np.full(len(d), "none", dtype=object)
    for i in range(len(d)):
        if not np.isfinite(d2[i]):
            p[i] = np.nan
        elif d2[i] <= 0:
            continue
        elif complete[i]:
            p[i], method[i] = signflip_histogram_test(round(d[i]), m, counts[i], alternative=alternative,
                                                      n_draws=n_draws, seed=(seed, i),
                                                      max_exact_support=max_exact_support)
        else:
            z = d[i] / np.sqrt(d2[i])
            p[i] = {"greater": sps.norm.sf(z), "less": sps.norm.cdf(z),
                    "two-sided": min(1.0, 2 * sps.norm.sf(abs(z)))}[alternative]
            method[i] = "normal"
    return p, method
