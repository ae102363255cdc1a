"""One-sided one-sample tests of functional roles, vectorised over heads (METHODS.md section 1.4).

For every hypothesis (model, dataset, role, layer, head) with the sieve bias scores ``s_1..s_N`` of the N
inputs that took part:

    H0: location <= tau        H1: location > tau        (one-sided, upper tail)

where the location is the mean (``t``, ``skew_t``, ``bootstrap``, ``permutation``), the pseudo-median (``wilcoxon``) or
the median (``sign``). The p-values are then corrected within each declared *family* with
:func:`headstats.stats.corrections.correct_within_families`, and a head is assigned the role when
``p_corr <= alpha``.

The scores come as a list of :class:`~headstats.measures.MeasureArray` or as the long scores table
(:mod:`headstats.stats.matrix` packs either into one hypotheses x inputs matrix). The scores of all
hypotheses that have the same number N of participating inputs form one ``(k, N)`` array, and every test is
a function of that array computed along ``axis=1``. A test is a :class:`OneSampleTestSpec` in
:data:`ONE_SAMPLE_TESTS` that carries its function, whether it resamples, the location it tests and the
effect size it reports; users add one with :func:`register_test`.
"""

from __future__ import annotations

import math
import warnings
from functools import partial
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd
from scipy import stats as sps

from headstats.errors import HeadstatsError
from headstats.registry import Registry
from headstats.stats import corrections as _corr
from headstats.stats.corrections import (
    check_correction,
    get_correction,
    correct_pvalues,
    correct_within_families,
    family_labels as _family_labels,
    next_discovery_alpha,
    reject,
)
from headstats.stats.effects import cohen_d, cohen_g, rank_biserial
from headstats.stats.matrix import (
    HYPOTHESIS_KEYS,
    SCORE_COLUMNS,
    ScoreMatrix,
    ScoresLike,
    by_tau,
    score_matrix,
    tau_rows,
)
from headstats.stats.power import add_power
from headstats.stats.ranks import (
    signed_rank_parts,
    signrank_critical_count,
    signrank_normal_sf,
    walsh_lower_bound,
)

__all__ = [
    "ALTERNATIVE", "HYPOTHESIS_KEYS", "ONE_SAMPLE_TESTS", "PARAMETERS", "SCORE_COLUMNS", "TEST_COLUMNS",
    "OneSampleResult", "OneSampleTestSpec", "ScoreMatrix", "apply_correction", "check_family", "check_test",
    "describe_tests", "family_labels", "get_test", "list_tests", "next_discovery_alpha", "register_test",
    "run_pvalues", "run_test", "score_matrix", "test_roles", "unregister_test",
]

#: The columns of :func:`test_roles`' output, in order; they never change with a parameter.
TEST_COLUMNS: tuple[str, ...] = (
    "model", "dataset", "role", "layer", "head", "test", "n", "n_missing", "mean", "sd", "median", "tau",
    "statistic", "dof", "alternative", "p_unc", "p_corr", "correction", "family", "alpha", "effect_size",
    "effect_size_type", "ci_low", "ci_high", "confidence", "reject", "power", "n_for_power",
    "bf10_two_sided", "note",
    # after the columns of the contract (issue 8): shape, multiplicity-adjusted bounds, design power, provenance
    "skewness", "ci_low_adj", "ci_high_adj", "confidence_adj", "effect_of_interest", "mde", "mde_score",
    "power_note", "power_alpha", "seed", "n_resamples",
)
ALTERNATIVE = "greater"
#: The locations a one-sample test may be about.
PARAMETERS: tuple[str, ...] = ("mean", "median", "pseudo-median")
#: Resampling tests draw their resamples in blocks of this many, so results do not depend on memory.
_RESAMPLE_BLOCK = 1000
#: scipy.stats.wilcoxon's method="auto" uses the normal approximation above this N.
_SCIPY_EXACT_MAX_N = 50
#: Scores ranked at once by the signed-rank test (bounds its memory).
_RANK_CHUNK = 2_000_000
#: ``n_resamples: auto`` draws at least this many resamples.
MIN_AUTO_RESAMPLES = 9999
#: ``n_resamples: auto`` makes the smallest attainable corrected p-value this many times smaller than alpha.
AUTO_RESAMPLES_MARGIN = 10


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


class PValues(Protocol):
    """Signature of a test's optional fast path: the p-values of a ``(k, n)`` array, nothing else."""

    def __call__(self, x: np.ndarray, *, tau: float, seed: int, n_resamples: int) -> np.ndarray: ...


@dataclass(frozen=True)
class OneSampleTestSpec:
    """A registered one-sample test and what it means.

    Attributes
    ----------
    name : str
        The name protocols and the ``test`` column use.
    fn : callable
        ``fn(x, *, tau, confidence, seed, n_resamples) -> OneSampleResult`` (see :class:`OneSampleTest`).
    resampling : bool
        Whether the result depends on ``seed`` and ``n_resamples`` (they are then recorded in the output).
    parameter : {"mean", "median", "pseudo-median"}
        The location that ``H0: location <= tau`` is about.
    effect_size : str
        The ``effect_size_type`` it reports (``cohen_d``, ``rank_biserial``, ``cohen_g``, ...).
    description : str
        One line for reports.
    p_values : callable or None
        ``p_values(x, *, tau, seed, n_resamples) -> p``: the p-values alone, skipping bounds and notes, for the
        tau grid and the robustness table; None: ``fn(...).p_unc``.
    p_from_moments : callable or None
        ``p_from_moments(mean, sd, n, tau) -> p``, broadcasting, for a test whose p-value depends on the
        scores only through their mean, sd (ddof = 1) and n: then every tau of the sensitivity grid and the
        robustness table come from the moments a study computes once.
    bound : callable or None
        ``bound(x, *, tau, confidence, seed, n_resamples) -> ci_low``: the lower bound alone (used for the
        multiplicity-adjusted bound ``ci_low_adj``); None: ``fn(...).ci_low``.
    efficiency : float or None
        Asymptotic relative efficiency against the one-sample t-test under normal scores (1 for the tests
        of the mean, 3/pi for the signed-rank and 2/pi for the sign test): the power columns use the t-test's
        power at N x efficiency. None: power not available for this test (NaN with a note).
    """

    name: str
    fn: OneSampleTest
    resampling: bool = False
    parameter: str = "mean"
    effect_size: str = ""
    description: str = ""
    p_values: PValues | None = None
    p_from_moments: Callable[..., np.ndarray] | None = None
    bound: Callable[..., np.ndarray] | None = None
    efficiency: float | None = None

    def lower_bound(self, x: np.ndarray, *, tau: float, confidence: float, seed: int, n_resamples: int) -> np.ndarray:
        """The one-sided lower bound ``ci_low`` of a ``(k, n)`` block at ``confidence``, by the fast path."""
        if self.bound is not None:
            return np.asarray(self.bound(x, tau=tau, confidence=confidence, seed=seed, n_resamples=n_resamples),
                              dtype=float)
        res = self.fn(x, tau=tau, confidence=confidence, seed=seed, n_resamples=n_resamples)
        return np.asarray(res.ci_low, dtype=float)

    def pvalues(self, x: np.ndarray, *, tau: float, confidence: float, seed: int, n_resamples: int) -> np.ndarray:
        """The p-values of a ``(k, n)`` block, through the fast path when there is one."""
        if self.p_values is not None:
            return np.asarray(self.p_values(x, tau=tau, seed=seed, n_resamples=n_resamples), dtype=float)
        res = self.fn(x, tau=tau, confidence=confidence, seed=seed, n_resamples=n_resamples)
        return np.asarray(res.p_unc, dtype=float)


#: name -> :class:`OneSampleTestSpec`. Names are what protocols and the ``test`` column use.
ONE_SAMPLE_TESTS: Registry[OneSampleTestSpec] = Registry(
    "test", hint="add one with headstats.stats.onesample.register_test"
)


def register_test(
    name: str,
    fn: OneSampleTest,
    *,
    resampling: bool = False,
    parameter: str = "mean",
    effect_size: str = "",
    description: str = "",
    p_values: PValues | None = None,
    p_from_moments: Callable[..., np.ndarray] | None = None,
    bound: Callable[..., np.ndarray] | None = None,
    efficiency: float | None = None,
    overwrite: bool = False,
) -> OneSampleTestSpec:
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
    parameter : {"mean", "median", "pseudo-median"}
        The location the test is about.
    effect_size : str
        The ``effect_size_type`` it reports.
    description : str
        One line for reports, e.g. "one-sample t-test (ddof = 1)".
    p_values, p_from_moments : callable, optional
        Faster ways to the p-values alone (see :class:`OneSampleTestSpec`).
    bound : callable, optional
        A faster way to the lower bound alone (see :class:`OneSampleTestSpec`).
    efficiency : float, optional
        Efficiency against the t-test for the power columns (see :class:`OneSampleTestSpec`); None: power
        is reported as not available.
    overwrite : bool
        Replace an existing test of that name instead of raising.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise HeadstatsError(f"a test name must be a valid identifier, got {name!r}")
    if not callable(fn):
        raise TypeError(f"test {name!r}: fn must be callable, got {type(fn).__name__}")
    if parameter not in PARAMETERS:
        raise HeadstatsError(f"test {name!r}: parameter must be one of {', '.join(PARAMETERS)}, got {parameter!r}")
    if name in ONE_SAMPLE_TESTS and not overwrite:
        raise HeadstatsError(f"test {name!r} is already registered; pass overwrite=True to replace it")
    spec = OneSampleTestSpec(name, fn, bool(resampling), parameter, effect_size, description, p_values,
                             p_from_moments, bound, efficiency)
    return ONE_SAMPLE_TESTS.register(name, spec, overwrite=overwrite)


def unregister_test(name: str) -> None:
    """Remove a registered test (unknown names raise :class:`~headstats.errors.UnknownNameError`)."""
    ONE_SAMPLE_TESTS.unregister(name)


def list_tests() -> list[str]:
    """Names a protocol may give as ``test``."""
    return ONE_SAMPLE_TESTS.names()


def get_test(name: str) -> OneSampleTestSpec:
    """The registered test called ``name``; unknown names raise ``UnknownNameError`` listing the valid ones."""
    return ONE_SAMPLE_TESTS.get(name)


def check_test(name: str) -> str:
    """Return ``name`` if it is a registered test, else raise ``UnknownNameError`` listing the known ones."""
    get_test(name)
    return name


def describe_tests() -> pd.DataFrame:
    """One row per registered test: ``test, parameter, effect_size, resampling, description``."""
    return pd.DataFrame(
        [(t.name, t.parameter, t.effect_size, t.resampling, t.description) for _, t in ONE_SAMPLE_TESTS.items()],
        columns=["test", "parameter", "effect_size", "resampling", "description"],
    )


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
    return [SD0_NOTE if s == 0 else "" for s in sd]


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


#: Bytes of bootstrap t* kept at once (rows of heads are processed in chunks below this).
_TSTAR_BYTES = 2**28


def _bootstrap_index_blocks(n: int, total: int, exact: bool, seed: int):
    """Blocks of resampled input positions, ``(b, n)`` each: all ``n^n`` tuples in order when ``exact``, else
    ``total`` draws from ``numpy.random.default_rng(seed)`` (the same draws on every call)."""
    rng = np.random.default_rng(seed)
    for start in range(0, total, _RESAMPLE_BLOCK):
        b = min(_RESAMPLE_BLOCK, total - start)
        if exact:
            codes = np.arange(start, start + b)[:, None]
            yield (codes // (n ** np.arange(n))[None, :]) % n
        else:
            yield rng.integers(0, n, size=(b, n))


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
    ``n_resamples`` -- never on how inputs are ordered or on the type of ``sentence_id``.

    Small N: when :math:`N^N \le` ``n_resamples`` (N <= 4 at any B >= 256, N = 5 from B = 3125) all
    :math:`N^N` equally likely resamples are enumerated and :math:`p = \#\{t^* \ge t\} / N^N` exactly (the
    complete bootstrap distribution, no seed; note "exact"). That distribution is coarse -- at N = 2 its
    smallest p is 1/4, at N = 3 4/27, at N = 4 about 0.07 -- so the bootstrap cannot assign a role below
    N = 5 at alpha = 0.05; the p-value is defined and reproducible rather than a draw of a few hundred
    distinct values. All scores equal (sd = 0): p NaN (the rule of every test of the mean).
    """
    k, n = x.shape
    x = np.sort(x, axis=1)
    mean, sd, t, _ = _t_parts(x, tau)
    xc = x - mean[:, None]
    exact = n <= 12 and n**n <= n_resamples
    total = n**n if exact else int(n_resamples)
    count = np.zeros(k)
    q = np.full(k, np.nan)
    gamma = np.abs(np.finfo(float).eps * 100 * t)
    chunk = max(1, _TSTAR_BYTES // (8 * total))
    for r0 in range(0, k, chunk):
        rows = slice(r0, min(k, r0 + chunk))
        xr = xc[rows]
        tstar = np.empty((xr.shape[0], total))
        done = 0
        for idx in _bootstrap_index_blocks(n, total, exact, seed):
            b = idx.shape[0]
            w = np.bincount((np.arange(b)[:, None] * n + idx).ravel(), minlength=b * n).reshape(b, n)
            w = w.astype(float).T  # (n, b): how often each input is drawn in each resample
            m1 = xr @ w / n
            m2 = (xr * xr) @ w / n
            var = np.maximum(m2 - m1 * m1, 0.0) * n / (n - 1) if n > 1 else np.full_like(m1, np.nan)
            se = np.sqrt(var / n)
            with np.errstate(divide="ignore", invalid="ignore"):
                moved = np.abs(m1) > 1e-12 * (np.abs(mean[rows])[:, None] + 1)
                tstar[:, done:done + b] = np.where(se > 0, m1 / se, np.where(moved, np.sign(m1) * np.inf, 0.0))
            done += b
        count[rows] = (tstar >= (t[rows] - gamma[rows])[:, None]).sum(axis=1)
        with np.errstate(invalid="ignore"):  # interpolating towards an infinite t*: no finite bound
            q[rows] = np.nan_to_num(np.quantile(tstar, confidence, axis=1), nan=np.inf)
    p = count / total if exact else (1.0 + count) / (total + 1.0)
    p = np.where(np.isnan(t), np.nan, p)
    with np.errstate(invalid="ignore"):
        ci_low = np.where(sd > 0, mean - q * sd / math.sqrt(n), np.nan)
    how = f"exact: all {n}^{n} bootstrap resamples" if exact else f"seed={seed}; bootstrap-t, B={n_resamples}"
    notes = ["; ".join(filter(None, [s, how])) for s in _sd_notes(sd)]
    return OneSampleResult(
        statistic=t, dof=_nan(k), p_unc=p, effect_size=cohen_d(mean, sd, tau), effect_size_type="cohen_d",
        ci_low=ci_low, note=notes, n_resamples=total,
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
    Each head's ``d`` is sorted first, so the result does not depend on how inputs are ordered (or on the
    type of ``sentence_id``). All scores equal (sd = 0): p NaN, the rule of every test of the mean.
    A sign-flip test does not invert cheaply, so the bound is the t-based lower bound of the mean (as for ``t``).
    Effect size: Cohen's d.
    """
    k, n = x.shape
    x = np.sort(x, axis=1)
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
    p = np.where(sd > 0, p, np.nan)
    how = f"exact: all 2^{n} sign flips" if exact else f"seed={seed}; sign flips, B={n_resamples}"
    notes = ["; ".join(filter(None, [s, how])) for s in _sd_notes(sd)]
    return OneSampleResult(
        statistic=obs, dof=_nan(k), p_unc=p, effect_size=cohen_d(mean, sd, tau), effect_size_type="cohen_d",
        ci_low=_t_lower_bound(mean, sd, n, confidence), note=notes, n_resamples=drawn,
    )


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
              efficiency=1.0, description="studentized bootstrap test of the mean")
register_test("permutation", permutation_test, resampling=True, parameter="mean", effect_size="cohen_d",
              bound=_t_bound, efficiency=1.0, description="sign-flip permutation test")
register_test("skew_t", skew_t_test, parameter="mean", effect_size="cohen_d", p_values=skew_t_pvalues,
              bound=lambda x, **kw: skew_t_test(x, **kw).ci_low, efficiency=1.0,
              description="skewness-corrected t-test (Johnson 1978; Hall 1992)")
register_test("t_ddof0", partial(t_test, ddof=0), parameter="mean", effect_size="cohen_d",
              p_values=partial(t_pvalues, ddof=0), p_from_moments=t_ddof0_p_from_moments,
              bound=partial(_t_bound, ddof=0), efficiency=1.0,
              description="one-sample t-test with the sd of ddof = 0 (the published code of Pande et al. 2021)")


# ----------------------------------------------------------------------------------------------------------
# how many resamples a family needs
# ----------------------------------------------------------------------------------------------------------
def _correction_factor(m: int, correction: str) -> float:
    """``f`` such that one p-value ``p`` among m (the others 1) is corrected to ``f * p`` for small p.

    ``m`` for Bonferroni, Holm and Benjamini-Hochberg, ``m * sum(1/i)`` for Benjamini-Yekutieli, 1 for
    ``none``; a registered correction is asked (:func:`correct_pvalues` at p = 1e-12).
    """
    if m <= 0:
        return 1.0
    p0 = 1e-12
    trial = np.ones(int(m))
    trial[0] = p0
    return float(correct_pvalues(trial, method=correction, alpha=0.05)[0]) / p0


def resamples_needed(m: int, *, alpha: float, correction: str) -> int:
    r"""The fewest resamples B with which a resampling test can reject at all in a family of m.

    A Monte Carlo p-value is at least :math:`1 / (B + 1)`; the correction turns it into at least
    :math:`f / (B + 1)` (:math:`f = m` for Holm, Bonferroni and Benjamini-Hochberg, :math:`m c_m` for
    Benjamini-Yekutieli), and a head is assigned when that is ``<= alpha``: :math:`B + 1 \ge f / \alpha`.
    """
    f = _correction_factor(m, correction)
    b = max(1, math.ceil(f / alpha - 1e-9) - 1)
    while correct_pvalues(np.r_[1.0 / (b + 1), np.ones(max(int(m) - 1, 0))], method=correction)[0] > alpha:
        b += 1
    return int(b)


def auto_resamples(m: int, *, alpha: float, correction: str) -> int:
    r"""``n_resamples: auto``: enough resamples that a decision is possible with room to spare.

    :math:`B = \max(9999, \lceil 10 f / \alpha \rceil - 1)`: the smallest attainable corrected p-value is
    alpha / 10 (:data:`AUTO_RESAMPLES_MARGIN`), so a head whose exact p-value lies at half the corrected
    level is still assigned with probability about 0.97 (Poisson(5) <= 9) despite the Monte Carlo error.
    With Holm over the 720 hypotheses of the quickstart at alpha = 0.05 this is 143,999.
    """
    f = _correction_factor(m, correction)
    return int(max(MIN_AUTO_RESAMPLES, math.ceil(AUTO_RESAMPLES_MARGIN * f / alpha) - 1))


def family_sizes(mat: ScoreMatrix, family: Sequence[str], *, min_n: int = 2) -> pd.Series:
    """Hypotheses with a p-value (n >= ``min_n``) per family label of ``mat``."""
    labels = family_labels(mat.keys, family)
    return labels[mat.n >= max(min_n, 1)].value_counts()


def resolve_n_resamples(
    n_resamples, mat: ScoreMatrix, *, family: Sequence[str], alpha: float, correction: str, min_n: int = 2
) -> int:
    """``n_resamples`` as a number: ``auto`` becomes :func:`auto_resamples` of the largest family."""
    if isinstance(n_resamples, str):
        if n_resamples != "auto":
            raise HeadstatsError(f"n_resamples must be an integer >= 1 or 'auto', got {n_resamples!r}")
        sizes = family_sizes(mat, family, min_n=min_n)
        m = int(sizes.max()) if len(sizes) else 1
        return auto_resamples(m, alpha=alpha, correction=correction)
    return n_resamples


# ----------------------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------------------
def _check_options(
    *, tau: float, alpha: float, confidence: float, min_n: int, n_resamples: int, seed: int,
    power_target: float = 0.8, effect_of_interest: float = 0.5,
) -> None:
    if not isinstance(tau, (int, float, np.integer, np.floating)) or not np.isfinite(tau):
        raise HeadstatsError(f"tau must be a finite number, got {tau!r}")
    if not isinstance(alpha, (int, float, np.floating)) or not 0 < alpha < 1:
        raise HeadstatsError(f"alpha must be a number with 0 < alpha < 1, got {alpha!r}")
    if not isinstance(confidence, (int, float, np.floating)) or not 0 < confidence < 1:
        raise HeadstatsError(f"confidence must be a number with 0 < confidence < 1, got {confidence!r}")
    if not isinstance(power_target, (int, float, np.floating)) or not 0 < power_target < 1:
        raise HeadstatsError(f"power_target must be a number with 0 < power_target < 1, got {power_target!r}")
    if (isinstance(effect_of_interest, bool) or not isinstance(effect_of_interest, (int, float, np.number))
            or not np.isfinite(effect_of_interest) or effect_of_interest <= 0):
        raise HeadstatsError(f"effect_of_interest must be a finite number > 0 (a standardised effect), "
                             f"got {effect_of_interest!r}")
    if isinstance(min_n, bool) or not isinstance(min_n, (int, np.integer)) or min_n < 1:
        raise HeadstatsError(f"min_n must be an integer >= 1, got {min_n!r}")
    if not (isinstance(n_resamples, str) and n_resamples == "auto") and (
        isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1
    ):
        raise HeadstatsError(f"n_resamples must be an integer >= 1 or 'auto', got {n_resamples!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise HeadstatsError(f"seed must be an integer >= 0, got {seed!r}")


def check_family(family: Sequence[str]) -> tuple[str, ...]:
    """Return ``family`` as a tuple if every entry names a hypothesis key, else raise with the allowed ones."""
    return _corr.check_family(family, HYPOTHESIS_KEYS)


def family_labels(keys: pd.DataFrame, family: Sequence[str]) -> pd.Series:
    """A readable label per row, e.g. ``model=default|dataset=demo``; ``all`` for the empty family."""
    return _family_labels(keys, check_family(family))


# ----------------------------------------------------------------------------------------------------------
# the pieces test_roles is made of
# ----------------------------------------------------------------------------------------------------------
def run_pvalues(
    mat: ScoreMatrix, *, test: str, tau: float, confidence: float = 0.95, seed: int = 0,
    n_resamples: int = 9999, min_n: int = 2,
) -> np.ndarray:
    """Uncorrected p-values of one test for every hypothesis of ``mat`` (NaN below ``min_n``), nothing else.

    Equal to ``run_test(...)["p_unc"]``; through the test's fast path (no bounds, effect sizes or notes),
    from the matrix' moments when the test allows it. ``tau`` may be one per hypothesis (an array, or a
    mapping ``role -> tau``: :func:`headstats.stats.matrix.tau_rows`).
    """
    tau = tau_rows(mat.keys, tau)
    if np.ndim(tau):
        p = _nan(len(mat.n))
        for value, rows in by_tau(np.asarray(tau, dtype=float)):
            p[rows] = run_pvalues(mat.take(rows), test=test, tau=value, confidence=confidence, seed=seed,
                                  n_resamples=n_resamples, min_n=min_n)
        return p
    spec = get_test(test)
    p = _nan(len(mat.n))
    if spec.p_from_moments is not None:
        mean, sd, _ = mat.moments()
        rows = mat.n >= max(min_n, 1)
        p[rows] = spec.p_from_moments(mean[rows], sd[rows], mat.n[rows], float(tau))
        return p
    for rows, x in mat.blocks(min_n=min_n):
        p[rows] = spec.pvalues(x, tau=float(tau), confidence=float(confidence), seed=int(seed),
                               n_resamples=int(n_resamples))
    return p


def _skewness(x: np.ndarray) -> np.ndarray:
    r"""Sample skewness of each row, :math:`G_1 = \frac{\sqrt{N(N-1)}}{N-2} \frac{m_3}{m_2^{3/2}}`
    (``scipy.stats.skew(bias=False)``, pandas' ``skew``); NaN for N < 3 or all scores equal."""
    k, n = x.shape
    if n < 3:
        return _nan(k)
    d = x - x.mean(axis=1, keepdims=True)
    d2 = d * d
    m2 = d2.sum(axis=1) / n
    m3 = np.einsum("ij,ij->i", d2, d) / n
    with np.errstate(all="ignore"):
        g1 = m3 / m2**1.5
        return np.where(m2 > 0, math.sqrt(n * (n - 1.0)) / (n - 2.0) * g1, np.nan)


def run_test(
    mat: ScoreMatrix, *, test: str, tau: float, confidence: float, seed: int, n_resamples: int, min_n: int
) -> pd.DataFrame:
    """Uncorrected results of one test for every hypothesis of ``mat`` (no correction, power or BF); ``tau``
    one number, or one per hypothesis (as in :func:`run_pvalues`)."""
    tau = tau_rows(mat.keys, tau)
    if np.ndim(tau):
        frames, order = [], []
        for value, rows in by_tau(np.asarray(tau, dtype=float)):
            frames.append(run_test(mat.take(rows), test=test, tau=value, confidence=confidence, seed=seed,
                                   n_resamples=n_resamples, min_n=min_n))
            order.append(rows)
        frame = pd.concat(frames, ignore_index=True)
        return frame.iloc[np.argsort(np.concatenate(order), kind="stable")].reset_index(drop=True)
    spec = get_test(test)
    fn = spec.fn
    g = len(mat.n)
    mean, sd, median = mat.moments()
    out = {
        "statistic": _nan(g), "dof": _nan(g), "p_unc": _nan(g), "effect_size": _nan(g),
        "ci_low": _nan(g),
    }
    effect_type = np.full(g, "", dtype=object)
    notes = np.full(g, "", dtype=object)
    drawn = np.full(g, np.nan)
    skewness = _nan(g)
    for rows, x in mat.blocks(min_n=min_n):
        skewness[rows] = _skewness(x)
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
    frame["skewness"] = skewness
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
    resampling = spec.resampling
    frame["seed"] = pd.array([int(seed) if resampling and not s else pd.NA for s in small], dtype="Int64")
    frame["n_resamples"] = pd.array(
        [int(v) if resampling and np.isfinite(v) else pd.NA for v in drawn], dtype="Int64"
    )
    return frame


def apply_correction(
    frame: pd.DataFrame, *, correction: str, family: Sequence[str], alpha: float
) -> pd.DataFrame:
    """Add ``p_corr, correction, family, alpha, reject, power_alpha`` to a :func:`run_test` frame.

    The correction runs within each family over the finite ``p_unc`` only; ``reject = p_corr <= alpha``
    (False where NaN); ``power_alpha`` is the level for one more rejection (:func:`next_discovery_alpha`).
    """
    check_correction(correction)
    out = frame.copy()
    labels = family_labels(out, family)
    p_corr, power_alpha = correct_within_families(
        out["p_unc"].to_numpy(dtype=float), labels.to_numpy(), correction=correction, alpha=alpha
    )
    out["p_corr"] = p_corr
    out["correction"] = correction
    out["family"] = labels.to_numpy()
    out["alpha"] = float(alpha)
    out["reject"] = reject(p_corr, alpha)
    out["power_alpha"] = power_alpha
    return out


def adjusted_confidence(frame: pd.DataFrame, *, correction: str, confidence: float) -> np.ndarray:
    r"""The level of the multiplicity-adjusted bound ``ci_low_adj`` of each row of a corrected frame.

    Within each family of m hypotheses with a p-value, R of them rejected, and :math:`q = 1 -` confidence:

    * FWER corrections (``holm``, ``bonferroni``): :math:`1 - q / m` for every row -- Bonferroni-adjusted
      bounds, which hold simultaneously for the whole family with probability at least :math:`1 - q`;
    * ``fdr_bh``: :math:`1 - R q / m` for the R rejected rows, NaN for the others -- the false-coverage-rate
      adjusted bounds of Benjamini & Yekutieli (2005), whose expected share of non-covering bounds among the
      selected hypotheses is at most q for independent or positively dependent statistics; meant for the
      selected hypotheses only;
    * ``fdr_by``: :math:`1 - R q / (m c_m)` with :math:`c_m = \sum_{i \le m} 1/i`, the level under arbitrary
      dependence (Benjamini & Yekutieli 2005, Theorem 4), the case BY is chosen for;
    * ``none``: the marginal level.
    """
    kind = get_correction(correction).kind
    p = frame["p_unc"].to_numpy(float)
    rejected = frame["reject"].to_numpy(bool)
    codes, _ = pd.factorize(frame["family"].to_numpy(dtype=object))
    q = 1.0 - float(confidence)
    out = _nan(len(frame))
    for c in np.unique(codes):
        idx = (codes == c) & np.isfinite(p)
        m = int(idx.sum())
        if m == 0:
            continue
        if kind == "fwer":
            out[idx] = 1.0 - q / m
        elif kind == "fdr":
            r = int((idx & rejected).sum())
            c_m = float(np.sum(1.0 / np.arange(1, m + 1))) if correction == "fdr_by" else 1.0
            if r:
                out[idx & rejected] = 1.0 - r * q / (m * c_m)
        else:
            out[idx] = float(confidence)
    return out


def add_adjusted_bounds(
    frame: pd.DataFrame, mat: ScoreMatrix, *, test: str, tau, correction: str, confidence: float,
    seed: int, n_resamples: int, min_n: int,
) -> pd.DataFrame:
    """Add ``ci_low_adj, ci_high_adj, confidence_adj`` (:func:`adjusted_confidence`) to a corrected frame.

    The bound is the test's own lower bound (``ci_low``) at the adjusted level, row by row; ``ci_high_adj``
    is +inf where the bound is defined (one-sided), NaN where it is not (e.g. not selected under an FDR
    correction).
    """
    spec = get_test(test)
    out = frame.copy()
    level = adjusted_confidence(out, correction=correction, confidence=confidence)
    taus = np.broadcast_to(np.asarray(tau_rows(mat.keys, tau), dtype=float), (len(out),))
    low = _nan(len(out))
    for value in np.unique(level[np.isfinite(level)]):
        for rows, x in mat.blocks(min_n=min_n):
            for row_tau in np.unique(taus[rows]):
                sel = (level[rows] == value) & (taus[rows] == row_tau)
                if sel.any():
                    low[rows[sel]] = spec.lower_bound(x[sel], tau=float(row_tau), confidence=float(value),
                                                      seed=int(seed), n_resamples=int(n_resamples))
    out["ci_low_adj"] = low
    out["ci_high_adj"] = np.where(np.isfinite(level), np.inf, np.nan)
    out["confidence_adj"] = level
    return out


def _note_resampling_floor(frame: pd.DataFrame, *, correction: str, alpha: float) -> None:
    """Note, in place, families where a resampling test cannot reach ``p_corr <= alpha`` at all.

    A resampling p-value is at least ``1 / (B + 1)`` (or ``1 / 2^N`` when enumerated); in a family of m
    hypotheses Bonferroni and Holm then need ``B + 1 >= m / alpha`` (:func:`resamples_needed`).
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
        if best > alpha:
            msg = (
                f"n_resamples too small for this family of {idx.size}: smallest attainable p_corr "
                f"{best:.3g} > alpha"
            )
            frame.loc[frame.index[idx], "note"] = [f"{n}; {msg}" if n else msg for n in frame["note"].iloc[idx]]


# ----------------------------------------------------------------------------------------------------------
# the public entry point
# ----------------------------------------------------------------------------------------------------------
def test_roles(
    scores: ScoresLike,
    *,
    tau: float = 3.0,
    alpha: float = 0.05,
    test: str = "t",
    correction: str = "holm",
    family: Sequence[str] = ("model", "dataset"),
    confidence: float = 0.95,
    seed: int = 0,
    min_n: int = 2,
    n_resamples: int | str = "auto",
    power_target: float = 0.8,
    effect_of_interest: float = 0.5,
) -> pd.DataFrame:
    r"""Test every (model, dataset, role, layer, head) for ``H0: location <= tau`` vs ``H1: > tau``.

    Parameters
    ----------
    scores : list of MeasureArray, pandas.DataFrame or ScoreMatrix
        One :class:`~headstats.measures.MeasureArray` per model and data set (``(inputs, layers, heads,
        roles)``), or the long table with columns ``model, dataset, sentence_id, layer, head, role, score``,
        or a :class:`~headstats.stats.matrix.ScoreMatrix` of either; a NaN score means that input did not
        take part for that role and is counted in ``n_missing``. All forms give the same table.
    tau : float or mapping
        The threshold of the sieve bias score (3 in Pande et al. 2021), or one per role
        (``{"default": 3.0, "block": 1.5}``); recorded per row in the ``tau`` column.
    alpha : float
        Level for ``reject = p_corr <= alpha``; 0 < alpha < 1.
    test : str
        One of :func:`list_tests`: ``t`` (default), ``wilcoxon``, ``sign``, ``bootstrap``, ``permutation``,
        or a registered test.
    correction : str
        ``holm`` (default), ``bonferroni``, ``fdr_bh``, ``fdr_by``, ``none`` (the paper's code), or a
        registered correction (:func:`headstats.stats.corrections.register_correction`).
    family : tuple of str
        Columns whose values define one family of the correction: ``("model", "dataset")`` (default, all
        heads x roles of one model on one data set), ``("model", "dataset", "role")``, ``("model",)``, or
        ``()`` for one family of everything.
    confidence : float
        Level of the one-sided lower bound ``ci_low`` (``ci_high`` is +inf), marginal; ``ci_low_adj`` is the
        same bound adjusted to the correction.
    seed : int
        For ``bootstrap`` and ``permutation``; recorded in the column ``seed``.
    n_resamples : int or "auto"
        Resamples of ``bootstrap`` and ``permutation`` (recorded in the column ``n_resamples``). ``auto``
        (default) takes :func:`auto_resamples` of the largest family, so that the smallest attainable
        corrected p-value is alpha / 10; a number too small for any head to be assigned is kept, and every
        row of such a family says so in ``note`` (``headstats run`` refuses it before loading a model).
    min_n : int
        Hypotheses with fewer participating inputs get NaN statistic and p and a note; they stay in the table.
    power_target : float
        The power of ``mde`` and ``n_for_power``.
    effect_of_interest : float
        The standardised effect (location - tau) / sd at which ``power`` and ``n_for_power`` are computed.

    Returns
    -------
    pandas.DataFrame
        One row per hypothesis with the columns of :data:`TEST_COLUMNS`, sorted by the keys.
        ``reject = p_corr <= alpha`` (as statsmodels). ``ci_low`` is the marginal bound at ``confidence``,
        ``ci_low_adj`` the bound at the level adjusted to the correction (:func:`adjusted_confidence`).
        The power columns are design power (:mod:`headstats.stats.power`): ``mde`` the standardised effect
        detected with ``power_target`` at the head's n and the level ``power_alpha``
        (:func:`next_discovery_alpha`), ``power`` and ``n_for_power`` at ``effect_of_interest``; never the
        power at the observed effect. ``bf10_two_sided`` is the two-sided JZS Bayes factor (r = 0.707) of
        the t statistic (Rouder et al. 2009) -- not a one-sided quantity.

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
    for value in (tau.values() if isinstance(tau, Mapping) else [tau]):
        _check_options(
            tau=value, alpha=alpha, confidence=confidence, min_n=min_n, n_resamples=n_resamples, seed=seed,
            power_target=power_target, effect_of_interest=effect_of_interest,
        )
    mat = score_matrix(scores)
    if get_test(test).resampling:
        n_resamples = resolve_n_resamples(n_resamples, mat, family=fam, alpha=alpha, correction=correction,
                                          min_n=min_n)
    else:
        n_resamples = MIN_AUTO_RESAMPLES if n_resamples == "auto" else n_resamples
    frame = run_test(
        mat, test=test, tau=tau, confidence=confidence, seed=seed, n_resamples=n_resamples, min_n=min_n
    )
    frame = apply_correction(frame, correction=correction, family=fam, alpha=alpha)
    if get_test(test).resampling:
        _note_resampling_floor(frame, correction=correction, alpha=alpha)
    frame = add_adjusted_bounds(frame, mat, test=test, tau=tau, correction=correction, confidence=confidence,
                                seed=seed, n_resamples=n_resamples, min_n=min_n)
    frame = add_power(frame, power_target=power_target, effect_of_interest=effect_of_interest)
    return frame.loc[:, list(TEST_COLUMNS)].reset_index(drop=True)


# pytest would collect ``test_roles``/``t_test`` from modules that import them by name; say they are not tests.
test_roles.__test__ = False  # type: ignore[attr-defined]
t_test.__test__ = False  # type: ignore[attr-defined]
