r"""Claims that some unit does X, valid under any per-head correction (METHODS 5.4).

An existence claim ("some head attends mostly to the previous token") tests the global null "no head does".
Its p-value must not reuse the p-values a protocol corrected over heads for another purpose: the smallest
Benjamini-Hochberg or uncorrected p over many heads is not a valid test of that null (with every previous-token
head exactly at H0 and other heads far from theirs, BH supports the claim 95 % of the time at alpha = 0.05).

- :func:`some_unit_p`: from the *uncorrected* per-unit p-values of X, Holm over the m units tested and the
  smallest adjusted p: ``min(1, m min_h p_h)``, which is the Bonferroni test of the global null and has level
  alpha under any dependence between the units.
- :func:`beats_every_p`: "some unit beats every baseline". Per unit the largest uncorrected p over the
  baselines (an intersection-union test: the unit beats all of them only if it beats each, Berger 1982), then
  :func:`some_unit_p` over the units.
- :func:`claims_correction`: the correction of the claims family: the per-head correction when it controls an
  error rate, Holm when the per-head correction is ``none`` (a run's claims are always corrected).
"""

from __future__ import annotations

import numpy as np

from headstats.stats.corrections import get_correction

__all__ = ["CLAIMS_FALLBACK_CORRECTION", "beats_every_p", "claims_correction", "some_unit_p"]

#: The correction of the claims family when the per-head correction is ``none``.
CLAIMS_FALLBACK_CORRECTION = "holm"


def some_unit_p(p_values) -> tuple[float, int]:
    r"""p of "some unit does X" from the uncorrected per-unit p-values, and the index of the unit that gives it.

    Holm's adjusted p-values over the m finite p-values; the claim's p is the smallest of them,
    :math:`\min(1, m \min_h p_h)` (Holm 1979; its first step is Bonferroni's). Level alpha for the global null
    "no unit does X" whatever the dependence between units. ``(nan, -1)`` when no p-value is finite.
    """
    p = np.asarray(p_values, dtype=float)
    finite = np.isfinite(p)
    if not finite.any():
        return float("nan"), -1
    m = int(finite.sum())
    index = int(np.nanargmin(np.where(finite, p, np.nan)))
    return float(min(1.0, m * p[index])), index


def beats_every_p(p_matrix) -> tuple[float, int]:
    r"""p of "some unit beats every baseline" from the uncorrected p-values, one row per unit, one column per
    baseline (each one-sided: the unit beats that baseline).

    Per unit :math:`q_h = \max_b p_{hb}` (intersection-union: level alpha for "the unit fails to beat some
    baseline", Berger 1982), then :func:`some_unit_p` over the units. A NaN (a baseline not tested for that unit:
    degenerate there, 0 or 1 by construction) is left out of the unit's max; a unit with no p is left out.
    """
    p = np.atleast_2d(np.asarray(p_matrix, dtype=float))
    finite = np.isfinite(p)
    per_unit = np.where(finite.any(axis=1), np.where(finite, p, -np.inf).max(axis=1), np.nan)
    return some_unit_p(per_unit)


def claims_correction(per_head: str) -> str:
    """The correction of the claims family: ``per_head`` when it controls an error rate (FWER or FDR),
    :data:`CLAIMS_FALLBACK_CORRECTION` when it is of kind ``none``."""
    return per_head if get_correction(per_head).kind != "none" else CLAIMS_FALLBACK_CORRECTION
