r"""Accuracies as proportions: confidence intervals, a paired exact test of two predictors, and the clustered
tests of predictors judged on words of the same sentences (METHODS 2.3).

Two predictors (a head, a fixed offset) judged on the same words are compared by McNemar's exact test: only
the discordant words count, b (only the head is right) and c (only the offset is right); under H0 (equal
accuracy) b ~ Binomial(b + c, 1/2) (McNemar 1947; Fagerland, Lydersen and Laake 2013). The one-sided p-value
for "the head is more accurate" is ``P(X >= b)``; the two-sided one equals
``statsmodels.stats.contingency_tables.mcnemar(table, exact=True)``. An accuracy's confidence interval is
Wilson's score interval by default (``statsmodels.stats.proportion.proportion_confint``).

Words of one sentence share its attention and its parse, so counting them as independent pairs overstates
the evidence (METHODS 5.3). The sentence (or document) is the unit of the clustered tests:
:func:`cluster_signflip_test` tests the per-sentence differences ``d_j = (words the head gets right) - (words
the baseline gets right)`` by flipping their signs (:mod:`headstats.stats.signflip`: binomial or exact when
the law allows, else Monte Carlo);
:func:`cluster_bootstrap_interval` resamples sentences for the interval of an accuracy or of a difference of
accuracies. McNemar's test on words stays available under the name ``mcnemar_words``; the simulation
``simulations/clustered.py`` (``simulate_clustered_level``, outside the package) shows why it is not the default.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from headstats.stats.signflip import N_DRAWS, signflip_histogram_test


#: Interval methods of :func:`proportion_interval` (statsmodels' names; ``beta`` is Clopper-Pearson).
INTERVALS = ("wilson", "beta")


def proportion_interval(correct, n, *, confidence: float = 0.95, method: str = "wilson") -> tuple[np.ndarray, np.ndarray]:
    """Two-sided confidence interval of ``correct / n`` (Wilson, or ``beta``: Clopper-Pearson exact); NaN where n = 0."""
    if method not in INTERVALS:
        raise ValueError(f"method must be one of {INTERVALS}, not {method!r}")
    correct = np.asarray(correct, dtype=float)
    n = np.asarray(n, dtype=float)
    ok = n > 0
    low, high = np.full(np.broadcast(correct, n).shape, np.nan), np.full(np.broadcast(correct, n).shape, np.nan)
    if ok.any():
        c, m = np.broadcast_to(correct, low.shape)[ok], np.broadcast_to(n, low.shape)[ok]
        lo, hi = proportion_confint(c, m, alpha=1 - confidence, method=method)
        p = c / m  # round-off puts Wilson's bound a hair past p at 0 and n correct: clip to contain p
        low[ok], high[ok] = np.minimum(lo, p), np.maximum(hi, p)
    return low, high


def paired_exact_test(only_a, only_b, *, alternative: str = "greater") -> np.ndarray:
    """McNemar's exact test from the discordant counts: p-values of H0 "a and b are equally accurate".

    Parameters
    ----------
    only_a, only_b : array_like of int
        Items only predictor a gets right (b in McNemar's table), and only b gets right (c).
    alternative : {"greater", "two-sided"}
        ``greater``: a is more accurate (``P(X >= only_a)``, X ~ Binomial(only_a + only_b, 1/2)).

    Returns
    -------
    ndarray
        p-values; 1 where there is no discordant item.
    """
    if alternative not in ("greater", "two-sided"):
        raise ValueError(f"alternative must be 'greater' or 'two-sided', not {alternative!r}")
    a = np.atleast_1d(np.asarray(only_a, dtype=np.int64))
    b = np.atleast_1d(np.asarray(only_b, dtype=np.int64))
    out = np.ones(np.broadcast(a, b).shape)
    for k, (x, y) in enumerate(zip(np.broadcast_to(a, out.shape).ravel(), np.broadcast_to(b, out.shape).ravel())):
        if x + y > 0:
            out.flat[k] = sps.binomtest(int(x), int(x + y), 0.5, alternative=alternative).pvalue
    return out


#: The paired tests of two predictors: on sentences (the unit of replication) or on words (McNemar, named).
PAIRED_TESTS = ("signflip_sentences", "mcnemar_words")


def cluster_signflip_test(diffs, *, alternative: str = "greater", n_resamples: int = N_DRAWS, seed: int = 0) -> float:
    r"""Sign-flip test over clusters of H0 "the two predictors are equally accurate", from per-cluster differences.

    ``diffs[j]`` is, in sentence j, the number of words predictor a gets right minus the number b gets right.
    Under H0 (exchangeable predictors within a sentence) each ``d_j`` is symmetric about 0 and the sentences
    are independent, so the sign of each is a fair coin: the statistic :math:`\sum_j d_j` is referred to its
    sign-flip law, which depends only on how many sentences have each ``|d_j|``. This counts them and calls
    :func:`headstats.stats.signflip.signflip_histogram_test` (the test the analyses run from counts): the binomial law
    when every non-zero ``|d_j|`` is equal, the exact law (all ``2^J`` patterns counted by value) for integer
    ``|d_j|`` up to its support limit, else ``n_resamples`` seeded Monte Carlo draws with
    p = (1 + #{at least as extreme}) / (n_resamples + 1). Sentences with ``d_j = 0`` do not change the statistic
    and are left out. ``alternative``: ``greater`` (a more accurate), ``less`` or ``two-sided``. Without any
    non-zero sentence p = 1 (no evidence), as McNemar's test.
    """
    d = np.asarray(diffs, dtype=float).ravel()
    d = d[np.isfinite(d) & (d != 0)]
    magnitudes, counts = np.unique(np.abs(d), return_counts=True)
    return signflip_histogram_test(float(d.sum()), magnitudes, counts, alternative=alternative, n_draws=n_resamples,
                         seed=seed)[0]


def signflip_normal_test(sum_d, sum_d2, *, alternative: str = "greater") -> np.ndarray:
    r"""The sign-flip test over sentences from two sums, with the normal approximation of its distribution.

    Under H0 the signs of the per-sentence differences ``d_s`` are fair coins, so :math:`\sum_s \epsilon_s d_s`
    has mean 0 and variance exactly :math:`\sum_s d_s^2` over the sign patterns; the statistic
    :math:`z = \sum_s d_s / \sqrt{\sum_s d_s^2}` is referred to N(0, 1) (a central limit over sentences; the
    self-normalised sum of Efron 1969). It needs only the two sums, which an analysis accumulates per batch.
    p = 1 where every ``d_s`` is 0. ``alternative``: ``greater`` or ``two-sided``.
    """
    if alternative not in ("greater", "two-sided"):
        raise ValueError(f"alternative must be 'greater' or 'two-sided', not {alternative!r}")
    d = np.asarray(sum_d, dtype=float)
    d2 = np.asarray(sum_d2, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(d2 > 0, d / np.sqrt(np.where(d2 > 0, d2, 1.0)), 0.0)
    p = sps.norm.sf(z) if alternative == "greater" else 2 * sps.norm.sf(np.abs(z))
    return np.where(d2 > 0, np.minimum(p, 1.0), 1.0)


def cluster_ratio_interval(correct, n, sum_c2, sum_cn, sum_n2, n_clusters, *,
                           confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    r"""Cluster-robust (linearised ratio-estimator) interval of an accuracy ``C / N`` over J sentences.

    With ``c_s`` words right of ``n_s`` in sentence s, :math:`\hat p = C / N` and

    .. math:: \widehat{\operatorname{var}}(\hat p) = \frac{J}{J - 1} \frac{\sum_s (c_s - \hat p n_s)^2}{N^2}
              = \frac{J}{J-1} \frac{\sum c_s^2 - 2 \hat p \sum c_s n_s + \hat p^2 \sum n_s^2}{N^2}

    (Cochran 1977, section 6.4; the sandwich variance with the sentence as cluster), the interval
    :math:`\hat p \pm z_{(1+c)/2} \hat{se}` clipped to [0, 1]. Built from sums an analysis accumulates per
    batch. With one word per sentence it is the Wald interval. NaN where N = 0 or J < 2.
    """
    c, m = np.asarray(correct, dtype=float), np.asarray(n, dtype=float)
    c2, cn, n2 = (np.asarray(x, dtype=float) for x in (sum_c2, sum_cn, sum_n2))
    j = np.asarray(n_clusters, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = c / m
        var = j / (j - 1) * np.maximum(c2 - 2 * p * cn + p * p * n2, 0.0) / (m * m)
        half = sps.norm.ppf(0.5 + confidence / 2) * np.sqrt(var)
        ok = (m > 0) & (j >= 2)
        low = np.where(ok, np.clip(p - half, 0.0, 1.0), np.nan)
        high = np.where(ok, np.clip(p + half, 0.0, 1.0), np.nan)
    return low, high


def cluster_bootstrap_interval(correct, n, *, confidence: float = 0.95, n_resamples: int = 9_999,
                               seed: int = 0) -> tuple[float, float]:
    r"""Cluster bootstrap percentile interval of a ratio of sums, ``sum_j correct_j / sum_j n_j``.

    Sentences (clusters) are resampled with replacement, J of J, and the ratio recomputed each time; the
    interval is the ``(1 -+ confidence) / 2`` percentiles (Davison & Hinkley 1997, section 3.8). For an
    accuracy ``correct_j`` is the number of words right in sentence j of ``n_j``; for a difference of two
    accuracies on the same words give ``correct_j = right_a - right_b``. NaN without words.
    """
    c = np.asarray(correct, dtype=float)
    m = np.asarray(n, dtype=float)
    if c.size == 0 or m.sum() <= 0:
        return np.nan, np.nan
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, c.size, size=(n_resamples, c.size))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = c[idx].sum(1) / m[idx].sum(1)
    ratios = ratios[np.isfinite(ratios)]
    tail = (1 - confidence) / 2
    return float(np.quantile(ratios, tail)), float(np.quantile(ratios, 1 - tail))


def counted_only(table: pd.DataFrame, n: str) -> pd.DataFrame:
    """The rows of the (model, data set) pairs where the analysis counted anything (``n`` summed > 0).

    A data set that lacks what an analysis needs (no parses for the probes, no coreference links) is left out
    of its tables, with the reason in the analysis' notes, rather than shown as untested rows with p = 1.
    """
    if table.empty:
        return table
    return table[table.groupby(["model", "dataset"])[n].transform("sum") > 0].reset_index(drop=True)
