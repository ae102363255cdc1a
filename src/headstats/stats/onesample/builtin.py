r"""The built-in one-sample tests, vectorised over hypotheses: t (and t with ddof = 0), Wilcoxon signed-rank,
sign, bootstrap, sign-flip permutation, skewness-corrected t; each registered in :data:`ONE_SAMPLE_TESTS`."""

from __future__ import annotations

import math
import warnings
from functools import partial

import numpy as np
from scipy import stats as sps

from headstats.stats.effects import EFFECT_SD_FLOOR, SD_FLOOR_NOTE, cohen_d, cohen_g, rank_biserial
from headstats.stats.onesample.draws import MIN_BEYOND, BootstrapStream, SignFlipStream
from headstats.stats.onesample.spec import OneSampleResult, register_test
from headstats.stats.ranks import (
    signed_rank_parts,
    signrank_critical_count,
    signrank_normal_sf,
    walsh_lower_bound,
)

#: scipy.stats.wilcoxon's method="auto" uses the normal approximation above this N.
_SCIPY_EXACT_MAX_N = 50
#: Scores ranked at once by the signed-rank test (bounds its memory).
_RANK_CHUNK = 2_000_000


# ----------------------------------------------------------------------------------------------------------
# helpers shared by the tests
# ----------------------------------------------------------------------------------------------------------
def _nan(k: int) -> np.ndarray:
    return np.full(k, np.nan)


def _t_parts(x: np.ndarray, tau: float, ddof: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Mean, sd (ddof = 1: the sample sd) and the t statistic ``(mean - tau) / (sd / sqrt(n))`` of each row.

    The sd = 0 rule of every test of the mean (``t``, ``bootstrap``, ``permutation``, ``skew_t`` and the
    paired t): when all scores are equal the studentized statistic is 0/0 or +-inf, so it is NaN, the
    p-value NaN and the head not tested (the note says ``sd=0``), whatever the side of tau.
    """
    n = x.shape[1]
    mean = x.mean(axis=1)
    sd = x.std(axis=1, ddof=ddof) if n > 1 else _nan(x.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, (mean - tau) / (sd / math.sqrt(n)), np.nan)
    return mean, sd, t, n


def _t_lower_bound(mean: np.ndarray, sd: np.ndarray, n: int, confidence: float) -> np.ndarray:
    """One-sided lower bound of the mean: ``mean - t_{confidence, n-1} * sd / sqrt(n)``."""
    if n < 2:
        return _nan(mean.shape[0])
    return mean - sps.t.ppf(confidence, n - 1) * sd / math.sqrt(n)


#: The note of a head whose scores are all equal (see :func:`_t_parts`).
SD0_NOTE = "sd=0: all scores equal, the test of the mean is undefined (p NaN)"


def _sd_notes(sd: np.ndarray) -> list[str]:
    return [SD0_NOTE if s == 0 else SD_FLOOR_NOTE if s < EFFECT_SD_FLOOR else "" for s in sd]


def _order_statistic_lower_bound(x: np.ndarray, confidence: float) -> np.ndarray:
    """Distribution-free lower bound of the median: the order statistic ``x_(r)``.

    ``r`` is the largest rank with ``P(Binomial(n, 1/2) >= r) >= confidence``, so that
    ``P(x_(r) <= median) >= confidence`` for any continuous distribution; ``-inf`` when no rank qualifies.
    """
    k, n = x.shape
    j = sps.binom.ppf(1 - confidence, n, 0.5)
    if sps.binom.cdf(j, n, 0.5) > 1 - confidence:
        j -= 1
    r = int(j) + 1  # 1-based rank
    if r < 1:
        return np.full(k, -np.inf)
    return np.partition(x, r - 1, axis=1)[:, r - 1]


def _wilcoxon_critical_rank(n: int, confidence: float) -> int:
    """Largest ``r`` with ``P(T+ <= r - 1) <= 1 - confidence`` under H0 (exact for n <= 50, else normal)."""
    return signrank_critical_count(n, 1.0 - confidence)


#: The one-sided Walsh-average bound of the pseudo-median (:func:`headstats.stats.ranks.walsh_lower_bound`).
_walsh_lower_bound = walsh_lower_bound


# ----------------------------------------------------------------------------------------------------------
# the five tests
# ----------------------------------------------------------------------------------------------------------
def t_pvalues(x: np.ndarray, *, tau: float, seed: int = 0, n_resamples: int = 0, ddof: int = 1) -> np.ndarray:
    """p-values of :func:`t_test` alone."""
    _, _, t, n = _t_parts(x, tau, ddof)
    return np.asarray(sps.t.sf(t, n - 1), dtype=float) if n > 1 else _nan(x.shape[0])


def t_p_from_moments(mean, sd, n, tau) -> np.ndarray:
    """p-values of :func:`t_test` from the mean, sd (ddof = 1) and n of each head (broadcasting; the same
    operations, so the same numbers); NaN where n < 2."""
    mean, sd, n, tau = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (mean, sd, n, tau)))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, (mean - tau) / (sd / np.sqrt(n)), np.nan)
        return np.where(n > 1, sps.t.sf(t, n - 1), np.nan)


def t_ddof0_p_from_moments(mean, sd, n, tau) -> np.ndarray:
    """:func:`t_p_from_moments` of the published code's statistic: sd with ddof 0, ``s_N = s_{N-1} sqrt((N-1)/N)``."""
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return t_p_from_moments(mean, np.asarray(sd, dtype=float) * np.sqrt((n - 1) / n), n, tau)


def t_test(x: np.ndarray, *, tau: float, confidence: float, seed: int = 0, n_resamples: int = 0,
           ddof: int = 1) -> OneSampleResult:
    r"""One-sample Student t-test of ``H0: mean <= tau``.

    .. math::
        t = \frac{\bar s - \tau}{s_{N-1} / \sqrt N}, \qquad p = P(T_{N-1} \ge t),

    with the sample standard deviation :math:`s_{N-1}` (ddof = 1; the published code of Pande et al. 2021
    used ddof = 0). Equals ``scipy.stats.ttest_1samp(s, tau, alternative="greater")``. The bound is
    :math:`\bar s - t_{c, N-1}\, s_{N-1} / \sqrt N` with c = ``confidence``; the effect size is Cohen's
    :math:`d = (\bar s - \tau) / s_{N-1}`. All scores equal (sd = 0): statistic and p NaN (not tested).
    ``ddof=0`` (registered as ``t_ddof0``) is the published code's statistic: :math:`s_N` in place of
    :math:`s_{N-1}` in t, the bound and d, p still from :math:`T_{N-1}`.
    """
    mean, sd, t, n = _t_parts(x, tau, ddof)
    p = sps.t.sf(t, n - 1) if n > 1 else _nan(x.shape[0])
    return OneSampleResult(
        statistic=t, dof=np.full(x.shape[0], float(n - 1)), p_unc=np.asarray(p, dtype=float),
        effect_size=cohen_d(mean, sd, tau), effect_size_type="cohen_d",
        ci_low=_t_lower_bound(mean, sd, n, confidence), note=_sd_notes(sd),
    )


def _wilcoxon_parts(x: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(T+, p, n', tied)`` per row: statistic and p-value of ``scipy.stats.wilcoxon``, non-zero count, ties.

    Above N = 50 scipy uses the normal approximation for every row; it is computed here, vectorised, with
    the same operations (:func:`headstats.stats.ranks.signrank_normal_sf`: the same numbers, one sort per
    row). Up to 50, rows with and without ties/zeros are sent to scipy separately because scipy chooses its
    method (exact, permutation, normal) once per call, so each row gets the p-value it would get alone.
    """
    k, n = x.shape
    d = x - tau
    t_plus, nz, ties, tied = (np.empty(k), np.empty(k, dtype=np.int64), np.empty(k), np.empty(k, dtype=bool))
    step = max(1, _RANK_CHUNK // max(n, 1))
    for start in range(0, k, step):
        rows = slice(start, start + step)
        t_plus[rows], nz[rows], ties[rows], tied[rows] = signed_rank_parts(d[rows])
    if n > _SCIPY_EXACT_MAX_N:
        with np.errstate(invalid="ignore"):
            p = np.where(nz > 0, signrank_normal_sf(t_plus, nz, ties), np.nan)
        return np.where(nz > 0, t_plus, np.nan), p, nz, tied
    stat = _nan(k)
    p = _nan(k)
    for mask in (tied & (nz > 0), ~tied & (nz > 0)):
        if not mask.any():
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = sps.wilcoxon(d[mask], alternative="greater", axis=1)
        stat[mask] = res.statistic
        p[mask] = res.pvalue
    return stat, p, nz, tied


def wilcoxon_pvalues(x: np.ndarray, *, tau: float, seed: int = 0, n_resamples: int = 0) -> np.ndarray:
    """p-values of :func:`wilcoxon_test` alone (no Walsh bound)."""
    return _wilcoxon_parts(x, tau)[1]


def wilcoxon_test(
    x: np.ndarray, *, tau: float, confidence: float, seed: int = 0, n_resamples: int = 0
) -> OneSampleResult:
    r"""Wilcoxon signed-rank test of ``d = s - tau``, ``H0: pseudo-median <= tau``.

    Zeros (``s == tau``) are dropped (``zero_method="wilcox"``). The statistic is
    :math:`T^+ = \sum_{d_i > 0} \operatorname{rank}(|d_i|)`. The p-value is exactly that of
    ``scipy.stats.wilcoxon(d, alternative="greater")`` called on that row alone: rows with and without
    ties/zeros are sent to scipy separately because scipy chooses its method ("exact" for N <= 50 without
    ties, a permutation for N <= 13 with ties, else the normal approximation without continuity
    correction) once per call. Effect size: the matched-pairs rank-biserial correlation
    :math:`r = (T^+ - T^-) / (T^+ + T^-)` (Kerby 2014; pingouin's ``RBC``). Bound: the one-sided lower
    confidence bound of the pseudo-median from the Walsh averages
    (:func:`headstats.stats.ranks.walsh_lower_bound`, selected in O(N log N)).
    """
    k, n = x.shape
    stat, p, nz, tied = _wilcoxon_parts(x, tau)
    how = "normal approximation" if n > 50 else None
    notes = [""] * k
    for i in range(k):
        parts = []
        if nz[i] == 0:
            parts.append("all scores equal tau")
        elif nz[i] < n:
            parts.append(f"{n - nz[i]} scores equal to tau dropped")
        if nz[i] > 0:
            if how is None:
                how_i = ("permutation" if n <= 13 else "normal approximation") if tied[i] else "exact"
            parts.append(how or how_i)
        notes[i] = "; ".join(parts)
    return OneSampleResult(
        statistic=stat, dof=_nan(k), p_unc=p, effect_size=rank_biserial(stat, nz),
        effect_size_type="rank_biserial", ci_low=_wilcoxon_bound(x, tau, nz, confidence), note=notes,
    )


def _wilcoxon_bound(x: np.ndarray, tau: float, nz: np.ndarray, confidence: float) -> np.ndarray:
    """The Walsh bound of the scores the test uses: those not equal to tau (``zero_method="wilcox"``).

    Computed from the same n' scores and the same null distribution as the p-value (exact up to n' = 50,
    the normal approximation without continuity correction above), so that ``ci_low > tau`` exactly when
    ``p <= 1 - confidence`` for scores without ties; NaN where every score equals tau.
    """
    k, n = x.shape
    full = nz == n
    out = _nan(k)
    if full.any():
        out[full] = walsh_lower_bound(x[full], confidence)
    for i in np.nonzero(~full & (nz > 0))[0]:
        row = x[i]
        out[i] = walsh_lower_bound(row[row != tau], confidence)[0]
    return out


def sign_pvalues(x: np.ndarray, *, tau: float, seed: int = 0, n_resamples: int = 0) -> np.ndarray:
    """p-values of :func:`sign_test` alone."""
    above = (x > tau).sum(axis=1)
    n_nz = (x != tau).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n_nz > 0, sps.binom.sf(above - 1, n_nz, 0.5), np.nan)


def sign_test(x: np.ndarray, *, tau: float, confidence: float, seed: int = 0, n_resamples: int = 0) -> OneSampleResult:
    r"""Sign test of ``H0: median <= tau``.

    With :math:`K = \#\{s_i > \tau\}` among the :math:`N' = \#\{s_i \ne \tau\}` scores not tied with tau,
    :math:`p = P(\mathrm{Binomial}(N', 1/2) \ge K)`, equal to
    ``scipy.stats.binomtest(K, N', 0.5, alternative="greater").pvalue``. Effect size: Cohen's
    :math:`g = K / N' - 1/2`. Bound: the order statistic :math:`s_{(r)}` with the largest rank r such that
    :math:`P(\mathrm{Binomial}(N, 1/2) \ge r) \ge` confidence (distribution-free bound of the median).
    """
    k, n = x.shape
    above = (x > tau).sum(axis=1)
    n_nz = (x != tau).sum(axis=1)
    notes = [
        "all scores equal tau" if m == 0 else (f"{n - m} scores equal to tau dropped" if m < n else "")
        for m in n_nz
    ]
    return OneSampleResult(
        statistic=above.astype(float), dof=_nan(k), p_unc=sign_pvalues(x, tau=tau), effect_size=cohen_g(above, n_nz),
        effect_size_type="cohen_g", ci_low=_order_statistic_lower_bound(x, confidence), note=notes,
    )


def tau_matrix(k: int, taus) -> np.ndarray:
    """``(k, n_obs)`` thresholds: one tau for all rows, one per row (``(k,)``), or ``(k, n_obs)`` as given."""
    taus = np.asarray(taus, dtype=float)
    if taus.ndim == 0:
        return np.full((k, 1), float(taus))
    return taus.reshape(k, -1)


def keep_for(confidence: float, total: int) -> int:
    """How many of the largest bootstrap-t statistics give the ``confidence`` quantile of ``total`` draws."""
    return int(min(total, math.ceil((total - 1) * (1.0 - confidence)) + 2))


def bootstrap_result(x: np.ndarray, stream: BootstrapStream, *, tau: float, confidence: float,
                     seed: int) -> OneSampleResult:
    """The :func:`bootstrap_test` result of sorted scores ``x`` from their stream (its first tau)."""
    k, n = x.shape
    mean, sd, t, _ = _t_parts(x, tau)
    p = np.where(np.isnan(t), np.nan, stream.pvalues()[:, 0])
    q = stream.quantile(confidence)
    full = stream.drawn >= stream.total  # a stopped row: its bound only where its draws place the quantile
    ci_low = _bootstrap_bound(x, np.where(full | (stream.drawn * (1 - confidence) >= MIN_BEYOND), q, np.nan))
    how = (f"exact: all {n}^{n} bootstrap resamples" if stream.exact
           else f"seed={seed}; bootstrap-t, B={stream.total}")
    notes = ["; ".join(filter(None, [s, how])) for s in _sd_notes(sd)]
    return OneSampleResult(
        statistic=t, dof=_nan(k), p_unc=p, effect_size=cohen_d(mean, sd, tau), effect_size_type="cohen_d",
        ci_low=ci_low, note=notes, n_resamples=stream.drawn.copy(),
    )


def _bootstrap_bound(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The bootstrap-t lower bound ``mean - q * sd / sqrt(N)`` from the quantile ``q`` of t*."""
    mean, sd, _, n = _t_parts(x, 0.0)
    with np.errstate(invalid="ignore"):
        return np.where(sd > 0, mean - q * sd / math.sqrt(n), np.nan)


def bootstrap_stream(x: np.ndarray, taus, *, seed: int, n_resamples: int,
                     confidence: float | None = None) -> BootstrapStream:
    """The bootstrap's :class:`~headstats.stats.onesample.draws.BootstrapStream` of sorted scores ``x``;
    with ``confidence``, it keeps what the bound at that level (or any higher one) needs."""
    taus = tau_matrix(x.shape[0], taus)
    k, n = x.shape
    total = n**n if (n <= 12 and n**n <= n_resamples) else int(n_resamples)
    keep = keep_for(confidence, total) if confidence is not None else 0
    return BootstrapStream(x, taus, seed=seed, n_resamples=n_resamples, keep=keep)


def bootstrap_test(
    x: np.ndarray, *, tau: float, confidence: float, seed: int = 0, n_resamples: int = 9999
) -> OneSampleResult:
    r"""Studentized (bootstrap-t) test of ``H0: mean <= tau``, seeded.

    The data are shifted to have mean exactly tau (``s - mean + tau``), which is the null; resampling the
    shifted data, the bootstrap t statistics are
    :math:`t^*_b = (\bar s^*_b - \bar s) / (s^*_b / \sqrt N)`, and
    :math:`p = (1 + \#\{t^*_b \ge t\}) / (B + 1)` with the observed :math:`t = (\bar s - \tau) / (s / \sqrt N)`
    (Efron & Tibshirani 1993, section 16.4; Hall 1992). A resample of identical values has :math:`s^* = 0`:
    its :math:`t^*` is :math:`\pm\infty` (0 when its mean is the sample mean). Bound: the bootstrap-t lower
    bound ``mean - q_confidence(t*) * sd / sqrt(N)``. Effect size: Cohen's d.

    Each head's scores are sorted before resampling, so the result depends only on its scores, ``seed`` and
    ``n_resamples`` -- never on how inputs are ordered or on the type of ``sentence_id``. The draws are those
    of :class:`~headstats.stats.onesample.draws.BootstrapStream` (which the sequential run reads too).

    Small N: when :math:`N^N \le` ``n_resamples`` (N <= 4 at any B >= 256, N = 5 from B = 3125) all
    :math:`N^N` equally likely resamples are enumerated and :math:`p = \#\{t^* \ge t\} / N^N` exactly (the
    complete bootstrap distribution, no seed; note "exact"). That distribution is coarse -- at N = 2 its
    smallest p is 1/4, at N = 3 4/27, at N = 4 about 0.07 -- so the bootstrap cannot assign a role below
    N = 5 at alpha = 0.05; the p-value is defined and reproducible rather than a draw of a few hundred
    distinct values. All scores equal (sd = 0): p NaN (the rule of every test of the mean).
    """
    x = np.sort(x, axis=1)
    stream = bootstrap_stream(x, tau, seed=seed, n_resamples=n_resamples, confidence=confidence)
    stream.advance(np.arange(x.shape[0]), stream.total)
    return bootstrap_result(x, stream, tau=tau, confidence=confidence, seed=seed)


def permutation_result(x: np.ndarray, stream: SignFlipStream, *, tau: float, confidence: float,
                       seed: int) -> OneSampleResult:
    """The :func:`permutation_test` result of sorted scores ``x`` from their stream (its first tau)."""
    k, n = x.shape
    mean, sd, _, _ = _t_parts(x, tau)
    p = np.where(sd > 0, stream.pvalues()[:, 0], np.nan)
    how = f"exact: all 2^{n} sign flips" if stream.exact else f"seed={seed}; sign flips, B={stream.total}"
    notes = ["; ".join(filter(None, [s, how])) for s in _sd_notes(sd)]
    return OneSampleResult(
        statistic=stream.obs[:, 0].copy(), dof=_nan(k), p_unc=p, effect_size=cohen_d(mean, sd, tau),
        effect_size_type="cohen_d", ci_low=_t_lower_bound(mean, sd, n, confidence), note=notes,
        n_resamples=stream.drawn.copy(),
    )


def permutation_stream(x: np.ndarray, taus, *, seed: int, n_resamples: int,
                       confidence: float | None = None) -> SignFlipStream:
    """The permutation test's :class:`~headstats.stats.onesample.draws.SignFlipStream` of sorted scores ``x``."""
    return SignFlipStream(x, tau_matrix(x.shape[0], taus), seed=seed, n_resamples=n_resamples)


def permutation_test(
    x: np.ndarray, *, tau: float, confidence: float, seed: int = 0, n_resamples: int = 9999
) -> OneSampleResult:
    r"""Sign-flip permutation test of ``H0: mean <= tau`` (symmetry of ``d = s - tau`` about 0), seeded.

    Statistic :math:`\bar d`. Under H0 the signs of :math:`d_i` are exchangeable, so the null distribution
    is that of :math:`\frac1N \sum_i \epsilon_i d_i` over sign vectors :math:`\epsilon`. When
    :math:`2^N \le` ``n_resamples`` all :math:`2^N` sign vectors are enumerated and
    :math:`p = \#\{\bar d^\epsilon \ge \bar d\} / 2^N` (exact); otherwise B random sign vectors from
    ``numpy.random.default_rng(seed)`` give :math:`p = (1 + \#\{\bar d^*_b \ge \bar d\}) / (B + 1)`. This is
    ``scipy.stats.permutation_test((d,), mean, permutation_type="samples", alternative="greater")``.
    Each head's ``d`` is sorted first, so the result does not depend on how inputs are ordered (or on the
    type of ``sentence_id``). All scores equal (sd = 0): p NaN, the rule of every test of the mean.
    A sign-flip test does not invert cheaply, so the bound is the t-based lower bound of the mean (as for ``t``).
    Effect size: Cohen's d. The draws are those of :class:`~headstats.stats.onesample.draws.SignFlipStream`.
    """
    x = np.sort(x, axis=1)
    stream = permutation_stream(x, tau, seed=seed, n_resamples=n_resamples)
    stream.advance(np.arange(x.shape[0]), stream.total)
    return permutation_result(x, stream, tau=tau, confidence=confidence, seed=seed)


def _skew_parts(x: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    r"""Mean, sd (ddof = 1), the skewness :math:`\hat\gamma = \hat\mu_3 / s^3` of Johnson (1978) with
    :math:`\hat\mu_3 = \frac1N\sum (s_i - \bar s)^3`, and the statistic T of :func:`skew_t_test`."""
    mean, sd, _, n = _t_parts(x, tau)
    with np.errstate(divide="ignore", invalid="ignore"):
        m3 = ((x - mean[:, None]) ** 3).mean(axis=1)
        g = np.where(sd > 0, m3 / sd**3, np.nan)
        s = (mean - tau) / sd
        stat = math.sqrt(n) * (s + g * s**2 / 3.0 + g**2 * s**3 / 27.0 + g / (6.0 * n))
    stat = np.where(sd > 0, stat, np.nan)
    return mean, sd, g, stat, n


def skew_t_pvalues(x: np.ndarray, *, tau: float, seed: int = 0, n_resamples: int = 0) -> np.ndarray:
    """p-values of :func:`skew_t_test` alone."""
    _, _, _, stat, n = _skew_parts(x, tau)
    return np.asarray(sps.t.sf(stat, n - 1), dtype=float) if n > 1 else _nan(x.shape[0])


def skew_t_test(
    x: np.ndarray, *, tau: float, confidence: float, seed: int = 0, n_resamples: int = 0
) -> OneSampleResult:
    r"""Skewness-corrected t-test of ``H0: mean <= tau`` (Johnson 1978, in the monotone form of Hall 1992).

    With :math:`S = (\bar s - \tau) / s` (ddof = 1) and :math:`\hat\gamma = \hat\mu_3 / s^3`,
    :math:`\hat\mu_3 = \frac1N \sum_i (s_i - \bar s)^3`,

    .. math::
        T = \sqrt N \left(S + \frac{\hat\gamma}{6N} + \frac{\hat\gamma S^2}{3} + \frac{\hat\gamma^2 S^3}{27}\right),
        \qquad p = P(T_{N-1} \ge T).

    The first three terms are Johnson's (1978) modified t, which removes the first-order effect of skewness
    on the t statistic (the t-test is conservative for right-skewed and anti-conservative for left-skewed
    scores when testing the upper tail); the cubic term is Hall's (1992) completion that makes T increasing
    in S, so the test inverts into a bound: ``ci_low = mean - s * S_c`` with
    :math:`S_c = 3((1 + \hat\gamma q)^{1/3} - 1) / \hat\gamma`, :math:`q = t_{c, N-1} / \sqrt N - \hat\gamma
    / (6N)` (``q`` itself when :math:`\hat\gamma = 0`), and ``ci_low > tau`` exactly when ``p < 1 - c``.
    Without skewness it is the t-test. Effect size: Cohen's d. All scores equal: p NaN (sd = 0 rule).
    """
    k = x.shape[0]
    mean, sd, g, stat, n = _skew_parts(x, tau)
    p = sps.t.sf(stat, n - 1) if n > 1 else _nan(k)
    ci_low = _nan(k)
    if n > 1:
        q = sps.t.ppf(confidence, n - 1) / math.sqrt(n) - g / (6.0 * n)
        with np.errstate(divide="ignore", invalid="ignore"):
            s_c = np.where(np.abs(g) > 1e-8, 3.0 * (np.cbrt(1.0 + g * q) - 1.0) / g, q)
        ci_low = np.where(sd > 0, mean - sd * s_c, np.nan)
    return OneSampleResult(
        statistic=stat, dof=np.full(k, float(n - 1)), p_unc=np.asarray(p, dtype=float),
        effect_size=cohen_d(mean, sd, tau), effect_size_type="cohen_d", ci_low=ci_low, note=_sd_notes(sd),
    )


def _t_bound(x: np.ndarray, *, tau: float, confidence: float, seed: int = 0, n_resamples: int = 0,
             ddof: int = 1) -> np.ndarray:
    mean, sd, _, n = _t_parts(x, tau, ddof)
    return _t_lower_bound(mean, sd, n, confidence)


def _wilcoxon_bound_only(x: np.ndarray, *, tau: float, confidence: float, seed: int = 0,
                         n_resamples: int = 0) -> np.ndarray:
    return _wilcoxon_bound(x, tau, (x != tau).sum(axis=1), confidence)


def _sign_bound(x: np.ndarray, *, tau: float, confidence: float, seed: int = 0, n_resamples: int = 0) -> np.ndarray:
    return _order_statistic_lower_bound(x, confidence)


register_test("t", t_test, parameter="mean", effect_size="cohen_d", p_values=t_pvalues,
              p_from_moments=t_p_from_moments, bound=_t_bound, efficiency=1.0,
              description="one-sample t-test (ddof = 1)")
register_test("wilcoxon", wilcoxon_test, parameter="pseudo-median", effect_size="rank_biserial",
              p_values=wilcoxon_pvalues, bound=_wilcoxon_bound_only, efficiency=3.0 / math.pi,
              description="Wilcoxon signed-rank test on score - tau")
register_test("sign", sign_test, parameter="median", effect_size="cohen_g", p_values=sign_pvalues,
              bound=_sign_bound, efficiency=2.0 / math.pi, description="sign test (median above tau)")
register_test("bootstrap", bootstrap_test, resampling=True, parameter="mean", effect_size="cohen_d",
              efficiency=1.0, description="studentized bootstrap test of the mean",
              stream=bootstrap_stream, stream_result=bootstrap_result, stream_bound=_bootstrap_bound)
register_test("permutation", permutation_test, resampling=True, parameter="mean", effect_size="cohen_d",
              bound=_t_bound, efficiency=1.0, description="sign-flip permutation test",
              stream=permutation_stream, stream_result=permutation_result)
register_test("skew_t", skew_t_test, parameter="mean", effect_size="cohen_d", p_values=skew_t_pvalues,
              bound=lambda x, **kw: skew_t_test(x, **kw).ci_low, efficiency=1.0,
              description="skewness-corrected t-test (Johnson 1978; Hall 1992)")
register_test("t_ddof0", partial(t_test, ddof=0), parameter="mean", effect_size="cohen_d",
              p_values=partial(t_pvalues, ddof=0), p_from_moments=t_ddof0_p_from_moments,
              bound=partial(_t_bound, ddof=0), efficiency=1.0,
              description="one-sample t-test with the sd of ddof = 0 (the published code of Pande et al. 2021)")



# pytest would collect ``t_test`` from modules that import it by name; say it is not a test.
t_test.__test__ = False  # type: ignore[attr-defined]
