r"""Fine-tuning seeds as replicates: is a head's change beyond what any fine-tuning run changes by chance?

Two deterministic models differ on almost every input, so a paired test over inputs
(:mod:`headstats.stats.paired`) finds "significant" changes in nearly every head once a few hundred inputs
are paired. The question a paper asks is whether *fine-tuning on this task* moves a head, and the unit of
replication for that is the fine-tuning run. With k runs of one recipe that differ only in their seed, and
the same n inputs through the base model and every run, the change of run s in one cell (role, layer, head) is

    m_s = mean_i [ s_i(run s) - s_i(base) ]        (the paired per-input change, averaged over the inputs)

and the k values ``m_1..m_k`` are the replicates (the inputs are held fixed: the interval is about these
inputs; the per-input tests remain the detail table). Every function here works column-wise on a (k, m)
array of such values, one column per cell, NaN where a run has no value for a cell (no participating
input); it is the statistics layer: arrays in, arrays and tables out.

- :func:`t_over_seeds`: the mean change over seeds, its t interval (``mean +- t_{1-a/2, k-1} sd / sqrt(k)``,
  sd with ddof = 1) and the one-sample t-test of H0: mean change = ``mu`` with k - 1 degrees of freedom,
  exactly ``scipy.stats.ttest_1samp(m, mu, alternative=...)``. In a balanced design this is the test of the
  fixed intercept of the mixed model ``d_si = mu + u_s + e_si`` (seed as a random effect) with its exact
  degrees of freedom (see ``docs/statistics.md``, where a simulation compares it with statsmodels' MixedLM).
- :func:`moderated_t_over_seeds`: the empirical-Bayes moderated t of limma (Smyth 2004): each cell's
  seed-to-seed variance is shrunk toward a scaled inverse-chi-square prior fitted over all cells
  (:func:`fit_variance_prior`), and the t-test uses the posterior variance with ``d0 + k - 1`` degrees of
  freedom. The per-cell test over few seeds (it borrows strength across the cells; sd = 0 stays finite).
- :func:`signflip_over_seeds`: the exact sign-flip permutation test of the same hypothesis (all ``2^k``
  sign patterns), free of the normality assumption; its smallest possible p-value is ``2 / 2^k`` two-sided
  (``1 / 2^k`` one-sided), so with few seeds it can never reject at a corrected level
  (:func:`seeds_needed`). The test of a claim over few seeds (:func:`signflip_test`: p with its floor).
- :func:`margin_tests`: practical significance against a margin ``delta > 0``: the change exceeds it
  (H0: ``|mu| <= delta``; one-sided tests at ``+delta`` and ``-delta``, p = 2 min, Bonferroni over the two
  directions) and the change stays within it (TOST equivalence test, Schuirmann 1987: H0: ``|mu| >= delta``,
  p = max of the two one-sided p-values; equals statsmodels ``DescrStatsW(m).ttost_mean(-delta, delta)``).
- :func:`slope_over_seeds`: a trend over depth: per seed the least-squares slope of a per-layer value on the
  layer index (``scipy.stats.linregress``), then :func:`t_over_seeds` of the k slopes.

The simulations of ``docs/statistics.md`` that check these tests (their error rate at nominal level against the
per-input paired test of a single run and MixedLM; the moderated t's level and power) live outside the package,
in ``simulations/seed_tests.py``.

Degenerate columns: with one finite value, or with sd = 0 across seeds, the plain t statistic is undefined:
statistic and p are NaN (the package's sd = 0 rule, as scipy), never p = 0 (three seeds that all moved by
exactly -2 are no evidence at p = 0: their exact sign-flip p-value is 1/8 one-sided). The moderated t has no
such hole: its posterior variance is positive when the prior's is.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special as sps_special
from scipy import stats as sps

from headstats.errors import HeadstatsError
from headstats.registry import Registry
from headstats.stats.corrections import reject

__all__ = [
    "MAX_EXACT_SEEDS", "SEED_TESTS", "SeedTestSpec", "list_seed_tests", "register_seed_test", "corrected_level", "fit_variance_prior", "margin_for", "margin_tests", "moderated_t_over_seeds", "seeds_needed",
    "signflip_floor", "signflip_over_seeds", "signflip_test", "slope_over_seeds", "t_over_seeds", "trigamma_inverse",
]

#: Above this many seeds the sign-flip test would enumerate too many patterns (2^k); refused.
MAX_EXACT_SEEDS = 16
_ALTERNATIVES = ("two-sided", "greater", "less")


def _columns(values) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if v.ndim == 1:
        v = v[:, None]
    if v.ndim != 2:
        raise HeadstatsError(f"seed values must be a (seeds, cells) array, got shape {v.shape}")
    return v


def _check_alternative(alternative: str) -> None:
    if alternative not in _ALTERNATIVES:
        raise HeadstatsError(f"alternative must be one of {', '.join(_ALTERNATIVES)}, not {alternative!r}")


def _t_pvalue(t: np.ndarray, dof: np.ndarray, alternative: str) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        if alternative == "greater":
            return sps.t.sf(t, dof)
        if alternative == "less":
            return sps.t.cdf(t, dof)
        return np.minimum(1.0, 2 * sps.t.sf(np.abs(t), dof))


def t_over_seeds(values, *, mu=0.0, alternative: str = "two-sided", confidence: float = 0.95) -> dict[str, np.ndarray]:
    """Mean over seeds, its t interval and the one-sample t-test, per column.

    Parameters
    ----------
    values : array of shape (k, m)
        Per-seed values (rows) of m cells (columns); NaN where a seed has none.
    mu : float or array of shape (m,)
        The value under H0.
    alternative : {"two-sided", "greater", "less"}
        H1: mean != mu, > mu, < mu.
    confidence : float
        Two-sided confidence of ``ci_low``, ``ci_high`` (whatever the alternative).

    Returns
    -------
    dict of arrays of shape (m,)
        ``n_seeds, mean, sd`` (ddof 1), ``se, ci_low, ci_high, statistic, dof, p``.
        ``statistic``, ``p`` equal ``scipy.stats.ttest_1samp(values, mu, alternative=...)`` column-wise;
        sd = 0 (all seeds equal) or one seed: statistic and p NaN, never 0 (the sd = 0 rule).
    """
    _check_alternative(alternative)
    v = _columns(values)
    finite = np.isfinite(v)
    n = finite.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(np.where(finite, v, np.nan), 0)
        sd = np.nanstd(np.where(finite, v, np.nan), 0, ddof=1)
        sd = np.where(n >= 2, sd, np.nan)
        se = sd / np.sqrt(n)
        dof = np.where(n >= 2, n - 1, np.nan).astype(float)
        diff = mean - np.broadcast_to(np.asarray(mu, dtype=float), mean.shape)
        t = np.where((n >= 2) & (se > 0), diff / se, np.nan)
        p = _t_pvalue(t, dof, alternative)
        half = sps.t.ppf(0.5 + confidence / 2, dof) * se
    return {"n_seeds": n, "mean": mean, "sd": sd, "se": se, "ci_low": mean - half, "ci_high": mean + half,
            "statistic": t, "dof": dof, "p": p}


def trigamma_inverse(x):
    r"""Solve :math:`\psi'(y) = x` for y (limma's ``trigammaInverse``, Smyth 2004).

    Newton's method on :math:`1/\psi'(y)`, which is convex and nearly linear, from ``y = 0.5 + 1/x``;
    ``x > 1e7`` gives ``1/sqrt(x)``, ``x < 1e-6`` gives ``1/x``, ``x < 0`` NaN.
    """
    x = np.asarray(x, dtype=float)
    out = np.full(x.shape, np.nan)
    big, small = x > 1e7, (x >= 0) & (x < 1e-6)
    with np.errstate(divide="ignore"):
        out[big] = 1 / np.sqrt(x[big])
        out[small] = 1 / x[small]
    mid = np.isfinite(x) & (x >= 1e-6) & (x <= 1e7)
    if mid.any():
        xm = x[mid]
        y = 0.5 + 1 / xm
        for _ in range(50):
            tri = sps_special.polygamma(1, y)
            dif = tri * (1 - tri / xm) / sps_special.polygamma(2, y)
            y = y + dif
            if np.max(-dif / y) < 1e-8:
                break
        out[mid] = y
    return out if out.ndim else float(out)


def fit_variance_prior(s2, df) -> tuple[float, float]:
    r"""The prior of the cells' variances, ``(d0, s0^2)``: limma's ``fitFDist`` without covariate (Smyth 2004).

    The sample variances ``s2_c`` on ``d_c`` degrees of freedom are modelled as ``s0^2`` times an F variable
    on ``(d_c, d0)`` degrees of freedom (a scaled inverse-chi-square prior of the true variances). By moments
    of ``z_c = log s2_c``: with ``e_c = z_c - digamma(d_c/2) + log(d_c/2)``,

    .. math:: \psi'(d_0/2) = \operatorname{var}(e) - \overline{\psi'(d_c/2)}, \qquad
              s_0^2 = \exp\big(\bar e + \psi(d_0/2) - \log(d_0/2)\big).

    When the right-hand side is <= 0 the variances vary no more than sampling explains: ``d0 = inf`` and
    ``s0^2 = mean(s2)``. As limma: variances of exactly 0 are offset to ``1e-5 median(s2)`` before the log
    (the median taken as 1 when more than half are 0); cells with ``d_c`` < 1e-15 or a non-finite ``s2``
    take no part; fewer than two usable cells give ``(0, NaN)`` (no prior: the plain t).
    """
    s2 = np.asarray(s2, dtype=float).ravel()
    df = np.broadcast_to(np.asarray(df, dtype=float), s2.shape)
    ok = np.isfinite(s2) & (s2 > -1e-15) & np.isfinite(df) & (df > 1e-15)
    if ok.sum() < 2:
        return 0.0, math.nan
    x, d = np.maximum(s2[ok], 0.0), df[ok]
    med = float(np.median(x))
    x = np.maximum(x, 1e-5 * (med if med > 0 else 1.0))
    e = np.log(x) - sps_special.digamma(d / 2) + np.log(d / 2)
    evar = float(np.var(e, ddof=1) - np.mean(sps_special.polygamma(1, d / 2)))
    if evar > 0:
        d0 = 2 * float(trigamma_inverse(evar))
        return d0, float(np.exp(e.mean() + sps_special.digamma(d0 / 2) - np.log(d0 / 2)))
    return math.inf, float(x.mean())


def moderated_t_over_seeds(values, *, mu=0.0, alternative: str = "two-sided",
                           confidence: float = 0.95) -> dict[str, np.ndarray | float]:
    r"""The empirical-Bayes moderated t over seeds, per column (limma's ``eBayes``; Smyth 2004).

    For cell c with ``k_c`` seeds, mean ``mean_c`` and variance ``s2_c`` (ddof 1, ``d_c = k_c - 1``), the
    prior ``(d0, s0^2)`` is fitted over all cells (:func:`fit_variance_prior`) and

    .. math:: \tilde s_c^2 = \frac{d_0 s_0^2 + d_c s_c^2}{d_0 + d_c}, \qquad
              \tilde t_c = \frac{\text{mean}_c - \mu}{\sqrt{\tilde s_c^2 / k_c}}

    on ``min(d0 + d_c, sum_c d_c)`` degrees of freedom (``d0 = inf``: ``s~^2 = s0^2``, the normal). A cell
    whose seeds are all equal (``s2 = 0``) keeps a positive posterior variance, so its p-value is never 0
    from a zero spread. Equals ``inmoose.limma.eBayes(lmFit(D, intercept design))``: ``fit.t``,
    ``fit.p_value`` (two-sided), ``fit.df_prior``, ``fit.s2_prior`` on the (m, k) matrix ``D = values.T``.

    Parameters
    ----------
    values : array of shape (k, m)
        Per-seed values (rows) of m cells (columns); NaN where a seed has none.
    mu : float or array of shape (m,)
        The value under H0 (the prior is fitted from the variances and does not depend on it).
    alternative : {"two-sided", "greater", "less"}
    confidence : float
        Two-sided confidence of ``ci_low``, ``ci_high``: ``mean -+ t_{(1+c)/2, dof} s~ / sqrt(k)``.

    Returns
    -------
    dict
        Arrays of shape (m,): ``n_seeds, mean, sd`` (the sample sd), ``s2_post, se, ci_low, ci_high,
        statistic, dof, p``; floats ``df_prior`` (d0) and ``s2_prior`` (s0^2).

    References
    ----------
    Smyth, G. K. (2004). Linear models and empirical Bayes methods for assessing differential expression in
    microarray experiments. Statistical Applications in Genetics and Molecular Biology 3(1), article 3.
    """
    _check_alternative(alternative)
    v = _columns(values)
    finite = np.isfinite(v)
    n = finite.sum(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(np.where(finite, v, np.nan), 0)
        s2 = np.where(n >= 2, np.nanvar(np.where(finite, v, np.nan), 0, ddof=1), np.nan)
    d = np.maximum(n - 1, 0).astype(float)
    d0, s20 = fit_variance_prior(s2, d)
    with np.errstate(invalid="ignore", divide="ignore"):
        if math.isinf(d0):
            post = np.full(mean.shape, s20)
        elif d0 > 0:
            post = (d0 * s20 + d * np.where(n >= 2, s2, 0.0)) / (d0 + d)
        else:
            post = np.where(s2 > 0, s2, np.nan)
        dof = np.minimum(d0 + d, float(d.sum()))
        se = np.sqrt(post / n)
        ok = (n >= 1) & (se > 0) & np.isfinite(se) & (dof > 0)
        diff = mean - np.broadcast_to(np.asarray(mu, dtype=float), mean.shape)
        t = np.where(ok, diff / se, np.nan)
        dof = np.where(ok, dof, np.nan)
        p = _t_pvalue(t, dof, alternative)
        half = sps.t.ppf(0.5 + confidence / 2, dof) * se
    return {"n_seeds": n, "mean": mean, "sd": np.sqrt(s2), "s2_post": np.where(ok, post, np.nan), "se": se,
            "ci_low": mean - half, "ci_high": mean + half, "statistic": t, "dof": dof, "p": p,
            "df_prior": float(d0), "s2_prior": float(s20)}


def signflip_test(values, *, mu=0.0, alternative: str = "two-sided") -> dict[str, np.ndarray]:
    """The exact sign-flip test of a claim over few seeds, per column, with what it can show.

    Returns
    -------
    dict of arrays of shape (m,)
        ``n_seeds`` (finite values), ``mean`` (of the values, NaN left out),
        ``p`` (:func:`signflip_over_seeds`), ``floor`` (:func:`signflip_floor` of each column's number of
        seeds: no p-value can be smaller, so a claim whose floor is above its corrected level cannot be
        decided by these seeds). Three seeds that all moved by -2: ``p = floor = 1/8`` one-sided.
    """
    v = _columns(values)
    n = np.isfinite(v).sum(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(v, 0)
    floor = np.array([signflip_floor(int(k), alternative) if k >= 1 else np.nan for k in n])
    return {"n_seeds": n, "mean": mean, "p": signflip_over_seeds(v, mu=mu, alternative=alternative), "floor": floor}


def _sign_patterns(k: int) -> np.ndarray:
    return np.array(list(itertools.product((1.0, -1.0), repeat=k)))


def signflip_over_seeds(values, *, mu=0.0, alternative: str = "two-sided") -> np.ndarray:
    """Exact sign-flip permutation p-values of H0: the per-seed values are symmetric about ``mu``, per column.

    The statistic is the sum of ``values - mu`` over the seeds; under H0 every one of the ``2^k`` sign
    patterns is equally likely, and p is the share of patterns whose statistic is at least as extreme
    (``>=`` the observed; ``|.|`` two-sided), the observed pattern included, so p >= :func:`signflip_floor`.
    NaN values take no part (a zero sum term is unchanged by its sign). Equals
    ``scipy.stats.permutation_test((x - mu,), np.mean, permutation_type="samples", n_resamples=inf)``.
    """
    _check_alternative(alternative)
    v = _columns(values) - np.broadcast_to(np.asarray(mu, dtype=float), _columns(values).shape[1:])
    k = v.shape[0]
    if k > MAX_EXACT_SEEDS:
        raise HeadstatsError(f"the exact sign-flip test enumerates 2^k patterns; at most {MAX_EXACT_SEEDS} seeds")
    n = np.isfinite(v).sum(0)
    x = np.where(np.isfinite(v), v, 0.0)
    signs = _sign_patterns(k)
    stats_all = signs @ x  # (2^k, m)
    observed = x.sum(0)
    tol = 1e-12 * np.maximum(1.0, np.abs(x).sum(0))
    if alternative == "greater":
        extreme = stats_all >= observed - tol
    elif alternative == "less":
        extreme = stats_all <= observed + tol
    else:
        extreme = np.abs(stats_all) >= np.abs(observed) - tol
    p = extreme.mean(0)
    return np.where(n >= 1, p, np.nan)


def signflip_floor(k: int, alternative: str = "two-sided") -> float:
    """The smallest p-value the exact sign-flip test can give with k seeds: ``2/2^k`` two-sided, ``1/2^k`` one-sided."""
    _check_alternative(alternative)
    return (2.0 if alternative == "two-sided" else 1.0) / 2.0 ** k


def corrected_level(alpha: float, m: int, correction: str) -> float:
    """The level the smallest of m p-values must reach to be rejected: ``alpha / m`` (Bonferroni, Holm),
    ``alpha / (m c(m))`` with ``c(m) = sum_{i<=m} 1/i`` (Benjamini-Yekutieli), ``alpha`` (Benjamini-Hochberg
    in the best case, every test at the floor; ``none``)."""
    m = max(int(m), 1)
    return {"bonferroni": alpha / m, "holm": alpha / m, "fdr_by": alpha / (m * sum(1 / i for i in range(1, m + 1))),
            "fdr_bh": alpha, "none": alpha}.get(correction, alpha / m)


def seeds_needed(*, alpha: float, m: int, correction: str, alternative: str = "two-sided", test: str = "signflip",
                 effect: float = 1.0, power: float = 0.8, df_prior: float = 0.0) -> int:
    r"""The fewest seeds with which a test over seeds can do its job at the corrected level (:func:`corrected_level`).

    - ``test="signflip"``: the fewest k whose :func:`signflip_floor` is below the level (below it no data
      can reject; a necessary condition, not power).
    - ``test="t"``: the fewest k (>= 2) at which the one-sample t-test over seeds has ``power`` against a mean
      change of ``effect`` run-to-run standard deviations: the noncentral t with ``k - 1`` degrees of
      freedom and noncentrality ``effect sqrt(k)`` (``scipy.stats.nct``), two-sided or one-sided.
    - ``test="moderated_t"``: the same for the moderated t (:func:`moderated_t_over_seeds`) with a prior on
      ``df_prior`` degrees of freedom: ``df_prior + k - 1`` degrees of freedom, the posterior variance taken
      at the true one (k >= 1 when ``df_prior > 0``).

    With Holm over 720 cells at alpha 0.05, two-sided, and ``effect = 1``: sign-flip 15, t 31 (statsmodels'
    ``TTestPower().power(1, 30, 0.05 / 720)`` is 0.774), moderated t 30 with ``d0 = 4`` and 24 with ``d0 = inf``.
    Capped at 10,000.
    """
    _check_alternative(alternative)
    level = corrected_level(alpha, m, correction)
    if test == "signflip":
        k = 1
        while signflip_floor(k, alternative) >= level:
            k += 1
        return k
    if test not in ("t", "moderated_t"):
        raise HeadstatsError(f"seeds_needed: test must be 'signflip', 't' or 'moderated_t', not {test!r}")
    prior = float(df_prior) if test == "moderated_t" else 0.0
    one = level if alternative != "two-sided" else level / 2
    for k in range(1 if prior > 0 else 2, 10_001):
        dof = prior + k - 1
        crit = sps.norm.isf(one) if math.isinf(dof) else sps.t.isf(one, dof)
        ncp = abs(effect) * math.sqrt(k)
        reach = sps.norm.sf(crit - ncp) if math.isinf(dof) else sps.nct.sf(crit, dof, ncp)
        if reach >= power:
            return k
    return 10_000


@dataclass(frozen=True)
class SeedTestSpec:
    """A registered per-cell test over seeds (a comparison's ``seed_test``).

    Attributes
    ----------
    name : str
        The name protocols (``compare: seed_test``) and the ``seed_test`` column use.
    fn : callable
        ``fn(values, *, mu=0.0, alternative="two-sided", confidence=0.95) -> dict`` for per-seed values of
        shape (k, m): arrays of shape (m,) ``n_seeds, mean, sd, ci_low, ci_high, statistic, dof, p`` (and,
        for an empirical-Bayes test, the prior's ``df_prior``, ``s2_prior``), as :func:`t_over_seeds`.
    description : str
        One line for ``headstats list-tests``.
    """

    name: str
    fn: Callable[..., dict]
    description: str = ""


#: The per-cell tests over seeds, by name (``compare: seed_test``; :func:`register_seed_test` adds one).
SEED_TESTS: Registry[SeedTestSpec] = Registry(
    "test over seeds", hint="add one with headstats.stats.seeds.register_seed_test")


def register_seed_test(name: str, fn: Callable[..., dict], *, description: str = "",
                       overwrite: bool = False) -> SeedTestSpec:
    """Add a per-cell test over seeds under ``name`` (see :class:`SeedTestSpec`); a protocol's
    ``compare: seed_test`` may then name it."""
    if not isinstance(name, str) or not name.isidentifier():
        raise HeadstatsError(f"a test over seeds needs a name that is a valid identifier, got {name!r}")
    if not callable(fn):
        raise TypeError(f"test over seeds {name!r}: fn must be callable, got {type(fn).__name__}")
    return SEED_TESTS.register(name, SeedTestSpec(name, fn, description), overwrite=overwrite)


def list_seed_tests() -> list[str]:
    """Names a comparison may give as ``seed_test``."""
    return SEED_TESTS.names()


register_seed_test("moderated_t", moderated_t_over_seeds,
                   description="limma's empirical-Bayes moderated t over seeds (Smyth 2004)")
register_seed_test("t", t_over_seeds, description="one-sample t over seeds")


def margin_for(base_mean, *, min_change: float, scale: str) -> np.ndarray:
    """The margin ``delta`` per cell: ``min_change`` itself (``scale="score"``) or ``min_change * |base mean|``
    (``scale="share"``: a share of the pretrained model's mean score of that cell)."""
    base_mean = np.asarray(base_mean, dtype=float)
    if scale == "score":
        return np.full(base_mean.shape, float(min_change))
    if scale == "share":
        return float(min_change) * np.abs(base_mean)
    raise HeadstatsError(f"min_change_scale must be 'score' or 'share', not {scale!r}")


def margin_tests(values, delta, *, test: str = "t") -> dict[str, np.ndarray]:
    """Practical significance of the mean change over seeds against a margin ``delta`` (per column).

    Returns
    -------
    dict of arrays of shape (m,)
        ``p_exceeds``: H0 ``-delta <= mu <= delta`` against ``|mu| > delta``; the one-sided t-tests
        ``ttest_1samp(v, delta, alternative="greater")`` and ``ttest_1samp(v, -delta, alternative="less")``,
        p = min(1, 2 min(p_up, p_down)) (Bonferroni over the two directions).
        ``p_equivalent``: TOST, H0 ``|mu| >= delta`` against ``-delta < mu < delta``: the larger of
        ``ttest_1samp(v, -delta, alternative="greater")`` and ``ttest_1samp(v, delta, alternative="less")``;
        equals statsmodels ``DescrStatsW(v).ttost_mean(-delta, delta)[0]``. NaN where delta is not > 0.
        ``test="moderated_t"``: the same four one-sided tests with :func:`moderated_t_over_seeds` (one prior,
        fitted from the variances, which do not depend on the margin).
    """
    v = _columns(values)
    delta = np.broadcast_to(np.asarray(delta, dtype=float), v.shape[1:])
    run = SEED_TESTS.get(test).fn
    up = run(v, mu=delta, alternative="greater")["p"]
    down = run(v, mu=-delta, alternative="less")["p"]
    low = run(v, mu=-delta, alternative="greater")["p"]
    high = run(v, mu=delta, alternative="less")["p"]
    ok = np.isfinite(delta) & (delta > 0)
    p_exceeds = np.where(ok, np.minimum(1.0, 2 * np.fmin(up, down)), np.nan)
    p_equivalent = np.where(ok, np.fmax(low, high), np.nan)
    return {"delta": np.asarray(delta, dtype=float), "p_exceeds": p_exceeds, "p_equivalent": p_equivalent}


def slope_over_seeds(values, *, alternative: str = "greater", confidence: float = 0.95) -> dict[str, np.ndarray | float]:
    """A trend over depth with seeds as replicates.

    Parameters
    ----------
    values : array of shape (k, L)
        Per seed (rows), a value per layer (columns, in depth order, layer index 0..L-1).

    Returns
    -------
    dict
        ``slopes`` (k,): each seed's least-squares slope of value on layer index (``scipy.stats.linregress``);
        and :func:`t_over_seeds` of the slopes against 0 (``mean, sd, ci_low, ci_high, statistic, dof, p``,
        floats) with ``alternative`` (default ``greater``: later layers change more).
    """
    v = _columns(values)
    layers = np.arange(v.shape[1], dtype=float)
    slopes = np.array([np.polyfit(layers[np.isfinite(row)], row[np.isfinite(row)], 1)[0]
                       if np.isfinite(row).sum() >= 2 else np.nan for row in v])
    res = t_over_seeds(slopes, alternative=alternative, confidence=confidence)
    return {"slopes": slopes, **{key: float(val[0]) for key, val in res.items()}}


def describe_floor(k: int, *, alpha: float, m: int, correction: str, alternative: str = "two-sided") -> str:
    """One sentence on what k seeds can show: the sign-flip floor against the corrected level."""
    floor = signflip_floor(k, alternative)
    need = seeds_needed(alpha=alpha, m=m, correction=correction, alternative=alternative)
    can = "can" if k >= need else "cannot"
    return (f"with {k} seeds the exact sign-flip test's smallest p-value is {floor:.3g}, so it {can} reject at "
            f"alpha {alpha:g} with {correction} over {m} tests (it needs at least {need} seeds); the t-test over "
            "seeds has no such floor but rests on normal run-to-run variation, which 3 seeds cannot check")


def pairwise_mean_abs(values: np.ndarray) -> np.ndarray:
    """Mean over the k(k-1)/2 pairs of seeds of ``|v_s - v_t|``, per column (NaN pairs left out)."""
    v = _columns(values)
    k = v.shape[0]
    if k < 2:
        return np.full(v.shape[1], np.nan)
    diffs = np.stack([np.abs(v[a] - v[b]) for a, b in itertools.combinations(range(k), 2)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(diffs, 0)


