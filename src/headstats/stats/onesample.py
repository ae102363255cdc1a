"""One-sided one-sample tests of functional roles, vectorised over heads (METHODS.md section 1.4).

For every hypothesis (model, dataset, role, layer, head) with the sieve bias scores ``s_1..s_N`` of the N
inputs that took part:

    H0: location <= tau        H1: location > tau        (one-sided, upper tail)

where the location is the mean (``t``, ``bootstrap``, ``permutation``), the pseudo-median (``wilcoxon``) or
the median (``sign``). The p-values are then corrected within each declared *family* with
:func:`headstats.stats.corrections.correct_pvalues`, and a head is assigned the role when ``p_corr < alpha``.

The work is done on a matrix: the scores of all hypotheses that have the same number N of participating
inputs form one ``(k, N)`` array, and every test is a function of that array computed along ``axis=1``. A
test is a function registered in :data:`ONE_SAMPLE_TESTS`; users add one with :func:`register_test`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd
from scipy import stats as sps

from headstats.errors import HeadstatsError
from headstats.stats.corrections import check_correction, correct_pvalues

#: The columns of the scores table that a test needs.
SCORE_COLUMNS: tuple[str, ...] = ("model", "dataset", "sentence_id", "layer", "head", "role", "score")
#: One hypothesis per distinct value of these columns.
HYPOTHESIS_KEYS: tuple[str, ...] = ("model", "dataset", "role", "layer", "head")
#: The columns of :func:`test_roles`' output, in order; they never change with a parameter.
TEST_COLUMNS: tuple[str, ...] = (
    "model", "dataset", "role", "layer", "head", "test", "n", "n_missing", "mean", "sd", "median", "tau",
    "statistic", "dof", "alternative", "p_unc", "p_corr", "correction", "family", "alpha", "effect_size",
    "effect_size_type", "ci_low", "ci_high", "confidence", "reject", "power", "n_for_power",
    "bf10_two_sided", "note",
    # after the columns of the contract: provenance of the power and of the resampling tests
    "power_alpha", "seed", "n_resamples",
)
ALTERNATIVE = "greater"
#: Resampling tests draw their resamples in blocks of this many, so results do not depend on memory.
_RESAMPLE_BLOCK = 1000


# ----------------------------------------------------------------------------------------------------------
# the registry
# ----------------------------------------------------------------------------------------------------------
@dataclass
class OneSampleResult:
    """What a registered test returns for a ``(k, n)`` block of scores (one entry per row).

    Attributes
    ----------
    statistic, dof, p_unc, effect_size, ci_low : numpy.ndarray
        Shape ``(k,)``. ``dof`` is NaN where the test has none; ``ci_low`` is the one-sided lower
        confidence bound of the test's location parameter.
    effect_size_type : str
        For example ``"cohen_d"`` or ``"rank_biserial"``.
    note : list of str
        One note per row ("" for none).
    n_resamples : int or None
        Resamples drawn (resampling tests only; the number of sign patterns when enumerated exactly).
    """

    statistic: np.ndarray
    dof: np.ndarray
    p_unc: np.ndarray
    effect_size: np.ndarray
    effect_size_type: str
    ci_low: np.ndarray
    note: list[str] = field(default_factory=list)
    n_resamples: int | None = None


class OneSampleTest(Protocol):
    """Signature of a registered test: a ``(k, n)`` array without NaNs in, one result per row out."""

    def __call__(
        self, x: np.ndarray, *, tau: float, confidence: float, seed: int, n_resamples: int
    ) -> OneSampleResult: ...


#: name -> test function. Names are what protocols and the ``test`` column use.
ONE_SAMPLE_TESTS: dict[str, OneSampleTest] = {}
#: Tests whose result depends on ``seed`` and ``n_resamples``.
RESAMPLING_TESTS: set[str] = set()


def register_test(name: str, fn: OneSampleTest, *, resampling: bool = False, overwrite: bool = False) -> None:
    """Add a one-sample test under ``name``.

    Parameters
    ----------
    name : str
        The name protocols use (a valid identifier, e.g. ``"trimmed_t"``).
    fn : callable
        ``fn(x, *, tau, confidence, seed, n_resamples) -> OneSampleResult`` for a ``(k, n)`` float array
        ``x`` without NaNs; it tests ``H0: location <= tau`` against ``H1: location > tau`` row by row.
    resampling : bool
        Whether the result depends on ``seed`` and ``n_resamples`` (they are then recorded in the output).
    overwrite : bool
        Replace an existing test of that name instead of raising.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise HeadstatsError(f"a test name must be a valid identifier, got {name!r}")
    if not callable(fn):
        raise TypeError(f"test {name!r}: fn must be callable, got {type(fn).__name__}")
    if name in ONE_SAMPLE_TESTS and not overwrite:
        raise HeadstatsError(f"test {name!r} is already registered; pass overwrite=True to replace it")
    ONE_SAMPLE_TESTS[name] = fn
    if resampling:
        RESAMPLING_TESTS.add(name)
    else:
        RESAMPLING_TESTS.discard(name)


def list_tests() -> list[str]:
    """Names a protocol may give as ``test``."""
    return list(ONE_SAMPLE_TESTS)


def check_test(name: str) -> str:
    """Return ``name`` if it is a registered test, else raise an error that lists the known ones."""
    if name not in ONE_SAMPLE_TESTS:
        raise HeadstatsError(f"unknown test {name!r}; choose one of {', '.join(ONE_SAMPLE_TESTS)}")
    return name


# ----------------------------------------------------------------------------------------------------------
# helpers shared by the tests
# ----------------------------------------------------------------------------------------------------------
def _nan(k: int) -> np.ndarray:
    return np.full(k, np.nan)


def _t_parts(x: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Mean, sample sd (ddof=1) and the t statistic ``(mean - tau) / (sd / sqrt(n))`` of each row."""
    n = x.shape[1]
    mean = x.mean(axis=1)
    sd = x.std(axis=1, ddof=1) if n > 1 else _nan(x.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (mean - tau) / (sd / math.sqrt(n))
    return mean, sd, t, n


def _t_lower_bound(mean: np.ndarray, sd: np.ndarray, n: int, confidence: float) -> np.ndarray:
    """One-sided lower bound of the mean: ``mean - t_{confidence, n-1} * sd / sqrt(n)``."""
    if n < 2:
        return _nan(mean.shape[0])
    return mean - sps.t.ppf(confidence, n - 1) * sd / math.sqrt(n)


def _cohen_d(mean: np.ndarray, sd: np.ndarray, tau: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        d = (mean - tau) / sd
    return np.where(sd > 0, d, np.nan)


def _sd_notes(sd: np.ndarray) -> list[str]:
    return ["sd=0: all scores equal" if s == 0 else "" for s in sd]


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


# ----------------------------------------------------------------------------------------------------------
# the five tests
# ----------------------------------------------------------------------------------------------------------
def t_test(x: np.ndarray, *, tau: float, confidence: float, seed: int = 0, n_resamples: int = 0) -> OneSampleResult:
    r"""One-sample Student t-test of ``H0: mean <= tau``.

    .. math::
        t = \frac{\bar s - \tau}{s_{N-1} / \sqrt N}, \qquad p = P(T_{N-1} \ge t),

    with the sample standard deviation :math:`s_{N-1}` (ddof = 1; the published code of Pande et al. 2021
    used ddof = 0). Equals ``scipy.stats.ttest_1samp(s, tau, alternative="greater")``. The bound is
    :math:`\bar s - t_{c, N-1}\, s_{N-1} / \sqrt N` with c = ``confidence``; the effect size is Cohen's
    :math:`d = (\bar s - \tau) / s_{N-1}`.
    """
    mean, sd, t, n = _t_parts(x, tau)
    p = sps.t.sf(t, n - 1) if n > 1 else _nan(x.shape[0])
    return OneSampleResult(
        statistic=t, dof=np.full(x.shape[0], float(n - 1)), p_unc=np.asarray(p, dtype=float),
        effect_size=_cohen_d(mean, sd, tau), effect_size_type="cohen_d",
        ci_low=_t_lower_bound(mean, sd, n, confidence), note=_sd_notes(sd),
    )


def _wilcoxon_critical_rank(n: int, confidence: float) -> int:
    """Largest ``r`` with ``P(T+ <= r - 1) <= 1 - confidence`` under H0 (exact for n <= 50, else normal)."""
    a = 1 - confidence
    if n <= 50:
        # exact null distribution of T+ by counting subsets of {1..n} with each rank sum
        counts = np.zeros(n * (n + 1) // 2 + 1)
        counts[0] = 1.0
        for i in range(1, n + 1):
            counts[i:] = counts[i:] + counts[:-i].copy()
        cdf = np.cumsum(counts) / 2.0**n
        # P(T+ <= r - 1) <= a  <=>  cdf[r - 1] <= a
        ok = np.nonzero(cdf <= a + 1e-12)[0]
        return int(ok[-1]) + 1 if ok.size else 0
    mu = n * (n + 1) / 4
    sigma = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    # continuity-corrected: P(T+ <= r - 1) ~ Phi((r - 1 + 0.5 - mu) / sigma) <= a
    return int(math.floor(mu + 0.5 + sps.norm.ppf(a) * sigma))


def _walsh_lower_bound(x: np.ndarray, confidence: float) -> np.ndarray:
    """Lower bound of the pseudo-median by inverting the signed-rank test (Hodges-Lehmann / Walsh averages).

    With the ``M = n (n + 1) / 2`` Walsh averages ``(x_i + x_j) / 2, i <= j`` sorted, the bound is the
    ``r``-th smallest, ``r`` from :func:`_wilcoxon_critical_rank` (Hollander & Wolfe 1999, section 3.3).
    """
    k, n = x.shape
    r = _wilcoxon_critical_rank(n, confidence)
    if r < 1:
        return np.full(k, -np.inf)
    iu = np.triu_indices(n)
    out = np.empty(k)
    rows_per_chunk = max(1, 2_000_000 // max(1, iu[0].size))
    for start in range(0, k, rows_per_chunk):
        xs = x[start:start + rows_per_chunk]
        walsh = (xs[:, iu[0]] + xs[:, iu[1]]) / 2.0
        out[start:start + rows_per_chunk] = np.partition(walsh, r - 1, axis=1)[:, r - 1]
    return out


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
    confidence bound of the pseudo-median from the Walsh averages (see :func:`_walsh_lower_bound`).
    """
    k, n = x.shape
    d = x - tau
    nz = (d != 0).sum(axis=1)
    # rows with ties among the non-zero |d| or with zeros
    a = np.sort(np.abs(d), axis=1)
    tied = ((np.diff(a, axis=1) == 0) & (a[:, 1:] != 0)).any(axis=1) | (nz < n)
    stat = _nan(k)
    p = _nan(k)
    notes = [""] * k
    for mask in (tied & (nz > 0), ~tied & (nz > 0)):
        if not mask.any():
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = sps.wilcoxon(d[mask], alternative="greater", axis=1)
        stat[mask] = res.statistic
        p[mask] = res.pvalue
    if n > 50:
        how = "normal approximation"
    else:
        how = None
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
    total = nz * (nz + 1) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        rbc = np.where(total > 0, (2 * stat - total) / total, np.nan)
    return OneSampleResult(
        statistic=stat, dof=_nan(k), p_unc=p, effect_size=rbc, effect_size_type="rank_biserial",
        ci_low=_walsh_lower_bound(x, confidence), note=notes,
    )


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
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n_nz > 0, sps.binom.sf(above - 1, n_nz, 0.5), np.nan)
        g = np.where(n_nz > 0, above / n_nz - 0.5, np.nan)
    notes = [
        "all scores equal tau" if m == 0 else (f"{n - m} scores equal to tau dropped" if m < n else "")
        for m in n_nz
    ]
    return OneSampleResult(
        statistic=above.astype(float), dof=_nan(k), p_unc=p, effect_size=g, effect_size_type="cohen_g",
        ci_low=_order_statistic_lower_bound(x, confidence), note=notes,
    )


def bootstrap_test(
    x: np.ndarray, *, tau: float, confidence: float, seed: int = 0, n_resamples: int = 9999
) -> OneSampleResult:
    r"""Studentized (bootstrap-t) test of ``H0: mean <= tau``, seeded.

    The data are shifted to have mean exactly tau (``s - mean + tau``), which is the null; resampling the
    shifted data, the bootstrap t statistics are
    :math:`t^*_b = (\bar s^*_b - \bar s) / (s^*_b / \sqrt N)`, and
    :math:`p = (1 + \#\{t^*_b \ge t\}) / (B + 1)` with the observed :math:`t = (\bar s - \tau) / (s / \sqrt N)`
    (Efron & Tibshirani 1993, section 16.4; Hall 1992). The same resamples of input positions (sentences,
    ordered by ``sentence_id``) are used for every head with the same N, from ``numpy.random.default_rng(seed)``,
    so a head's result depends only on its scores, ``seed`` and ``n_resamples``. Bound: the bootstrap-t
    lower bound ``mean - q_confidence(t*) * sd / sqrt(N)``. Effect size: Cohen's d.
    """
    k, n = x.shape
    mean, sd, t, _ = _t_parts(x, tau)
    xc = x - mean[:, None]
    rng = np.random.default_rng(seed)
    tstar = np.empty((k, n_resamples))
    for start in range(0, n_resamples, _RESAMPLE_BLOCK):
        b = min(_RESAMPLE_BLOCK, n_resamples - start)
        idx = rng.integers(0, n, size=(b, n))
        w = np.bincount((np.arange(b)[:, None] * n + idx).ravel(), minlength=b * n).reshape(b, n)
        w = w.astype(float).T  # (n, b): how often each input is drawn in each resample
        m1 = xc @ w / n
        m2 = (xc * xc) @ w / n
        var = np.maximum(m2 - m1 * m1, 0.0) * n / (n - 1) if n > 1 else np.full_like(m1, np.nan)
        se = np.sqrt(var / n)
        with np.errstate(divide="ignore", invalid="ignore"):
            # a resample of identical values: t* is +-inf, or 0 when it equals the mean
            moved = np.abs(m1) > 1e-12 * (np.abs(mean)[:, None] + 1)
            ts = np.where(se > 0, m1 / se, np.where(moved, np.sign(m1) * np.inf, 0.0))
        tstar[:, start:start + b] = ts
    gamma = np.abs(np.finfo(float).eps * 100 * t)
    count = (tstar >= (t - gamma)[:, None]).sum(axis=1)
    p = (1.0 + count) / (n_resamples + 1.0)
    p = np.where(np.isnan(t), np.nan, p)
    q = np.quantile(tstar, confidence, axis=1)
    with np.errstate(invalid="ignore"):
        ci_low = mean - q * sd / math.sqrt(n)
    notes = [
        "; ".join(filter(None, [s, f"seed={seed}", f"bootstrap-t, B={n_resamples}"]))
        for s in _sd_notes(sd)
    ]
    return OneSampleResult(
        statistic=t, dof=_nan(k), p_unc=p, effect_size=_cohen_d(mean, sd, tau), effect_size_type="cohen_d",
        ci_low=ci_low, note=notes, n_resamples=n_resamples,
    )


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
    A sign-flip test does not invert cheaply, so the bound is the t-based lower bound of the mean (as for ``t``).
    Effect size: Cohen's d.
    """
    k, n = x.shape
    d = x - tau
    obs = d.mean(axis=1)
    exact = n < 63 and 2**n <= n_resamples
    rng = np.random.default_rng(seed)
    gamma = np.abs(np.finfo(float).eps * 100 * obs)
    count = np.zeros(k)
    if exact:
        total = 2**n
        for start in range(0, total, _RESAMPLE_BLOCK):
            codes = np.arange(start, min(start + _RESAMPLE_BLOCK, total))
            signs = 1.0 - 2.0 * ((codes[:, None] >> np.arange(n)[None, :]) & 1)
            null = d @ signs.T / n
            count += (null >= (obs - gamma)[:, None]).sum(axis=1)
        p = count / total
        drawn = total
    else:
        for start in range(0, n_resamples, _RESAMPLE_BLOCK):
            b = min(_RESAMPLE_BLOCK, n_resamples - start)
            signs = rng.choice(np.array([-1.0, 1.0]), size=(b, n))
            null = d @ signs.T / n
            count += (null >= (obs - gamma)[:, None]).sum(axis=1)
        p = (1.0 + count) / (n_resamples + 1.0)
        drawn = n_resamples
    mean, sd, _, _ = _t_parts(x, tau)
    how = f"exact: all 2^{n} sign flips" if exact else f"seed={seed}; sign flips, B={n_resamples}"
    notes = ["; ".join(filter(None, [s, how])) for s in _sd_notes(sd)]
    return OneSampleResult(
        statistic=obs, dof=_nan(k), p_unc=p, effect_size=_cohen_d(mean, sd, tau), effect_size_type="cohen_d",
        ci_low=_t_lower_bound(mean, sd, n, confidence), note=notes, n_resamples=drawn,
    )


register_test("t", t_test)
register_test("wilcoxon", wilcoxon_test)
register_test("sign", sign_test)
register_test("bootstrap", bootstrap_test, resampling=True)
register_test("permutation", permutation_test, resampling=True)


# ----------------------------------------------------------------------------------------------------------
# scores table -> matrix
# ----------------------------------------------------------------------------------------------------------
@dataclass
class ScoreMatrix:
    """The scores of all hypotheses, one row each, NaNs removed and packed to the left.

    Attributes
    ----------
    keys : pandas.DataFrame
        One row per hypothesis, columns :data:`HYPOTHESIS_KEYS`, sorted.
    values : numpy.ndarray
        ``(G, max_n)``; row g holds the ``n[g]`` participating scores of hypothesis g ordered by
        ``sentence_id``, then NaN.
    n, n_missing : numpy.ndarray
        Participating inputs and NaN scores (inputs that did not take part) per hypothesis.
    """

    keys: pd.DataFrame
    values: np.ndarray
    n: np.ndarray
    n_missing: np.ndarray

    def blocks(self, min_n: int = 1) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(rows, x)``: the hypotheses with the same n (>= ``min_n``) and their ``(k, n)`` scores."""
        for m in np.unique(self.n):
            if m < max(min_n, 1):
                continue
            rows = np.nonzero(self.n == m)[0]
            yield rows, self.values[rows, :m]

    def moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mean, sd (ddof = 1) and median of each hypothesis (NaN where undefined)."""
        g = self.values.shape[0]
        mean, sd, median = _nan(g), _nan(g), _nan(g)
        for rows, x in self.blocks():
            mean[rows] = x.mean(axis=1)
            median[rows] = np.median(x, axis=1)
            if x.shape[1] > 1:
                sd[rows] = x.std(axis=1, ddof=1)
        return mean, sd, median


def score_matrix(scores: pd.DataFrame) -> ScoreMatrix:
    """Validate a long scores table and pack it into a :class:`ScoreMatrix`.

    Raises
    ------
    HeadstatsError
        When a column is missing, ``score`` is not numeric or holds +-inf, or a (model, dataset,
        sentence_id, layer, head, role) appears twice.
    """
    if not isinstance(scores, pd.DataFrame):
        raise TypeError(f"scores must be a pandas DataFrame, got {type(scores).__name__}")
    missing = [c for c in SCORE_COLUMNS if c not in scores.columns]
    if missing:
        raise HeadstatsError(
            f"scores table lacks column(s) {', '.join(missing)}; it needs {', '.join(SCORE_COLUMNS)}"
        )
    try:
        score = scores["score"].to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise HeadstatsError(f"column 'score' must be numeric: {exc}") from None
    if np.isinf(score).any():
        raise HeadstatsError(
            f"column 'score' holds {int(np.isinf(score).sum())} infinite value(s); "
            "use NaN for an input that did not take part"
        )
    keys = list(HYPOTHESIS_KEYS)
    if len(scores) == 0:
        empty = pd.DataFrame({k: scores[k].iloc[:0] for k in keys})
        return ScoreMatrix(empty, np.empty((0, 0)), np.zeros(0, int), np.zeros(0, int))
    codes = []
    uniques = []
    for k in keys:
        c, u = pd.factorize(scores[k], sort=True, use_na_sentinel=False)
        codes.append(c)
        uniques.append(u)
    sid, _ = _factorize_sorted(scores["sentence_id"])
    # one integer per hypothesis, in sorted key order
    radix = np.ones(len(keys), dtype=np.int64)
    for i in range(len(keys) - 2, -1, -1):
        radix[i] = radix[i + 1] * len(uniques[i + 1])
    combined = sum(c.astype(np.int64) * r for c, r in zip(codes, radix, strict=True))
    hyp, gid = np.unique(combined, return_inverse=True)
    g = hyp.size
    order = np.lexsort((sid, gid))
    gid_s, sid_s = gid[order], sid[order]
    dup = (np.diff(gid_s) == 0) & (np.diff(sid_s) == 0)
    if dup.any():
        first = order[np.nonzero(dup)[0][0]]
        row = scores.iloc[first]
        raise HeadstatsError(
            "scores table has duplicate rows for one (model, dataset, sentence_id, layer, head, role), e.g. "
            + ", ".join(f"{c}={row[c]!r}" for c in SCORE_COLUMNS[:-1])
        )
    finite = ~np.isnan(score)
    n = np.bincount(gid[finite], minlength=g)
    n_missing = np.bincount(gid[~finite], minlength=g)
    keep = order[finite[order]]
    gk = gid[keep]
    starts = np.concatenate([[0], np.cumsum(n)[:-1]])
    pos = np.arange(keep.size) - starts[gk]
    values = np.full((g, int(n.max()) if g else 0), np.nan)
    values[gk, pos] = score[keep]
    key_cols = {}
    rem = hyp.copy()
    for k, u, r in zip(keys, uniques, radix, strict=True):
        key_cols[k] = u.take(rem // r) if hasattr(u, "take") else np.asarray(u)[rem // r]
        rem = rem % r
    key_frame = pd.DataFrame(key_cols)
    for k in keys:
        if scores[k].dtype != object and key_frame[k].dtype != scores[k].dtype:
            try:
                key_frame[k] = key_frame[k].astype(scores[k].dtype)
            except (TypeError, ValueError):
                pass
    return ScoreMatrix(key_frame, values, n.astype(int), n_missing.astype(int))


def _factorize_sorted(col: pd.Series) -> tuple[np.ndarray, object]:
    try:
        return pd.factorize(col, sort=True, use_na_sentinel=False)
    except TypeError:  # mixed types: order by their text
        return pd.factorize(col.astype(str), sort=True, use_na_sentinel=False)


# ----------------------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------------------
def _check_options(
    *, tau: float, alpha: float, confidence: float, min_n: int, n_resamples: int, seed: int,
    power_target: float = 0.8,
) -> None:
    if not isinstance(tau, (int, float, np.integer, np.floating)) or not np.isfinite(tau):
        raise HeadstatsError(f"tau must be a finite number, got {tau!r}")
    if not isinstance(alpha, (int, float, np.floating)) or not 0 < alpha < 1:
        raise HeadstatsError(f"alpha must be a number with 0 < alpha < 1, got {alpha!r}")
    if not isinstance(confidence, (int, float, np.floating)) or not 0 < confidence < 1:
        raise HeadstatsError(f"confidence must be a number with 0 < confidence < 1, got {confidence!r}")
    if not isinstance(power_target, (int, float, np.floating)) or not 0 < power_target < 1:
        raise HeadstatsError(f"power_target must be a number with 0 < power_target < 1, got {power_target!r}")
    if isinstance(min_n, bool) or not isinstance(min_n, (int, np.integer)) or min_n < 1:
        raise HeadstatsError(f"min_n must be an integer >= 1, got {min_n!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise HeadstatsError(f"n_resamples must be an integer >= 1, got {n_resamples!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise HeadstatsError(f"seed must be an integer >= 0, got {seed!r}")


def check_family(family: Sequence[str]) -> tuple[str, ...]:
    """Return ``family`` as a tuple if every entry names a hypothesis key, else raise with the allowed ones."""
    if isinstance(family, str):
        family = (family,)
    fam = tuple(family)
    bad = [f for f in fam if f not in HYPOTHESIS_KEYS]
    if bad or len(set(fam)) != len(fam):
        raise HeadstatsError(
            f"family must be distinct column names among {', '.join(HYPOTHESIS_KEYS)} (or empty for one "
            f"family of everything), got {fam!r}"
        )
    return fam


# ----------------------------------------------------------------------------------------------------------
# the pieces test_roles is made of
# ----------------------------------------------------------------------------------------------------------
def run_test(
    mat: ScoreMatrix, *, test: str, tau: float, confidence: float, seed: int, n_resamples: int, min_n: int
) -> pd.DataFrame:
    """Uncorrected results of one test for every hypothesis of ``mat`` (no correction, power or BF)."""
    check_test(test)
    fn = ONE_SAMPLE_TESTS[test]
    g = len(mat.n)
    mean, sd, median = mat.moments()
    out = {
        "statistic": _nan(g), "dof": _nan(g), "p_unc": _nan(g), "effect_size": _nan(g),
        "ci_low": _nan(g),
    }
    effect_type = np.full(g, "", dtype=object)
    notes = np.full(g, "", dtype=object)
    drawn = np.full(g, np.nan)
    for rows, x in mat.blocks(min_n=min_n):
        res = fn(x, tau=float(tau), confidence=float(confidence), seed=int(seed), n_resamples=int(n_resamples))
        for name in out:
            out[name][rows] = np.asarray(getattr(res, name), dtype=float)
        effect_type[rows] = res.effect_size_type
        if res.note:
            notes[rows] = res.note
        if res.n_resamples is not None:
            drawn[rows] = res.n_resamples
    small = mat.n < min_n
    for i in np.nonzero(small)[0]:
        notes[i] = f"n={mat.n[i]} < min_n={min_n}"
    frame = mat.keys.copy()
    frame.insert(len(frame.columns), "test", test)
    frame["n"] = mat.n
    frame["n_missing"] = mat.n_missing
    frame["mean"] = mean
    frame["sd"] = sd
    frame["median"] = median
    frame["tau"] = float(tau)
    for name in ("statistic", "dof"):
        frame[name] = out[name]
    frame["alternative"] = ALTERNATIVE
    frame["p_unc"] = out["p_unc"]
    frame["effect_size"] = out["effect_size"]
    frame["effect_size_type"] = effect_type
    frame["ci_low"] = out["ci_low"]
    frame["ci_high"] = np.inf
    frame["confidence"] = float(confidence)
    frame["note"] = notes
    resampling = test in RESAMPLING_TESTS
    frame["seed"] = pd.array([int(seed) if resampling and not s else pd.NA for s in small], dtype="Int64")
    frame["n_resamples"] = pd.array(
        [int(v) if resampling and np.isfinite(v) else pd.NA for v in drawn], dtype="Int64"
    )
    return frame


def family_labels(keys: pd.DataFrame, family: Sequence[str]) -> pd.Series:
    """A readable label per row, e.g. ``model=default|dataset=demo``; ``all`` for the empty family."""
    fam = check_family(family)
    if not fam:
        return pd.Series("all", index=keys.index, dtype=object)
    label = None
    for f in fam:
        part = f + "=" + keys[f].astype(str)
        label = part if label is None else label + "|" + part
    return label.astype(object)


def next_discovery_alpha(correction: str, alpha: float, m: int, n_rejected: int) -> float:
    r"""The uncorrected p-value below which one more hypothesis of a family would have been rejected.

    With m finite p-values and R rejections (``R' = min(R, m - 1)``): ``none`` alpha; ``bonferroni``
    alpha / m; ``holm`` alpha / (m - R'); ``fdr_bh`` alpha (R' + 1) / m; ``fdr_by``
    alpha (R' + 1) / (m c_m) with :math:`c_m = \sum_{i \le m} 1/i`. Used as the level of the power columns.
    """
    check_correction(correction)
    if m <= 0:
        return float("nan")
    r = min(n_rejected, m - 1)
    if correction == "none":
        return alpha
    if correction == "bonferroni":
        return alpha / m
    if correction == "holm":
        return alpha / (m - r)
    if correction == "fdr_bh":
        return alpha * (r + 1) / m
    if correction == "fdr_by":
        return alpha * (r + 1) / (m * float(np.sum(1.0 / np.arange(1, m + 1))))
    # a correction registered later without a rule: be conservative
    return alpha / m


def apply_correction(
    frame: pd.DataFrame, *, correction: str, family: Sequence[str], alpha: float
) -> pd.DataFrame:
    """Add ``p_corr, correction, family, alpha, reject, power_alpha`` to a :func:`run_test` frame.

    The correction runs within each family over the finite ``p_unc`` only; ``reject = p_corr < alpha``
    (False where NaN).
    """
    check_correction(correction)
    fam = check_family(family)
    out = frame.copy()
    labels = family_labels(out, fam)
    p = out["p_unc"].to_numpy(dtype=float)
    p_corr = np.full(p.shape, np.nan)
    power_alpha = np.full(p.shape, np.nan)
    codes, _ = pd.factorize(labels)
    for c in np.unique(codes):
        idx = np.nonzero(codes == c)[0]
        p_corr[idx] = correct_pvalues(p[idx], method=correction, alpha=alpha)
        m = int(np.isfinite(p[idx]).sum())
        r = int((p_corr[idx] < alpha).sum())
        power_alpha[idx] = next_discovery_alpha(correction, alpha, m, r)
    out["p_corr"] = p_corr
    out["correction"] = correction
    out["family"] = labels.to_numpy()
    out["alpha"] = float(alpha)
    with np.errstate(invalid="ignore"):
        out["reject"] = np.where(np.isfinite(p_corr), p_corr < alpha, False).astype(bool)
    out["power_alpha"] = power_alpha
    return out


def _note_resampling_floor(frame: pd.DataFrame, *, correction: str, alpha: float) -> None:
    """Note, in place, families where a resampling test cannot reach ``p_corr < alpha`` at all.

    A resampling p-value is at least ``1 / (B + 1)`` (or ``1 / 2^N`` when enumerated); in a family of m
    hypotheses Bonferroni and Holm then need ``B + 1 > m / alpha``.
    """
    p = frame["p_unc"].to_numpy(float)
    drawn = frame["n_resamples"].to_numpy(dtype=float, na_value=np.nan)
    exact = frame["note"].str.startswith("exact").to_numpy() | frame["note"].str.contains("; exact").to_numpy()
    floor = np.where(exact, 1.0 / np.maximum(drawn, 1), 1.0 / (drawn + 1.0))
    for label in pd.unique(frame["family"]):
        idx = np.nonzero((frame["family"] == label).to_numpy() & np.isfinite(p))[0]
        if idx.size == 0:
            continue
        trial = np.ones(idx.size)
        trial[0] = np.nanmin(floor[idx])
        best = correct_pvalues(trial, method=correction, alpha=alpha)[0]
        if best >= alpha:
            msg = (
                f"n_resamples too small for this family of {idx.size}: smallest attainable p_corr "
                f"{best:.3g} >= alpha"
            )
            frame.loc[frame.index[idx], "note"] = [f"{n}; {msg}" if n else msg for n in frame["note"].iloc[idx]]


# ----------------------------------------------------------------------------------------------------------
# the public entry point
# ----------------------------------------------------------------------------------------------------------
def test_roles(
    scores: pd.DataFrame,
    *,
    tau: float = 3.0,
    alpha: float = 0.05,
    test: str = "t",
    correction: str = "holm",
    family: Sequence[str] = ("model", "dataset"),
    confidence: float = 0.95,
    seed: int = 0,
    min_n: int = 2,
    n_resamples: int = 9999,
    power_target: float = 0.8,
) -> pd.DataFrame:
    r"""Test every (model, dataset, role, layer, head) for ``H0: location <= tau`` vs ``H1: > tau``.

    Parameters
    ----------
    scores : pandas.DataFrame
        Long table with columns ``model, dataset, sentence_id, layer, head, role, score``; a NaN score means
        that input did not take part for that role and is counted in ``n_missing``.
    tau : float
        The threshold of the sieve bias score (3 in Pande et al. 2021).
    alpha : float
        Level for ``reject = p_corr < alpha``; 0 < alpha < 1.
    test : str
        One of :func:`list_tests`: ``t`` (default), ``wilcoxon``, ``sign``, ``bootstrap``, ``permutation``.
    correction : str
        ``holm`` (default), ``bonferroni``, ``fdr_bh``, ``fdr_by`` or ``none`` (the paper's code).
    family : tuple of str
        Columns whose values define one family of the correction: ``("model", "dataset")`` (default, all
        heads x roles of one model on one data set), ``("model", "dataset", "role")``, ``("model",)``, or
        ``()`` for one family of everything.
    confidence : float
        Level of the one-sided lower bound ``ci_low`` (``ci_high`` is +inf); not adjusted for multiplicity.
    seed, n_resamples : int
        For ``bootstrap`` and ``permutation``; recorded in the columns ``seed`` and ``n_resamples``.
    min_n : int
        Hypotheses with fewer participating inputs get NaN statistic and p and a note; they stay in the table.
    power_target : float
        The power for which ``n_for_power`` is computed.

    Returns
    -------
    pandas.DataFrame
        One row per hypothesis with the columns of :data:`TEST_COLUMNS`, sorted by the keys.
        ``power`` is :math:`P(T_{n-1}(\delta) > t_{1-a', n-1})` with :math:`\delta = d\sqrt n`,
        :math:`d = (\bar s - \tau)/s`, at the level ``a' = power_alpha`` (see :func:`next_discovery_alpha`),
        for every test (the t approximation for the others); ``n_for_power`` the smallest n with power >=
        ``power_target`` at that d; ``bf10_two_sided`` the two-sided JZS Bayes factor (r = 0.707) of the
        t statistic (Rouder et al. 2009) -- not a one-sided quantity.

    Examples
    --------
    >>> from headstats.stats.simulation import planted_scores
    >>> t = test_roles(planted_scores(seed=1), tau=3.0)
    >>> list(t.columns[:5])
    ['model', 'dataset', 'role', 'layer', 'head']
    """
    check_test(test)
    check_correction(correction)
    fam = check_family(family)
    _check_options(
        tau=tau, alpha=alpha, confidence=confidence, min_n=min_n, n_resamples=n_resamples, seed=seed,
        power_target=power_target,
    )
    mat = score_matrix(scores)
    frame = run_test(
        mat, test=test, tau=tau, confidence=confidence, seed=seed, n_resamples=n_resamples, min_n=min_n
    )
    frame = apply_correction(frame, correction=correction, family=fam, alpha=alpha)
    if test in RESAMPLING_TESTS:
        _note_resampling_floor(frame, correction=correction, alpha=alpha)
    from headstats.stats.power import add_power  # local: power imports this module's constants

    frame = add_power(frame, power_target=power_target)
    return frame.loc[:, list(TEST_COLUMNS)].reset_index(drop=True)


# pytest would collect ``test_roles``/``t_test`` from modules that import them by name; say they are not tests.
test_roles.__test__ = False  # type: ignore[attr-defined]
t_test.__test__ = False  # type: ignore[attr-defined]
