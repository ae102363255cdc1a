r"""Power, sample size and Bayes factors beside each test of a role.

For every hypothesis the standardised effect is Cohen's :math:`d = (\bar s - \tau) / s` (ddof = 1),
whatever the test. ``power`` is the power of the one-sided one-sample t-test at that d, with the observed N
and at the level ``power_alpha`` -- the uncorrected p-value below which one more head of the family would
have been assigned (:func:`headstats.stats.onesample.next_discovery_alpha`), so that the power respects the
correction. For ``wilcoxon``, ``sign``, ``bootstrap`` and ``permutation`` this is the t approximation (under
normal scores the signed-rank test has 95.5 % and the sign test 64 % of the t-test's efficiency; for heavy
tails they can do better).

Read ``power`` together with ``n_for_power``: the power at the *observed* effect is a function of the
p-value and says nothing new about a head that was assigned; its use is for the heads that were *not*
assigned although the point estimate is above tau. For those, ``n_for_power`` is the number of inputs that
would give ``power_target`` at the observed effect: "not assigned" may just mean "too few inputs".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.stats.effects import bayes_factor_two_sided, cohen_d, n_for_power_greater, power_ttest_greater

#: Columns of :func:`power_summary`.
POWER_SUMMARY_COLUMNS: tuple[str, ...] = (
    "model", "dataset", "role", "n_heads", "n_assigned", "n_not_assigned", "n_underpowered",
    "median_n", "max_n_for_power", "power_target",
)


def add_power(tests: pd.DataFrame, *, power_target: float = 0.8) -> pd.DataFrame:
    r"""Add ``power``, ``n_for_power`` and ``bf10_two_sided`` to a table of tests.

    Parameters
    ----------
    tests : pandas.DataFrame
        Needs ``mean, sd, tau, n, power_alpha`` and ``p_unc`` (rows with NaN ``p_unc`` -- too few inputs --
        get NaN everywhere).
    power_target : float
        Power for which ``n_for_power`` is solved.

    Returns
    -------
    pandas.DataFrame
        A copy with ``power`` (:math:`P(T_{n-1}(d\sqrt n) > t_{1-a,n-1})`, a = ``power_alpha``),
        ``n_for_power`` (smallest n reaching ``power_target``; NaN where d <= 0, undefined, or n > 1e7) and
        ``bf10_two_sided`` (JZS, r = 0.707, of :math:`t = d \sqrt n`).
    """
    out = tests.copy()
    g = len(out)
    d = cohen_d(out["mean"].to_numpy(float), out["sd"].to_numpy(float), out["tau"].to_numpy(float))
    n = out["n"].to_numpy(float)
    valid = np.isfinite(out["p_unc"].to_numpy(float)) & np.isfinite(d)
    a = out["power_alpha"].to_numpy(float)
    power = np.full(g, np.nan)
    n_needed = np.full(g, np.nan)
    for level in np.unique(a[valid & np.isfinite(a)]):
        rows = valid & (a == level)
        power[rows] = power_ttest_greater(d[rows], n[rows], alpha=float(level))
        n_needed[rows] = n_for_power_greater(d[rows], power=power_target, alpha=float(level))
    t = d * np.sqrt(n)
    bf = np.full(g, np.nan)
    bf[valid] = bayes_factor_two_sided(t[valid], n[valid])
    out["power"] = power
    out["n_for_power"] = n_needed
    out["bf10_two_sided"] = bf
    return out


def underpowered(tests: pd.DataFrame, *, power_target: float = 0.8) -> pd.DataFrame:
    """Heads not assigned although their mean is above tau, with power below ``power_target``.

    These are the heads whose non-assignment "may just mean too few inputs"; ``n_for_power`` says how many
    inputs a protocol would need (NaN when more than 1e7). Sorted by ``n_for_power``.
    """
    mask = (
        ~tests["reject"].astype(bool)
        & (tests["mean"] > tests["tau"])
        & tests["p_unc"].notna()
        & (tests["power"] < power_target)
    )
    return tests.loc[mask].sort_values(["n_for_power", "p_unc"], na_position="last").reset_index(drop=True)


def power_summary(tests: pd.DataFrame, *, power_target: float = 0.8) -> pd.DataFrame:
    """Per (model, dataset, role): heads assigned, not assigned, and how many of those are underpowered.

    Columns :data:`POWER_SUMMARY_COLUMNS`: ``median_n`` is the median number of participating inputs,
    ``max_n_for_power`` the largest finite ``n_for_power`` among the underpowered heads (the inputs a protocol
    would need so that each of them had ``power_target`` at its observed effect).
    """
    under = underpowered(tests, power_target=power_target)
    keys = ["model", "dataset", "role"]
    base = tests.groupby(keys, sort=True, observed=True).agg(
        n_heads=("reject", "size"), n_assigned=("reject", "sum"), median_n=("n", "median")
    )
    u = under.groupby(keys, sort=True, observed=True).agg(
        n_underpowered=("reject", "size"), max_n_for_power=("n_for_power", "max")
    )
    out = base.join(u, how="left").reset_index()
    out["n_assigned"] = out["n_assigned"].astype(int)
    out["n_not_assigned"] = out["n_heads"] - out["n_assigned"]
    out["n_underpowered"] = out["n_underpowered"].fillna(0).astype(int)
    out["power_target"] = float(power_target)
    return out.loc[:, list(POWER_SUMMARY_COLUMNS)]
