"""The pieces :func:`~headstats.stats.onesample.test_roles` is made of: p-values alone, the full test per
hypothesis, the correction within families, the multiplicity-adjusted bounds and the resampling-floor note."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from headstats.stats import corrections as _corr
from headstats.stats.corrections import (
    check_correction,
    get_correction,
    correct_pvalues,
    correct_within_families,
    family_labels as _family_labels,
    reject,
)
from headstats.stats.matrix import HYPOTHESIS_KEYS, ScoreMatrix, by_tau, tau_rows
from headstats.stats.onesample.spec import ALTERNATIVE, OneSampleResult, get_test
from headstats.stats.onesample.builtin import _nan

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
    mat: ScoreMatrix, *, test: str, tau: float, confidence: float, seed: int, n_resamples: int, min_n: int,
    results: Sequence[tuple[np.ndarray, OneSampleResult]] | None = None,
) -> pd.DataFrame:
    """Uncorrected results of one test for every hypothesis of ``mat`` (no correction, power or BF); ``tau``
    one number, or one per hypothesis (as in :func:`run_pvalues`). ``results``: the test's result of each
    block of ``mat.blocks(min_n)`` (rows, result), already computed (a sequential run); else the test runs."""
    tau = tau_rows(mat.keys, tau)
    if np.ndim(tau) and results is None:
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
    given = iter(results) if results is not None else None
    for rows, x in mat.blocks(min_n=min_n):
        skewness[rows] = _skewness(x)
        if given is not None:
            done, res = next(given)
            assert np.array_equal(done, rows), "results must follow mat.blocks(min_n)"
        else:
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
    frame["tau"] = np.broadcast_to(np.asarray(tau, dtype=float), (g,))
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
    labels = _family_labels(out, _corr.check_family(family, HYPOTHESIS_KEYS))
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
    seed: int, n_resamples: int, min_n: int, bound_of: Callable[[np.ndarray, float], np.ndarray] | None = None,
) -> pd.DataFrame:
    """Add ``ci_low_adj, ci_high_adj, confidence_adj`` (:func:`adjusted_confidence`) to a corrected frame.

    The bound is the test's own lower bound (``ci_low``) at the adjusted level, row by row; ``ci_high_adj``
    is +inf where the bound is defined (one-sided), NaN where it is not (e.g. not selected under an FDR
    correction). ``bound_of(rows, level)``: the bounds of those rows at that level from draws already made
    (a sequential run, :meth:`~headstats.stats.onesample.sequential.SequentialRun.lower_bound`).
    """
    spec = get_test(test)
    out = frame.copy()
    level = adjusted_confidence(out, correction=correction, confidence=confidence)
    taus = np.broadcast_to(np.asarray(tau_rows(mat.keys, tau), dtype=float), (len(out),))
    low = _nan(len(out))
    for value in np.unique(level[np.isfinite(level)]):
        if bound_of is not None:
            cells = np.nonzero((level == value) & (mat.n >= max(min_n, 1)))[0]
            low[cells] = bound_of(cells, float(value))
            continue
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


def _note_resampling_floor(frame: pd.DataFrame, *, correction: str, alpha: float,
                           n_resamples: int | None = None) -> None:
    """Note, in place, families where a resampling test cannot reach ``p_corr <= alpha`` at all.

    A resampling p-value is at least ``1 / (B + 1)`` (or ``1 / 2^N`` when enumerated); in a family of m
    hypotheses Bonferroni and Holm then need ``B + 1 >= m / alpha`` (:func:`resamples_needed`).
    ``n_resamples``: the B every row could draw (a sequential run's rows that stopped drew fewer).
    """
    p = frame["p_unc"].to_numpy(float)
    drawn = frame["n_resamples"].to_numpy(dtype=float, na_value=np.nan)
    exact = frame["note"].str.startswith("exact").to_numpy() | frame["note"].str.contains("; exact").to_numpy()
    most = drawn if n_resamples is None else np.where(np.isfinite(drawn), float(n_resamples), np.nan)
    floor = np.where(exact, 1.0 / np.maximum(drawn, 1), 1.0 / (most + 1.0))
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
