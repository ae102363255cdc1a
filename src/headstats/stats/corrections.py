"""Multiple-comparison corrections, NaN-safe, through one registry.

Every method is delegated to :func:`statsmodels.stats.multitest.multipletests` with an explicit
``method=`` (statsmodels defaults to Holm-Sidak, not Holm). Only the finite p-values form the family:
a NaN p-value (no participating input) stays NaN and neither counts in nor poisons the correction.
"""

from __future__ import annotations

import numpy as np
from statsmodels.stats.multitest import multipletests

from headstats.errors import HeadstatsError

#: headstats name -> statsmodels ``method`` (None: no correction, to reproduce the paper's code).
CORRECTIONS: dict[str, str | None] = {
    "holm": "holm",
    "bonferroni": "bonferroni",
    "fdr_bh": "fdr_bh",
    "fdr_by": "fdr_by",
    "none": None,
}


def list_corrections() -> list[str]:
    """Names a protocol may give as ``correction``."""
    return list(CORRECTIONS)


def check_correction(name: str) -> str:
    """Return ``name`` if it is a known correction, else raise an error that lists the known ones."""
    if name not in CORRECTIONS:
        raise HeadstatsError(f"unknown correction {name!r}; choose one of {', '.join(CORRECTIONS)}")
    return name


def correct_pvalues(p_values, method: str = "holm", alpha: float = 0.05) -> np.ndarray:
    """Adjust p-values over one family, leaving NaNs out of it.

    Parameters
    ----------
    p_values : array_like
        Uncorrected p-values of one family; NaN where a hypothesis had no data.
    method : {"holm", "bonferroni", "fdr_bh", "fdr_by", "none"}
        Holm (1979) step-down FWER; Bonferroni ``min(1, m p)``; Benjamini-Hochberg (1995) FDR;
        Benjamini-Yekutieli (2001) FDR under dependence; ``none`` returns the p-values unchanged.
    alpha : float
        Passed to statsmodels (affects only its reject flags, not the adjusted values).

    Returns
    -------
    numpy.ndarray
        Adjusted p-values, same shape, NaN where the input was NaN. ``m`` is the number of finite p-values.
    """
    check_correction(method)
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    finite = np.isfinite(p)
    if not finite.any():
        return out
    sm_method = CORRECTIONS[method]
    if sm_method is None:
        out[finite] = p[finite]
    else:
        out[finite] = multipletests(p[finite], alpha=alpha, method=sm_method)[1]
    return out


def correct_pvalues_rows(p_values, method: str = "holm") -> np.ndarray:
    r"""Adjust each row of a 2-D array as its own family, vectorised; NaNs are left out of their row.

    The same adjusted values as :func:`correct_pvalues` (and statsmodels' ``multipletests``) row by row,
    for simulations with thousands of families. With the m finite p-values of a row sorted,
    :math:`p_{(1)} \le \dots \le p_{(m)}`:

    * ``bonferroni``: :math:`\min(1, m p_{(i)})`
    * ``holm``: :math:`\min(1, \max_{j \le i} (m - j + 1) p_{(j)})`
    * ``fdr_bh``: :math:`\min(1, \min_{j \ge i} m p_{(j)} / j)`
    * ``fdr_by``: as ``fdr_bh`` times :math:`c_m = \sum_{k=1}^m 1/k`
    * ``none``: unchanged.
    """
    check_correction(method)
    p = np.array(p_values, dtype=float, ndmin=2)
    if p.ndim != 2:
        raise ValueError(f"p_values must be 1-D or 2-D, got shape {p.shape}")
    if method == "none":
        return p.copy()
    finite = np.isfinite(p)
    m = finite.sum(axis=1, keepdims=True).astype(float)
    order = np.argsort(np.where(finite, p, np.inf), axis=1, kind="stable")
    ps = np.take_along_axis(np.where(finite, p, np.nan), order, axis=1)
    rank = np.arange(1, p.shape[1] + 1, dtype=float)[None, :]
    if method == "bonferroni":
        adj = ps * m
    elif method == "holm":
        adj = np.maximum.accumulate(np.where(np.isnan(ps), -np.inf, ps * (m - rank + 1)), axis=1)
    else:  # fdr_bh, fdr_by
        scale = m / rank
        if method == "fdr_by":
            cm = np.array([np.sum(1.0 / np.arange(1, int(k) + 1)) for k in m.ravel()])[:, None]
            scale = scale * cm
        raw = np.where(np.isnan(ps), np.inf, ps * scale)
        adj = np.minimum.accumulate(raw[:, ::-1], axis=1)[:, ::-1]
    adj = np.where(np.isnan(ps), np.nan, np.minimum(adj, 1.0))
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=1)
    return out
