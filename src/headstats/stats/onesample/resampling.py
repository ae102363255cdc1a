"""How many resamples a family of hypotheses needs, so that a resampling test can reach the corrected level."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from headstats.errors import HeadstatsError
from headstats.stats import corrections as _corr
from headstats.stats.corrections import correct_pvalues, family_labels as _family_labels
from headstats.stats.matrix import HYPOTHESIS_KEYS, ScoreMatrix

#: ``n_resamples: auto`` draws at least this many resamples.
MIN_AUTO_RESAMPLES = 9999
#: ``n_resamples: auto`` makes the smallest attainable corrected p-value this many times smaller than alpha.
AUTO_RESAMPLES_MARGIN = 10



# ----------------------------------------------------------------------------------------------------------
# how many resamples a family needs
# ----------------------------------------------------------------------------------------------------------
def _correction_factor(m: int, correction: str) -> float:
    """``f`` such that one p-value ``p`` among m (the others 1) is corrected to ``f * p`` for small p.

    ``m`` for Bonferroni, Holm and Benjamini-Hochberg, ``m * sum(1/i)`` for Benjamini-Yekutieli, 1 for
    ``none``; a registered correction is asked (:func:`correct_pvalues` at p = 1e-12).
    """
    if m <= 0:
        return 1.0
    p0 = 1e-12
    trial = np.ones(int(m))
    trial[0] = p0
    return float(correct_pvalues(trial, method=correction, alpha=0.05)[0]) / p0


def resamples_needed(m: int, *, alpha: float, correction: str) -> int:
    r"""The fewest resamples B with which a resampling test can reject at all in a family of m.

    A Monte Carlo p-value is at least :math:`1 / (B + 1)`; the correction turns it into at least
    :math:`f / (B + 1)` (:math:`f = m` for Holm, Bonferroni and Benjamini-Hochberg, :math:`m c_m` for
    Benjamini-Yekutieli), and a head is assigned when that is ``<= alpha``: :math:`B + 1 \ge f / \alpha`.
    """
    f = _correction_factor(m, correction)
    b = max(1, math.ceil(f / alpha - 1e-9) - 1)
    while correct_pvalues(np.r_[1.0 / (b + 1), np.ones(max(int(m) - 1, 0))], method=correction)[0] > alpha:
        b += 1
    return int(b)


def auto_resamples(m: int, *, alpha: float, correction: str) -> int:
    r"""``n_resamples: auto``: enough resamples that a decision is possible with room to spare.

    :math:`B = \max(9999, \lceil 10 f / \alpha \rceil - 1)`: the smallest attainable corrected p-value is
    alpha / 10 (:data:`AUTO_RESAMPLES_MARGIN`), so a head whose exact p-value lies at half the corrected
    level is still assigned with probability about 0.97 (Poisson(5) <= 9) despite the Monte Carlo error.
    With Holm over the 720 hypotheses of the quickstart at alpha = 0.05 this is 143,999.
    """
    f = _correction_factor(m, correction)
    return int(max(MIN_AUTO_RESAMPLES, math.ceil(AUTO_RESAMPLES_MARGIN * f / alpha) - 1))


def family_sizes(mat: ScoreMatrix, family: Sequence[str], *, min_n: int = 2) -> pd.Series:
    """Hypotheses with a p-value (n >= ``min_n``) per family label of ``mat``."""
    labels = _family_labels(mat.keys, _corr.check_family(family, HYPOTHESIS_KEYS))
    return labels[mat.n >= max(min_n, 1)].value_counts()


def resolve_n_resamples(
    n_resamples, mat: ScoreMatrix, *, family: Sequence[str], alpha: float, correction: str, min_n: int = 2
) -> int:
    """``n_resamples`` as a number: ``auto`` becomes :func:`auto_resamples` of the largest family."""
    if isinstance(n_resamples, str):
        if n_resamples != "auto":
            raise HeadstatsError(f"n_resamples must be an integer >= 1 or 'auto', got {n_resamples!r}")
        sizes = family_sizes(mat, family, min_n=min_n)
        m = int(sizes.max()) if len(sizes) else 1
        return auto_resamples(m, alpha=alpha, correction=correction)
    return n_resamples
