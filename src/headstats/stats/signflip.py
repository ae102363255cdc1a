r"""The sign-flip test over clusters from counts, exact where the counts allow (METHODS 5.3, 5.4).

A sentence-level (or input-level) paired test of two predictors refers :math:`T = \sum_s d_s` (``d_s``: words the
head gets right minus words the baseline gets right in sentence s) to its sign-flip law: under H0 each sign is a
fair coin, so :math:`T \overset{d}{=} \sum_s \epsilon_s |d_s|`. That law depends only on the multiset of
``|d_s|``, which an analysis can count per batch without keeping the sentences: the number ``c_m`` of sentences
with ``|d_s| = m`` for ``m = 1..K`` (:data:`headstats.engine.collector.SIGNFLIP_MAX_ABS`), beside ``sum d_s`` and ``sum d_s^2``. Then
(:func:`signflip_pvalues`):

- every non-zero ``|d_s| = 1`` (``sum d^2 = c_1``): the **binomial** law, exact for any number of sentences:
  with ``n = c_1`` the sentences and ``T = 2X - n``, ``X ~ Binomial(n, 1/2)`` (the sign test);
- every ``|d_s| <= K`` (``sum d^2 = sum_m c_m m^2``) and the support small enough
  (``sum_m c_m m <=`` :data:`MAX_EXACT_SUPPORT`): the **exact** law, the convolution of the scaled binomials
  ``m (2 Binomial(c_m, 1/2) - c_m)``, which is the enumeration of all ``2^n`` sign patterns counted by value;
- otherwise the **normal** approximation ``z = sum d / sqrt(sum d^2)`` (the sign-flip variance is exactly
  ``sum d^2``; Efron 1969), which the ``method`` column names.

When the per-sentence values themselves are at hand, :func:`headstats.stats.accuracy.cluster_signflip_test`
enumerates the ``2^n`` patterns up to ``n_resamples`` and draws ``n_resamples`` seeded Monte Carlo patterns past
that.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sps

__all__ = ["MAX_EXACT_SUPPORT", "SIGNFLIP_METHODS", "abs_count_columns", "signflip_law", "signflip_pvalues"]

#: The largest ``sum_m c_m m`` (half the width of the law's support) of the exact convolution.
MAX_EXACT_SUPPORT = 20_000
#: The ``method`` of each p-value: the law the statistic was referred to.
SIGNFLIP_METHODS = ("none", "binomial", "exact", "normal")


def signflip_law(abs_counts) -> tuple[np.ndarray, int]:
    r"""The exact law of :math:`\sum_s \epsilon_s |d_s|` under fair signs, from ``abs_counts[m - 1]`` sentences
    with ``|d_s| = m``. Returns ``(pmf, offset)``: ``pmf[i]`` is the probability of ``T = i - offset``."""
    pmf = np.ones(1)
    for m, c in enumerate(np.asarray(abs_counts, dtype=np.int64), start=1):
        if c == 0:
            continue
        part = np.zeros(2 * m * int(c) + 1)
        part[::2 * m] = sps.binom.pmf(np.arange(c + 1), int(c), 0.5)  # T_m = m (2X - c) on a grid of step 2m
        pmf = np.convolve(pmf, part)
    return pmf, (len(pmf) - 1) // 2


def abs_count_columns(columns, prefix: str, suffix: str = "") -> list[str]:
    """The columns ``<prefix>1<suffix>, <prefix>2<suffix>, ...`` of a table (the counts of ``|d| = 1, 2, ...``),
    in order."""
    out: list[str] = []
    while f"{prefix}{len(out) + 1}{suffix}" in columns:
        out.append(f"{prefix}{len(out) + 1}{suffix}")
    return out


def signflip_pvalues(sum_d, sum_d2, abs_counts=None, *, alternative: str = "greater") -> tuple[np.ndarray, np.ndarray]:
    r"""p-values of the sign-flip test over clusters, with the law each used (see the module docstring).

    Parameters
    ----------
    sum_d, sum_d2 : array_like
        Per test, :math:`\sum_s d_s` and :math:`\sum_s d_s^2` over the clusters.
    abs_counts : array_like, shape (n_tests, K), optional
        ``abs_counts[i, m - 1]``: the clusters of test i with ``|d_s| = m``. None: every test is normal.
    alternative : {"greater", "two-sided"}
        ``greater``: H1 the first predictor is more accurate, ``P(T >= t)``; ``two-sided``: ``P(|T| >= |t|)``.

    Returns
    -------
    p, method : ndarray
        p = 1 where every ``d_s`` is 0 (method ``none``).
    """
    if alternative not in ("greater", "two-sided"):
        raise ValueError(f"alternative must be 'greater' or 'two-sided', not {alternative!r}")
    d = np.atleast_1d(np.asarray(sum_d, dtype=float))
    d2 = np.atleast_1d(np.asarray(sum_d2, dtype=float))
    counts = (np.zeros((len(d), 0), np.int64) if abs_counts is None or not len(d)  # no test: nothing to shape
              else np.asarray(abs_counts, dtype=np.int64).reshape(len(d), -1))
    m = np.arange(1, counts.shape[1] + 1)
    p = np.ones(len(d))
    method = np.full(len(d), "none", dtype=object)
    for i in range(len(d)):
        if not np.isfinite(d2[i]):
            p[i], method[i] = np.nan, "none"
            continue
        if d2[i] <= 0:
            continue
        c = counts[i]
        t = int(round(d[i]))
        if c.size and c[0] == d2[i] and c[1:].sum() == 0:
            n = int(c[0])
            x = (t + n) // 2
            p[i] = (sps.binom.sf(x - 1, n, 0.5) if alternative == "greater"
                    else min(1.0, 2 * sps.binom.sf(max(x, n - x) - 1, n, 0.5)) if 2 * x != n else 1.0)
            method[i] = "binomial"
        elif c.size and (c * m * m).sum() == d2[i] and (c * m).sum() <= MAX_EXACT_SUPPORT:
            pmf, off = signflip_law(c)
            values = np.arange(len(pmf)) - off
            tail = pmf[values >= t].sum() if alternative == "greater" else pmf[np.abs(values) >= abs(t)].sum()
            p[i], method[i] = min(1.0, float(tail)), "exact"
        else:
            z = d[i] / np.sqrt(d2[i])
            p[i] = sps.norm.sf(z) if alternative == "greater" else min(1.0, 2 * sps.norm.sf(abs(z)))
            method[i] = "normal"
    return p, method
