"""Effect sizes, power and Bayes factors.

Effect sizes: :func:`cohen_d` (the t-type tests, the paired ``d_z`` with tau = 0), :func:`rank_biserial`
(signed-rank tests) and :func:`cohen_g` (the sign test), vectorised over heads; every test of
:mod:`headstats.stats.onesample`, :mod:`headstats.stats.paired` and :mod:`headstats.stats.power` calls these.

Power, the sample size for a power and the minimum detectable effect are pingouin's formulas (``power_ttest``)
by the same scipy calls, and the Bayes factor is pingouin's formula (``bayesfactor_ttest``) summed in log
space (:func:`bayes_factor_two_sided`: pingouin's quadrature fails at few inputs and a huge t). The tests check
each against pingouin. headstats does not import pingouin: it imports seaborn and matplotlib (about 0.8 s), which
the statistics layer must not pull in.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

#: pingouin's brentq bound for the sample size; beyond it n_for_power is NaN.
N_MAX = 10_000_000


#: Below this standard deviation (in score units) a standardised effect size is not reported (NaN): a head
#: whose scores vary by 1.7e-5 around a mean far from tau gets d of -58,038, a number that measures the float
#: noise of its scores, not an effect (issue 20). Bias scores are about 1 for uniform attention; attention
#: masses and ceiling shares lie in [0, 1]; on both, 1e-3 is far below any difference a reader would weigh.
EFFECT_SD_FLOOR = 1e-3
#: The note of a head whose effect size is not reported because its sd is below :data:`EFFECT_SD_FLOOR`.
SD_FLOOR_NOTE = f"sd below {EFFECT_SD_FLOOR:g}: effect size not reported (it would measure rounding, not an effect)"


def cohen_d(mean, sd, tau=0.0, *, sd_floor: float = EFFECT_SD_FLOOR) -> np.ndarray:
    r"""Standardised effect :math:`d = (\bar s - \tau) / s` (Cohen's d; ``d_z`` of paired differences with
    tau = 0); NaN where ``sd`` is not finite or below ``sd_floor`` (:data:`EFFECT_SD_FLOOR`; 0 keeps every
    positive sd)."""
    mean = np.asarray(mean, dtype=float)
    sd = np.asarray(sd, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = (mean - tau) / sd
    return np.where(np.isfinite(sd) & (sd > 0) & (sd >= sd_floor), d, np.nan)


def rank_biserial(t_plus, n_nonzero) -> np.ndarray:
    r"""Matched-pairs rank-biserial correlation :math:`r = (T^+ - T^-) / (T^+ + T^-)` (Kerby 2014; pingouin's
    ``RBC``), from :math:`T^+` and the number n' of non-zero differences (:math:`T^+ + T^- = n'(n'+1)/2`);
    in [-1, 1], NaN where n' = 0."""
    t_plus = np.asarray(t_plus, dtype=float)
    n_nonzero = np.asarray(n_nonzero, dtype=float)
    total = n_nonzero * (n_nonzero + 1) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (2 * t_plus - total) / total, np.nan)


def cohen_g(n_above, n_nonzero) -> np.ndarray:
    r"""Cohen's :math:`g = K / N' - 1/2` of the sign test (K above, N' not tied); NaN where N' = 0."""
    n_above = np.asarray(n_above, dtype=float)
    n_nonzero = np.asarray(n_nonzero, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n_nonzero > 0, n_above / n_nonzero - 0.5, np.nan)


def power_ttest_greater(d: np.ndarray, n: np.ndarray, *, alpha: float) -> np.ndarray:
    r"""Power of the one-sided one-sample t-test, vectorised: the value of ``pingouin.power_ttest(d, n,
    contrast="one-sample", alternative="greater")``, by the same scipy calls (``t.ppf`` and ``nct.sf``), without
    importing pingouin (which imports seaborn: about 0.8 s of every run).

    .. math:: 1 - \beta = P\left(T_{n-1}(\delta) > t_{1-\alpha,\,n-1}\right), \quad \delta = d \sqrt n,

    with :math:`T_{\nu}(\delta)` the non-central t distribution. NaN where d or n is not finite or n < 2.
    """
    d = np.asarray(d, dtype=float)
    n = np.asarray(n, dtype=float)
    d, n = np.broadcast_arrays(d, n)
    out = np.full(d.shape, np.nan)
    ok = np.isfinite(d) & np.isfinite(n) & (n >= 2)
    if ok.any() and np.isfinite(alpha) and 0 < alpha < 1:
        dof = n[ok] - 1
        out[ok] = sps.nct.sf(sps.t.ppf(1 - float(alpha), dof), dof, d[ok] * np.sqrt(n[ok]))
    return out


def n_for_power_greater(d: np.ndarray, *, power: float, alpha: float) -> np.ndarray:
    """Smallest integer n >= 2 whose one-sided one-sample t-test has ``power`` at effect ``d``.

    Integer bisection over :func:`power_ttest_greater` (pingouin's power function), vectorised over ``d``;
    it equals ``ceil(pingouin.power_ttest(d=d, power=power, alpha=alpha, contrast="one-sample",
    alternative="greater"))``. NaN where ``d <= 0`` or not finite, or where more than
    :data:`N_MAX` inputs would be needed (pingouin's own search bound).
    """
    d = np.atleast_1d(np.asarray(d, dtype=float))
    out = np.full(d.shape, np.nan)
    ok = np.isfinite(d) & (d > 0)
    if not ok.any() or not (np.isfinite(alpha) and 0 < alpha < 1):
        return out
    dd = d[ok]
    lo = np.full(dd.shape, 2.0)  # power(lo) may already suffice
    hi = np.full(dd.shape, float(N_MAX))
    reach = power_ttest_greater(dd, hi, alpha=alpha) >= power
    enough_at_2 = power_ttest_greater(dd, lo, alpha=alpha) >= power
    # invariant: power(hi) >= target, power(lo) < target (for the rows still searching)
    search = reach & ~enough_at_2
    for _ in range(64):
        active = search & (hi - lo > 1)
        if not active.any():
            break
        mid = np.floor((lo + hi) / 2)
        pw = power_ttest_greater(dd[active], mid[active], alpha=alpha)
        up = pw >= power
        h, l_ = hi[active], lo[active]
        h[up] = mid[active][up]
        l_[~up] = mid[active][~up]
        hi[active], lo[active] = h, l_
    res = np.where(enough_at_2, 2.0, np.where(reach, hi, np.nan))
    out[ok] = res
    return out


def mde_ttest_greater(n: np.ndarray, *, alpha, power: float) -> np.ndarray:
    r"""Minimum detectable effect: the standardised d at which the one-sided one-sample t-test with n inputs
    at level ``alpha`` has ``power``, i.e. the root of
    :math:`P(T_{n-1}(d\sqrt n) > t_{1-\alpha, n-1}) = ` ``power`` (:func:`power_ttest_greater`).

    Vectorised over ``n`` and ``alpha`` (broadcast); solved by bisection on each distinct (n, alpha) pair to
    1e-10. ``n`` may be fractional (an effective N). NaN where n < 2 or alpha is not in (0, 1).
    """
    n, a = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(alpha, dtype=float))
    out = np.full(n.shape, np.nan)
    ok = np.isfinite(n) & (n >= 2) & np.isfinite(a) & (a > 0) & (a < 1)
    if not ok.any():
        return out
    pairs, inverse = np.unique(np.stack([n[ok], a[ok]], axis=1), axis=0, return_inverse=True)
    nn, aa = pairs[:, 0], pairs[:, 1]
    crit = sps.t.isf(aa, nn - 1)
    lo = np.zeros(nn.size)
    hi = np.full(nn.size, 1.0)
    for _ in range(60):  # grow hi until the power reaches the target
        short = sps.nct.sf(crit, nn - 1, hi * np.sqrt(nn)) < power
        if not short.any():
            break
        hi[short] *= 2.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        up = sps.nct.sf(crit, nn - 1, mid * np.sqrt(nn)) >= power
        hi = np.where(up, mid, hi)
        lo = np.where(up, lo, mid)
    out[ok] = hi[np.ravel(inverse)]
    return out


def bayes_factor_two_sided(t: np.ndarray, n: np.ndarray, *, r: float = 0.707) -> np.ndarray:
    r"""Two-sided JZS Bayes factor BF10 of a one-sample t statistic (the quantity of
    ``pingouin.bayesfactor_ttest``, computed robustly).

    .. math:: \mathrm{BF}_{10} = \frac{\int_0^\infty (1 + N g r^2)^{-1/2}
        \left(1 + \frac{t^2}{\nu (1 + N g r^2)}\right)^{-(\nu+1)/2} (2\pi)^{-1/2} g^{-3/2} e^{-1/(2g)}\,dg}
        {(1 + t^2/\nu)^{-(\nu+1)/2}}

    (Rouder et al. 2009), :math:`\nu = N - 1`. It weighs H1: mean != tau against H0: mean = tau; it is
    not a one-sided quantity. ``inf`` where it overflows a float (overwhelming evidence), NaN where t is not
    finite or N < 2.

    Computed in log space over :math:`u = \ln g` (:func:`log_jzs_bf10`), vectorised over the tests. pingouin
    integrates over g with adaptive quadrature, which fails where few inputs meet a huge t (a head whose scores
    barely vary): at N = 3, t = -619 it returns -0.64 (a Bayes factor is positive; the integral is 426.93), at
    N = 4, t = -10,000 it returns 1,577 (the integral is 18,803,484); both are checked against 50-digit
    quadrature (mpmath) in the tests, and elsewhere the two agree to 1e-8.
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))
    n = np.broadcast_to(np.asarray(n, dtype=float), t.shape)
    out = np.full(t.shape, np.nan)
    ok = np.isfinite(t) & np.isfinite(n) & (n >= 2)
    with np.errstate(over="ignore"):  # above the largest float: inf
        out[ok] = np.exp(log_jzs_bf10(t[ok], n[ok], r=r))
    return out


#: Step of the grid of u = ln g over which the JZS integral is summed (:func:`log_jzs_bf10`).
JZS_STEP = 0.1
#: The grid's ends: g from e^-40 (the prior's e^(-1/2g) is below e^(-10^16) there) to at least e^80, and at least
#: e^40 beyond t^2 (past its peak, near g = t^2 / (N r^2), the integrand over u falls as 1/g).
JZS_U_LOW, JZS_U_HIGH, JZS_U_PAST_PEAK = -40.0, 80.0, 40.0
#: Tests x grid points summed at a time (a block's arrays hold this many floats each).
JZS_CELLS = 1_000_000


def log_jzs_bf10(t: np.ndarray, n: np.ndarray, *, r: float = 0.707) -> np.ndarray:
    r"""ln BF10 of :func:`bayes_factor_two_sided` for finite t and N >= 2, vectorised.

    With :math:`g = e^u` the numerator is :math:`\int e^{h(u)} du`,
    :math:`h(u) = -\tfrac12 \ln s - \tfrac{\nu+1}{2} \ln(1 + \tfrac{t^2}{s\nu}) - \tfrac12 \ln 2\pi
    - \tfrac u2 - \tfrac{1}{2g}`, :math:`s = 1 + N g r^2`: a smooth bump over u, about one unit wide,
    falling doubly exponentially to its left and as :math:`e^{-u}` to its right. It is summed by the trapezoidal
    rule on a uniform grid of step :data:`JZS_STEP` (log-sum-exp, every term in logs, so that nothing overflows
    whatever t), which for such an integrand converges geometrically with the step: against adaptive
    quadrature around the peak, the largest difference over 400 random (t, N), |t| from 1e-3 to 3e4 and N from 2
    to 20,000, was 5e-13 in ln BF.
    """
    from scipy.special import logsumexp

    t = np.asarray(t, dtype=float).ravel()
    n = np.asarray(n, dtype=float).ravel()
    out = np.empty(t.shape)
    if not t.size:
        return out
    with np.errstate(divide="ignore"):
        log_t2 = 2.0 * np.log(np.abs(t))  # -inf at t = 0: every ratio below is then 0
    high = max(JZS_U_HIGH, float(np.max(log_t2)) + JZS_U_PAST_PEAK)
    u = np.arange(JZS_U_LOW, high + JZS_STEP / 2, JZS_STEP)
    prior = -0.5 * u - 0.5 * np.exp(-u) - 0.5 * math.log(2 * math.pi)
    block = max(1, JZS_CELLS // u.size)
    for start in range(0, t.size, block):
        lt2, nn = log_t2[start:start + block, None], n[start:start + block, None]
        log_nu = np.log(nn - 1.0)
        log_s = np.logaddexp(0.0, np.log(nn * r * r) + u)
        h = -0.5 * log_s - 0.5 * nn * np.logaddexp(0.0, lt2 - log_s - log_nu) + prior
        null = -0.5 * nn[:, 0] * np.logaddexp(0.0, lt2[:, 0] - log_nu[:, 0])
        out[start:start + block] = logsumexp(h, axis=1) + math.log(JZS_STEP) - null
    return out
    high = max(JZS_U_HIGH, float(np.log1p(np.max(t * t))) + JZS_U_PAST_PEAK)
    u = np.arange(JZS_U_LOW, high + JZS_STEP / 2, JZS_STEP)
    g, rr = np.exp(u), r * r
    for start in range(0, t.size, JZS_BLOCK):
        tt, nn = t[start:start + JZS_BLOCK, None], n[start:start + JZS_BLOCK, None]
        nu = nn - 1.0
        s = 1.0 + nn * rr * g
        h = -0.5 * np.log(s) - 0.5 * (nu + 1.0) * np.log1p(tt * tt / (s * nu)) - 0.5 * u - 0.5 / g
        null = -0.5 * (nu[:, 0] + 1.0) * np.log1p(tt[:, 0] ** 2 / nu[:, 0])
        out[start:start + JZS_BLOCK] = (logsumexp(h, axis=1) + math.log(JZS_STEP) - 0.5 * math.log(2 * math.pi)
                                        - null)
    return out
