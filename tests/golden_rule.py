"""How a golden table is compared: each column at the precision it really carries.

The quickstart's scores are float32 sums; another CPU, BLAS kernel, thread count or batch size sums them in
another order and moves a score by a few units in its sixth significant digit (measured against the golden
scores: at most 1.57e-5 of ``|score|``, relative, at batch sizes 32, 8 and 1; ``tests/golden/differences.py``
prints it). Every statistic is a smooth function of the scores, so its tolerance is that perturbation carried
through the function (its conditioning), never one relative tolerance for all columns:

- ``DELTA`` bounds the perturbation of one score: ``|ds| <= DELTA * |s|`` (about 3.2 times the largest
  measured change). For a head, ``delta = DELTA * (|mean| + sd)`` bounds the change of ``mean``, ``median`` and
  ``sd`` (``mean |s| <= RMS(s) <= |mean| + sd``).
- A bound ``mean +- c sd / sqrt(n)`` moves by ``delta (1 + c / sqrt(n))``, ``c = |bound - mean| / (sd / sqrt(n))``.
- ``t = (mean - tau) sqrt(n) / sd`` moves by ``dt = delta (sqrt(n) + |t|) / sd``; Cohen's
  ``d = (mean - tau) / sd`` by ``delta (1 + |d|) / sd``; the sample skewness by ``6 delta (2 + |g|) / sd``.
- A one-sided t p-value is compared as ``ln p``: ``|d ln p / dt|`` is the hazard ``f(t) / S(t)`` of Student's
  t, increasing in t, so ``ln p`` moves by at most ``hazard(t + dt) * dt``. A corrected p-value
  (Holm, Bonferroni, BH, BY: products by constants, running maxima or minima, a cap at 1) moves in ``ln`` by at
  most the largest move of the family's ``ln p_unc``.
- The JZS Bayes factor is compared as ``log10 BF10``: with ``nu = n - 1``, ``0 <= d ln BF10 / dt <=
  (nu + 1) |t| / (nu + t^2)`` (the denominator's derivative; the numerator only lowers it), so ``log10 BF10``
  moves by at most ``max over [|t| - dt, |t| + dt]`` of that bound, times ``dt / ln 10``.
- Columns that depend on ``n``, the design or the protocol only (``dof``, ``power``, ``n_for_power``, ``mde``,
  ``tau``, ``alpha``, ...) are compared to 1e-12 relative; text, integer and boolean columns exactly.
- Decisions (``reject``, the roles in ``roles.csv``) are compared exactly, except for a head whose corrected
  p-value lies within its tolerance of ``alpha``: then either decision is right, and the test says which
  heads it let through (none, on the quickstart).

This module is the rule in code; ``tests/golden/README.md`` states it for readers of the golden tables.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

#: the bound on a float32 score's change under another summation order, relative to ``max(1, |score|)``
DELTA = 5e-5
#: columns that are the same to the last bit whatever the summation order (functions of n and the design)
EXACT_FLOATS = {"tau", "dof", "alpha", "confidence", "power", "n_for_power", "effect_of_interest", "mde",
                "power_alpha", "seed", "n_resamples", "confidence_adj", "offset_n"}


def _text(column: pd.Series) -> list[str]:
    """A column as text, missing values as ``""`` (``astype(str)`` keeps them as NaN under pandas' str dtype)."""
    return column.astype(object).where(column.notna(), "").astype(str).tolist()


def score_tolerance(golden: np.ndarray) -> np.ndarray:
    """The largest change another summation order may make to each float32 score."""
    return DELTA * np.abs(golden)


def _hazard(t: np.ndarray, dof: np.ndarray) -> np.ndarray:
    """``f(t) / S(t)`` of Student's t: the derivative of ``-ln p`` for an upper-tail p-value."""
    return np.exp(stats.t.logpdf(t, dof) - stats.t.logsf(t, dof))


def _bf_slope(t: np.ndarray, dt: np.ndarray, dof: np.ndarray) -> np.ndarray:
    """The largest ``(nu + 1) |t| / (nu + t^2)`` over ``[|t| - dt, |t| + dt]`` (peak at ``|t| = sqrt(nu)``)."""
    low, high = np.maximum(np.abs(t) - dt, 0.0), np.abs(t) + dt

    def slope(x):
        return (dof + 1) * x / (dof + x**2)

    peak = np.sqrt(dof)
    inside = (low <= peak) & (peak <= high)
    return np.where(inside, slope(peak), np.maximum(slope(low), slope(high)))


def tolerances(golden: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per-row absolute tolerances of each float column of a golden ``tests.csv`` (``ln`` / ``log10`` scale
    for ``p_unc``, ``p_corr`` and ``bf10_two_sided``)."""
    if set(golden["test"].unique()) != {"t"}:
        raise ValueError("the golden rule carries errors through the one-sample t-test only; extend it for "
                         f"{sorted(set(golden['test'].unique()) - {'t'})}")
    mean, sd, n = (golden[c].to_numpy(float) for c in ("mean", "sd", "n"))
    t, d, dof = (golden[c].to_numpy(float) for c in ("statistic", "effect_size", "dof"))
    delta = DELTA * (np.abs(mean) + sd)
    with np.errstate(divide="ignore", invalid="ignore"):
        dt = delta * (np.sqrt(n) + np.abs(t)) / sd
        tol = {name: delta for name in ("mean", "median", "sd", "mde_score")}
        for bound in ("ci_low", "ci_high", "ci_low_adj", "ci_high_adj"):
            c = np.abs(golden[bound].to_numpy(float) - mean) / (sd / np.sqrt(n))
            tol[bound] = delta * (1.0 + np.nan_to_num(c, posinf=0.0))
        tol["statistic"] = dt
        tol["effect_size"] = delta * (1.0 + np.abs(d)) / sd
        tol["skewness"] = 6.0 * delta * (2.0 + np.abs(golden["skewness"].to_numpy(float))) / sd
        if "score_ceiling" in golden:
            tol["ceiling_share"] = delta / golden["score_ceiling"].to_numpy(float)
            tol["score_ceiling"] = 1e-6 * np.abs(golden["score_ceiling"].to_numpy(float))  # lengths, float32
        tol["p_unc"] = _hazard(t + dt, dof) * dt
        tol["p_corr"] = _corrected_tolerance(golden, tol["p_unc"])
        tol["bf10_two_sided"] = _bf_slope(t, dt, dof) * dt / math.log(10)
        if "offset_excess" in golden:
            tol.update(_offset_tolerances(golden, mean, sd))
    return tol


def _offset_tolerances(golden: pd.DataFrame, mean: np.ndarray, sd: np.ndarray) -> dict[str, np.ndarray]:
    """The offset control's columns (METHODS 6.2), by the same rule: an input's excess is a mean of ``b - c``,
    the arc's bias and its offset control, each moved by at most ``DELTA`` of itself; ``|b|`` is bounded as the
    role's scores are (``|mean| + sd``, twice for the slack of averaging over fewer arcs) and ``|c| <= |b| + |e|``,
    so ``delta_e = DELTA (2 (|mean| + sd) + |e| + sd_e)``; ``sd_e`` is read off the one-sided bound,
    ``(e - ci_low) sqrt(n_e) / t_q``. The bound, t, ln p and the corrected ln p follow as for the scores' test."""
    e, low, n = (golden[c].to_numpy(float) for c in ("offset_excess", "offset_ci_low", "offset_n"))
    q = stats.t.ppf(golden["confidence"].to_numpy(float), n - 1)
    sd_e = (e - low) * np.sqrt(n) / q
    delta = DELTA * (2.0 * (np.abs(mean) + sd) + np.abs(e) + sd_e)
    t = e * np.sqrt(n) / sd_e
    dt = delta * (np.sqrt(n) + np.abs(t)) / sd_e
    ln_p = _hazard(t + dt, n - 1) * dt
    return {"offset_excess": delta, "offset_ci_low": delta * (1.0 + q), "offset_p_unc": ln_p,
            "offset_p_corr": _corrected_tolerance(golden, ln_p, column="offset_p_unc")}


def _corrected(p: np.ndarray, method: str) -> np.ndarray:
    """``p`` corrected by ``method`` over its finite entries (NaN stays NaN)."""
    out = np.full_like(p, np.nan)
    finite = np.isfinite(p)
    out[finite] = p[finite] if method == "none" else multipletests(p[finite], method=method)[1]
    return out


def _corrected_tolerance(golden: pd.DataFrame, ln_tol: np.ndarray, column: str = "p_unc") -> np.ndarray:
    """The ``ln p_corr`` tolerance: every correction is non-decreasing in each raw p-value, so the corrected
    p-values of ``p_unc * exp(-tol)`` and of ``p_unc * exp(+tol)`` bound those of any raw p-values within
    their tolerance (``column``: the raw p-values, ``offset_p_unc`` for the offset control's)."""
    p = golden[column].to_numpy(float)
    low, high = np.exp(np.log(p) - ln_tol), np.minimum(1.0, np.exp(np.log(p) + ln_tol))
    out = np.full_like(p, np.nan)
    for (family, method), rows in golden.groupby(["family", "correction"]).indices.items():
        corrected = _corrected(p[rows], method)
        with np.errstate(divide="ignore"):
            out[rows] = np.maximum(np.log(_corrected(high[rows], method)) - np.log(corrected),
                                   np.log(corrected) - np.log(_corrected(low[rows], method)))
    return out


def _log(values: np.ndarray, base: str) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(values) if base == "e" else np.log10(values)


def compare_scores(new: pd.DataFrame, old: pd.DataFrame) -> float:
    """Assert the scores agree within :func:`score_tolerance`; returns the largest change relative to it."""
    assert list(new.columns) == list(old.columns)
    assert len(new) == len(old)
    for column in old.columns:
        if column != "score":
            assert _text(new[column]) == _text(old[column]), column
    a, b = new["score"].to_numpy(float), old["score"].to_numpy(float)
    assert np.array_equal(np.isnan(a), np.isnan(b)), "scores: NaN in other places"
    used = np.abs(a - b)[~np.isnan(b)] / score_tolerance(b[~np.isnan(b)])
    assert used.max(initial=0.0) <= 1.0, f"scores: a change of {used.max():.3g} times the tolerance"
    return float(used.max(initial=0.0))


def borderline(golden: pd.DataFrame, columns: tuple[str, ...] = ("p_corr", "offset_p_corr")) -> np.ndarray:
    """Rows whose corrected p-value, of the score test or of the offset control (``columns``), lies within its
    tolerance of alpha (either decision is right)."""
    tol = tolerances(golden)
    out = np.zeros(len(golden), bool)
    for column in columns:  # a decision of the score test or of the offset gate
        if column in golden:
            with np.errstate(divide="ignore", invalid="ignore"):
                distance = np.abs(np.log(golden[column].to_numpy(float)) - np.log(golden["alpha"].to_numpy(float)))
            out |= distance <= tol[column]
    return out


def compare_tests(new: pd.DataFrame, old: pd.DataFrame) -> dict[str, float]:
    """Assert a ``tests.csv`` agrees with its golden copy column by column (see the module's rule).

    Returns, per float column, the largest change as a share of its tolerance (``<= 1`` passes), for the
    record of how much room each column had.
    """
    assert list(new.columns) == list(old.columns)
    assert len(new) == len(old)
    tol = tolerances(old)
    loose = borderline(old)
    used: dict[str, float] = {}
    for column in old.columns:
        a, b = new[column], old[column]
        if column in ("reject", "offset_reject", "gate_removed"):  # the decisions
            same = (np.array(_text(a)) == np.array(_text(b))) | loose
            assert same.all(), f"{column} differs for rows {np.flatnonzero(~same).tolist()}"
        elif not pd.api.types.is_float_dtype(b):
            assert _text(a) == _text(b), column
        elif column in EXACT_FLOATS:
            np.testing.assert_allclose(a.to_numpy(float), b.to_numpy(float), rtol=1e-12, atol=0, err_msg=column)
        else:
            x, y = a.to_numpy(float), b.to_numpy(float)
            if column in ("p_unc", "p_corr", "offset_p_unc", "offset_p_corr"):
                x, y = _log(x, "e"), _log(y, "e")
            elif column == "bf10_two_sided":
                x, y = _log(x, "10"), _log(y, "10")
            assert np.array_equal(np.isnan(x), np.isnan(y)), f"{column}: NaN in other places"
            assert np.array_equal(np.isinf(x), np.isinf(y)), f"{column}: infinities in other places"
            finite = np.isfinite(y)
            assert np.array_equal(x[~finite], y[~finite], equal_nan=True), f"{column}: infinities of another sign"
            if not finite.any():
                continue  # an empty column (``note`` when no head needs one) read as float
            if column not in tol:
                raise AssertionError(f"no tolerance rule for the float column {column!r}: add one to golden_rule")
            change = np.abs(x[finite] - y[finite])
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(change == 0, 0.0, change / tol[column][finite])
            worst = float(np.nanmax(share, initial=0.0))
            assert worst <= 1.0, (f"{column}: row {np.flatnonzero(finite)[np.nanargmax(share)]} changed by "
                                  f"{worst:.3g} times its tolerance")
            used[column] = worst
    return used


def compare_roles(new: pd.DataFrame, old: pd.DataFrame, golden_tests: pd.DataFrame) -> list[tuple]:
    """Assert ``roles.csv`` agrees exactly, except cells of borderline heads; returns the cells let through."""
    assert list(new.columns) == list(old.columns)
    assert len(new) == len(old)
    keys = ["model", "dataset", "layer", "head"]
    loose = golden_tests.loc[borderline(golden_tests), keys + ["role"]]
    loose_cells = {tuple(r) for r in loose.astype(str).itertuples(index=False)}
    let_through = []
    for column in old.columns:
        a, b = _text(new[column]), _text(old[column])
        for i, (x, y) in enumerate(zip(a, b)):
            if x == y:
                continue
            head = tuple(old.loc[i, keys].astype(str))
            roles = {cell[-1] for cell in loose_cells if cell[:4] == head}
            assert roles, f"roles.csv: {column} differs for head {head} ({x!r} vs {y!r}), not a borderline head"
            let_through.append((*head, column))
    return let_through
