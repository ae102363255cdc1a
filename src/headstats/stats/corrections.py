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
