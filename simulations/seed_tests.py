"""Simulations of the tests over seeds (docs/statistics.md, "Seeds as replicates"): the error rate at nominal
level of the per-input and the per-seed tests when runs differ (:func:`simulate_seed_type1`), and the level and
power of the plain t, the moderated t and the sign-flip test at the corrected level (:func:`simulate_moderated_level`).
``seeds_type1.py`` and ``moderated_t.py`` print the tables of the docs from them.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats as sps

from headstats.errors import HeadstatsError
from headstats.stats.corrections import correct_pvalues, reject
from headstats.stats.seeds import moderated_t_over_seeds, signflip_over_seeds, t_over_seeds


def simulate_seed_type1(
    *,
    n_sim: int = 1000,
    seeds: int = 3,
    inputs: int = 300,
    sd_seed: float = 0.1,
    sd_input: float = 1.0,
    alpha: float = 0.05,
    mixed: bool = True,
    mixed_sims: int | None = None,
    rng_seed: int = 0,
) -> pd.DataFrame:
    """Rejection rates at nominal ``alpha`` under H0 (fine-tuning does not move the head on average).

    Each simulated head has per-input changes ``d_si = u_s + e_si`` for seeds s = 1..k and inputs
    i = 1..n, with a run effect ``u_s ~ N(0, sd_seed^2)`` (what any fine-tuning run moves the head by
    chance) and input noise ``e_si ~ N(0, sd_input^2)``; the true mean change is 0. Tested two-sided:

    - ``paired_inputs_one_seed``: the paired t-test over the n inputs of seed 1 alone (today's per-input
      comparison, one run per task);
    - ``paired_inputs_pooled``: the t-test over all k n changes as if they were independent;
    - ``t_over_seeds``: :func:`~headstats.stats.seeds.t_over_seeds` of the k per-seed means;
    - ``signflip_over_seeds``: :func:`~headstats.stats.seeds.signflip_over_seeds` (never below its floor);
    - ``mixedlm_wald``: statsmodels ``MixedLM`` (``d ~ 1``, seed as random intercept, REML), the Wald z
      test of the intercept that statsmodels reports (on ``mixed_sims`` of the simulations; it is slow).

    Returns
    -------
    DataFrame
        ``method, n_sim, rejection_rate, mc_se, alpha, seeds, inputs, sd_seed, sd_input``; ``mc_se`` is the
        Monte Carlo standard error ``sqrt(r (1 - r) / n_sim)``.
    """
    rng = np.random.default_rng(rng_seed)
    u = rng.normal(0.0, sd_seed, size=(n_sim, seeds, 1))
    e = rng.normal(0.0, sd_input, size=(n_sim, seeds, inputs))
    d = u + e
    one = d[:, 0, :]
    p_one = sps.ttest_1samp(one, 0.0, axis=1).pvalue
    p_pool = sps.ttest_1samp(d.reshape(n_sim, -1), 0.0, axis=1).pvalue
    means = d.mean(2).T  # (k, n_sim)
    p_t = t_over_seeds(means)["p"]
    p_sf = signflip_over_seeds(means)
    rows = [("paired_inputs_one_seed", p_one), ("paired_inputs_pooled", p_pool), ("t_over_seeds", p_t),
            ("signflip_over_seeds", p_sf)]
    if mixed:
        rows.append(("mixedlm_wald", _mixedlm_pvalues(d[: mixed_sims or n_sim])))
    out = []
    for method, p in rows:
        p = np.asarray(p, dtype=float)
        p = p[np.isfinite(p)]
        r = float(np.mean(reject(p, alpha))) if p.size else math.nan
        out.append({"method": method, "n_sim": int(p.size), "rejection_rate": r,
                    "mc_se": math.sqrt(r * (1 - r) / p.size) if p.size else math.nan, "alpha": alpha,
                    "seeds": seeds, "inputs": inputs, "sd_seed": sd_seed, "sd_input": sd_input})
    return pd.DataFrame(out)


def simulate_moderated_level(
    *,
    seeds: int = 3,
    cells: int = 720,
    n_sim: int = 200,
    run_effect: str = "normal",
    df_true: float = 4.0,
    effect: float = 0.0,
    planted: int = 0,
    alpha: float = 0.05,
    rng_seed: int = 0,
) -> pd.DataFrame:
    """Error rates and power of the tests over seeds at the corrected level, on simulated head x role cells.

    Each simulation draws ``cells`` true seed-to-seed variances ``sigma_c^2 = s0^2 d0 / chi2_{d0}`` (limma's
    prior, ``d0 = df_true``, ``s0 = 1``; ``df_true = inf``: all equal) and per cell ``seeds`` run effects with
    that variance: ``normal``, or ``skewed`` (a centred exponential, skewness 2), mean 0; the first
    ``planted`` cells are moved by ``effect`` times their sd. Every cell is tested two-sided with the plain t
    (:func:`~headstats.stats.seeds.t_over_seeds`), the moderated t (:func:`~headstats.stats.seeds.moderated_t_over_seeds`) and the sign-flip test, and
    the family is corrected with Holm.

    Returns
    -------
    DataFrame
        Per method: ``rate_at_level`` (the share of null cells with uncorrected p <= alpha / cells, against
        ``level = alpha / cells``), ``ratio`` (rate / level), ``fwer`` (the share of simulations in which Holm
        rejects a null cell), ``power`` (the share of planted cells Holm rejects; NaN without planted cells),
        with ``seeds, cells, n_sim, run_effect, df_true, effect``.
    """
    rng = np.random.default_rng(rng_seed)
    level = alpha / cells
    methods = {"t": t_over_seeds, "moderated_t": moderated_t_over_seeds, "signflip": None}
    hits = {m: 0 for m in methods}
    fwer = {m: 0 for m in methods}
    found = {m: 0 for m in methods}
    nulls = cells - planted
    for _ in range(n_sim):
        sd = (np.ones(cells) if math.isinf(df_true) else np.sqrt(df_true / rng.chisquare(df_true, size=cells)))
        if run_effect == "normal":
            z = rng.standard_normal((seeds, cells))
        elif run_effect == "skewed":
            z = rng.exponential(1.0, (seeds, cells)) - 1.0
        else:
            raise HeadstatsError(f"run_effect must be 'normal' or 'skewed', not {run_effect!r}")
        v = z * sd
        v[:, :planted] += effect * sd[:planted]
        for name, fn in methods.items():
            p = signflip_over_seeds(v) if fn is None else fn(v)["p"]
            p = np.where(np.isfinite(p), p, 1.0)
            hits[name] += int(np.sum(reject(p[planted:], level)))
            rej = reject(correct_pvalues(p, "holm"), alpha)  # statsmodels' Holm bit for bit, without its gc
            fwer[name] += int(rej[planted:].any())
            found[name] += int(rej[:planted].sum())
    rows = []
    for name in methods:
        rate = hits[name] / (n_sim * nulls)
        rows.append({"method": name, "seeds": seeds, "cells": cells, "n_sim": n_sim, "run_effect": run_effect,
                     "df_true": df_true, "effect": effect, "level": level, "rate_at_level": rate,
                     "ratio": rate / level, "fwer": fwer[name] / n_sim,
                     "power": found[name] / (n_sim * planted) if planted else math.nan})
    return pd.DataFrame(rows)


def _mixedlm_pvalues(d: np.ndarray) -> np.ndarray:
    """Wald p-values of the intercept of ``d ~ 1 + (1 | seed)`` (statsmodels MixedLM, REML), one per simulation."""
    import statsmodels.api as sm

    n_sim, k, n = d.shape
    groups = np.repeat(np.arange(k), n)
    exog = np.ones((k * n, 1))
    out = np.full(n_sim, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n_sim):
            try:
                fit = sm.MixedLM(d[i].ravel(), exog, groups=groups).fit(reml=True)
                out[i] = float(fit.pvalues[0])
            except (np.linalg.LinAlgError, ValueError):
                continue
    return out
