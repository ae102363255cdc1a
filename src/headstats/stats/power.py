r"""Design power beside each test of a role: the effect a head's test could detect, not observed power.

headstats does **not** report power at the observed effect. That "observed power" is a one-to-one function
of the p-value (Hoenig & Heisey 2001, *The abuse of power*, Am. Stat. 55:19): every head that was not
assigned has low observed power by construction, and it says nothing the p-value does not. Instead, for
every hypothesis, at its N and at the corrected level ``power_alpha`` (the uncorrected p-value below which
one more head of its family would be assigned, :func:`headstats.stats.corrections.next_discovery_alpha`):

- ``mde``: the minimum detectable effect -- the standardised effect :math:`\delta = (\theta - \tau)/\sigma`
  (θ the location the test is about) that the test detects with probability ``power_target`` (0.8);
  ``mde_score = mde * sd`` is the same in score units (θ would have to reach ``tau + mde_score``);
- ``power``: the power at the effect of interest :math:`\delta_0` the protocol declares
  (``statistics.effect_of_interest``, default 0.5, a "medium" effect in Cohen's terms);
- ``n_for_power``: the inputs needed for ``power_target`` at :math:`\delta_0` and the same level.

These depend on the design (N, the family, the level), the declared effect and, for ``mde_score``, the
spread of the scores -- not on the observed effect. A head *not* assigned with ``mde`` above the effect of
interest (``power < power_target``) is one whose test could not have detected an effect of that size: its
non-assignment is uninformative about such effects (:func:`underpowered`).

Power is that of the one-sided one-sample t-test (non-central t, as ``pingouin.power_ttest``) at an
effective N = N x efficiency, the test's asymptotic relative efficiency against the t-test under normal
scores (:attr:`headstats.stats.onesample.OneSampleTestSpec.efficiency`): 1 for the tests of the mean
(``t``, ``bootstrap``, ``permutation``, ``skew_t``: the t approximation), 3/pi = 0.955 for ``wilcoxon``
and 2/pi = 0.637 for ``sign`` (Noether 1987 gives the same sample sizes to first order). For the two median
tests δ is then the shift of the median (or pseudo-median) in sd units under a normal shift model: the
power of the median test *for the median*, by asymptotic relative efficiency. A test registered without an
efficiency gets NaN and the note "not available". A test that cannot reach the level at all at its N --
the sign and exact signed-rank tests below ``2^-N``, a resampling test below ``1/(B+1)`` -- has power 0 and
``mde`` = inf, with a note.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from headstats.stats.effects import bayes_factor_two_sided, cohen_d, mde_ttest_greater, n_for_power_greater, power_ttest_greater

#: Columns of :func:`power_summary`.
POWER_SUMMARY_COLUMNS: tuple[str, ...] = (
    "model", "dataset", "role", "n_heads", "n_assigned", "n_not_assigned", "n_underpowered",
    "median_n", "median_mde", "max_n_for_power", "effect_of_interest", "power_target",
)


def _efficiency(test: str) -> float:
    from headstats.stats.onesample.spec import ONE_SAMPLE_TESTS  # the registry lives with the tests

    if test not in ONE_SAMPLE_TESTS:
        return float("nan")
    value = ONE_SAMPLE_TESTS.get(test).efficiency
    return float("nan") if value is None else float(value)


def _smallest_p(tests: pd.DataFrame) -> np.ndarray:
    """The smallest p-value each row's test can produce at its N (0 where unbounded)."""
    from headstats.stats.onesample.spec import ONE_SAMPLE_TESTS

    n = tests["n"].to_numpy(float)
    out = np.zeros(len(tests))
    names = tests["test"].astype(str).to_numpy()
    drawn = (tests["n_resamples"].to_numpy(dtype=float, na_value=np.nan) if "n_resamples" in tests
             else np.full(len(tests), np.nan))
    for name in pd.unique(names):
        rows = names == name
        if name in ("sign", "wilcoxon"):
            out[rows] = 0.5 ** n[rows]
        elif name in ONE_SAMPLE_TESTS and ONE_SAMPLE_TESTS.get(name).resampling:
            out[rows] = np.where(np.isfinite(drawn[rows]), 1.0 / (drawn[rows] + 1.0), 0.0)
    return out


def inputs_for_power(effect: float, *, power: float, alpha: float, efficiency: float = 1.0) -> float:
    r"""The fewest inputs N whose test, at effective size ``N x efficiency``, has ``power`` at ``effect``.

    The smallest integer N with :func:`headstats.stats.effects.power_ttest_greater` ``(effect, N e) >= power``
    (the power at a non-integer effective N, as pingouin computes it), rounded once: not
    ``ceil(ceil(n_t) / e)``, which for the Wilcoxon test at level 0.01 and effect 0.5 gives 46 where 45 suffice.
    NaN when the t-test itself needs more than :data:`headstats.stats.effects.N_MAX` inputs.
    """
    t_n = n_for_power_greater(np.array([effect]), power=power, alpha=alpha)[0]
    if not np.isfinite(t_n) or not efficiency > 0:
        return math.nan
    if efficiency == 1:
        return float(t_n)
    # power(n e) < power for every n e <= t_n - 1 (an integer below the t-test's answer); start just above
    n = max(math.ceil(2 / efficiency), math.floor((t_n - 1) / efficiency) + 1)
    while power_ttest_greater(np.array([effect]), np.array([n * efficiency]), alpha=alpha)[0] < power:
        n += 1
    return float(n)


def add_power(tests: pd.DataFrame, *, power_target: float = 0.8, effect_of_interest: float = 0.5) -> pd.DataFrame:
    r"""Add the design-power columns and ``bf10_two_sided`` to a table of tests (see the module docstring).

    Parameters
    ----------
    tests : pandas.DataFrame
        Needs ``test, mean, sd, tau, n, p_unc, power_alpha`` (and ``n_resamples`` for resampling tests);
        rows with NaN ``p_unc`` (too few inputs, sd = 0) get NaN everywhere.
    power_target : float
        Power for which ``mde`` and ``n_for_power`` are solved.
    effect_of_interest : float
        The standardised effect :math:`\delta_0 > 0` of ``power`` and ``n_for_power``.

    Returns
    -------
    pandas.DataFrame
        A copy with ``effect_of_interest``, ``mde``, ``mde_score``, ``power``, ``n_for_power``,
        ``power_note`` and ``bf10_two_sided`` (JZS, r = 0.707, of the t statistic
        :math:`t = d\sqrt n`, two-sided).
    """
    out = tests.copy()
    g = len(out)
    n = out["n"].to_numpy(float)
    sd = out["sd"].to_numpy(float)
    a = out["power_alpha"].to_numpy(float)
    eff = np.array([_efficiency(t) for t in out["test"].astype(str)]) if g else np.zeros(0)
    valid = np.isfinite(out["p_unc"].to_numpy(float)) & np.isfinite(a)
    floor = _smallest_p(out) if g else np.zeros(0)
    reachable = floor <= a
    ok = valid & np.isfinite(eff) & reachable
    n_eff = n * eff
    mde = np.full(g, np.nan)
    power = np.full(g, np.nan)
    n_needed = np.full(g, np.nan)
    if ok.any():
        mde[ok] = mde_ttest_greater(np.maximum(n_eff[ok], 2.0), alpha=a[ok], power=power_target)
        for level in np.unique(a[ok]):
            rows = ok & (a == level)
            power[rows] = power_ttest_greater(np.full(rows.sum(), effect_of_interest), np.maximum(n_eff[rows], 2.0),
                                              alpha=float(level))
            for e in np.unique(eff[rows]):
                n_needed[rows & (eff == e)] = inputs_for_power(effect_of_interest, power=power_target,
                                                               alpha=float(level), efficiency=float(e))
    unreachable = valid & np.isfinite(eff) & ~reachable
    mde[unreachable] = np.inf
    power[unreachable] = 0.0
    notes = np.full(g, "", dtype=object)
    for i in np.nonzero(unreachable)[0]:
        notes[i] = f"the smallest p this test can give at n={int(n[i])} ({floor[i]:.2g}) is above the level {a[i]:.2g}"
    for i in np.nonzero(valid & ~np.isfinite(eff))[0]:
        notes[i] = "power not available for this test (no efficiency registered)"
    for i in np.nonzero(ok & (eff < 1))[0]:
        notes[i] = f"for the {'median' if eff[i] < 0.9 else 'pseudo-median'}: t-test power at N x {eff[i]:.3f} (ARE, normal scores)"
    for i in np.nonzero(ok & (eff == 1) & (out["test"].astype(str).to_numpy() != "t"))[0]:
        notes[i] = "t approximation"
    d = cohen_d(out["mean"].to_numpy(float), sd, out["tau"].to_numpy(float), sd_floor=0.0)  # t / sqrt(n), any sd
    t = d * np.sqrt(n)
    bf = np.full(g, np.nan)
    fine = valid & np.isfinite(d)
    bf[fine] = bayes_factor_two_sided(t[fine], n[fine])
    out["effect_of_interest"] = float(effect_of_interest)
    out["mde"] = mde
    with np.errstate(invalid="ignore"):
        out["mde_score"] = mde * sd
    out["power"] = power
    out["n_for_power"] = n_needed
    out["power_note"] = notes
    out["bf10_two_sided"] = bf
    return out


def mark_out_of_reach(tests: pd.DataFrame) -> pd.DataFrame:
    """Design power is not printed where no head could reach tau: rows whose mean ceiling (``score_ceiling``,
    the mean score a perfect head would get on the head's inputs, METHODS 1.6) is at or below ``tau`` get NaN
    ``mde``, ``mde_score``, ``power`` and ``n_for_power`` and the note saying why. (The t-test's power
    there is about 1 against an effect of 0.5 sd that the scores cannot have: a number with no meaning.)
    Rows without a ceiling are left as they are. Returns a copy."""
    out = tests.copy()
    if "score_ceiling" not in out or not len(out):
        return out
    ceiling = out["score_ceiling"].to_numpy(float)
    tau = out["tau"].to_numpy(float)
    with np.errstate(invalid="ignore"):
        cannot = np.isfinite(ceiling) & (ceiling <= tau)
    for column in ("mde", "mde_score", "power", "n_for_power"):
        if column in out:
            out.loc[cannot, column] = np.nan
    if "power_note" in out:
        notes = out["power_note"].astype(object).to_numpy().copy()
        for i in np.nonzero(cannot)[0]:
            notes[i] = (f"no power: tau {tau[i]:g} is at or above the mean ceiling {ceiling[i]:.3g} of this head's "
                        "inputs, so no head can reach it")
        out["power_note"] = notes
    return out


def underpowered(tests: pd.DataFrame, *, power_target: float = 0.8) -> pd.DataFrame:
    """Heads not assigned whose test had power below ``power_target`` at the effect of interest.

    Equivalently ``mde > effect_of_interest``: the test could not have detected an effect of the declared
    size, so the head's non-assignment is uninformative about such effects; ``n_for_power`` is the number
    of inputs that would give ``power_target``. Whether the head's *observed* mean lies above tau plays no
    part (that would make the list a function of the p-value again). Sorted by ``mde``, largest first.
    """
    mask = ~tests["reject"].astype(bool) & tests["p_unc"].notna() & (tests["power"] < power_target)
    return tests.loc[mask].sort_values(["mde", "p_unc"], ascending=[False, True], na_position="last").reset_index(
        drop=True)


def power_summary(tests: pd.DataFrame, *, power_target: float = 0.8) -> pd.DataFrame:
    """Per (model, dataset, role): heads assigned, not assigned, and how many of those are underpowered.

    Columns :data:`POWER_SUMMARY_COLUMNS`: ``median_n`` is the median number of participating inputs,
    ``median_mde`` the median minimum detectable effect (standardised) over the role's heads,
    ``max_n_for_power`` the largest ``n_for_power`` among the underpowered heads (the inputs a protocol
    would need so that each of them had ``power_target`` at the effect of interest).
    """
    under = underpowered(tests, power_target=power_target)
    keys = ["model", "dataset", "role"]
    base = tests.groupby(keys, sort=True, observed=True).agg(
        n_heads=("reject", "size"), n_assigned=("reject", "sum"), median_n=("n", "median"),
        median_mde=("mde", "median"),
    )
    u = under.groupby(keys, sort=True, observed=True).agg(
        n_underpowered=("reject", "size"), max_n_for_power=("n_for_power", "max")
    )
    out = base.join(u, how="left").reset_index()
    out["n_assigned"] = out["n_assigned"].astype(int)
    out["n_not_assigned"] = out["n_heads"] - out["n_assigned"]
    out["n_underpowered"] = out["n_underpowered"].fillna(0).astype(int)
    out["effect_of_interest"] = float(tests["effect_of_interest"].iloc[0]) if len(tests) else np.nan
    out["power_target"] = float(power_target)
    return out.loc[:, list(POWER_SUMMARY_COLUMNS)]
