"""The registry of one-sample tests: what a test is (:class:`OneSampleTestSpec`), the columns every test's
table has, and :data:`ONE_SAMPLE_TESTS` with :func:`register_test` and its friends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd

from headstats.errors import HeadstatsError
from headstats.registry import Registry

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
    n_resamples : int, numpy.ndarray or None
        Resamples drawn (resampling tests only; the number of sign patterns when enumerated exactly), one
        number for every row or one per row (a sequential run, where rows stop at different draws).
    """

    statistic: np.ndarray
    dof: np.ndarray
    p_unc: np.ndarray
    effect_size: np.ndarray
    effect_size_type: str
    ci_low: np.ndarray
    note: list[str] = field(default_factory=list)
    n_resamples: int | np.ndarray | None = None


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
    stream, stream_result, stream_bound : callable or None
        For a resampling test read sequentially (:mod:`~headstats.stats.onesample.sequential`):
        ``stream(x_sorted, taus, *, seed, n_resamples, confidence)`` its
        :class:`~headstats.stats.onesample.draws.NullStream`, ``stream_result(x_sorted, stream, *, tau,
        confidence, seed)`` the result from the draws taken, and ``stream_bound(x_sorted, q)`` the lower bound
        from the quantile ``q`` of the null statistics (None: the bound does not come from the draws).
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
    stream: Callable[..., object] | None = None
    stream_result: Callable[..., OneSampleResult] | None = None
    stream_bound: Callable[..., np.ndarray] | None = None

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
    stream: Callable[..., object] | None = None,
    stream_result: Callable[..., OneSampleResult] | None = None,
    stream_bound: Callable[..., np.ndarray] | None = None,
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
    stream, stream_result, stream_bound : callable, optional
        How a resampling test is read sequentially (see :class:`OneSampleTestSpec`); without ``stream`` it
        always draws ``n_resamples``.
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
                             p_from_moments, bound, efficiency, stream, stream_result, stream_bound)
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
