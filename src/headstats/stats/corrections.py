r"""Multiple-comparison corrections and families, NaN-safe, through one registry whose entries carry behaviour.

A correction is a :class:`Correction` in :data:`CORRECTIONS`: its adjustment of one family of p-values, the
error rate it controls (``kind``: ``fwer``, ``fdr`` or ``none``), its statsmodels method, a description, a
vectorised row-by-row version (for simulations and the tau grid) and the rule for the level at which one
more hypothesis would be rejected (the level of the power columns). Everything that depends on "which
correction" asks the entry; there is no branch on names, so a registered correction is used everywhere and an
unknown one raises :class:`~headstats.errors.UnknownNameError`.

The built-ins are :func:`statsmodels.stats.multitest.multipletests` with an explicit ``method=`` (statsmodels
defaults to Holm-Sidak, not Holm), computed here with statsmodels' own operations, vectorised over families
and bit for bit equal (the tests compare them; statsmodels' Holm runs ``gc.collect()`` on every call). Only
the finite p-values form a family: a NaN p-value (no participating input) stays NaN and neither counts in nor
poisons the correction.

A **family** is the set of hypotheses corrected together: the rows whose values in the ``family`` columns are
equal (:func:`family_labels`, :func:`correct_within_families`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from headstats.errors import HeadstatsError
from headstats.registry import Registry

#: The error rates a correction may control.
KINDS: tuple[str, ...] = ("fwer", "fdr", "none")

Adjust = Callable[[np.ndarray, float], np.ndarray]
AdjustRows = Callable[[np.ndarray], np.ndarray]
NextAlpha = Callable[[float, int, int], float]


@dataclass(frozen=True)
class Correction:
    """A multiple-comparison correction and what it means.

    Attributes
    ----------
    name : str
        The name protocols and the ``correction`` column use.
    adjust : callable
        ``adjust(p, alpha) -> p_corr`` for the finite p-values of one family (1-D, at least one).
    kind : {"fwer", "fdr", "none"}
        The error rate it controls at ``alpha``.
    description : str
        One line for reports, e.g. "Holm's step-down correction (family-wise error rate)".
    short : str
        Its name in a short sentence ("Holm", "Benjamini-Hochberg"); the ``name`` when empty.
    statsmodels_method : str or None
        The ``method`` of statsmodels' ``multipletests`` it equals, if any.
    adjust_rows : callable or None
        ``adjust_rows(p) -> p_corr`` for a 2-D array whose rows are families, NaN left out of each row;
        None: :meth:`rows` applies ``adjust`` row by row.
    next_alpha : callable or None
        ``next_alpha(alpha, m, r)``: the uncorrected p-value below which one more of m hypotheses would be
        rejected when r (``< m``) are; None: ``alpha / m`` (Bonferroni's, conservative for any correction).
    """

    name: str
    adjust: Adjust
    kind: str
    description: str
    statsmodels_method: str | None = None
    adjust_rows: AdjustRows | None = None
    next_alpha: NextAlpha | None = None
    short: str = ""

    def __post_init__(self) -> None:
        if not self.short:
            object.__setattr__(self, "short", self.name)

    def __call__(self, p_values, alpha: float = 0.05) -> np.ndarray:
        """Adjusted p-values of one family, NaN where the input is NaN (:func:`correct_pvalues`)."""
        p = np.asarray(p_values, dtype=float)
        out = np.full(p.shape, np.nan)
        finite = np.isfinite(p)
        if finite.any():
            out[finite] = np.asarray(self.adjust(p[finite], alpha), dtype=float)
        return out

    def rows(self, p_values) -> np.ndarray:
        """Each row of a 2-D array adjusted as its own family, NaNs left out of their row."""
        p = np.array(p_values, dtype=float, ndmin=2)
        if p.ndim != 2:
            raise ValueError(f"p_values must be 1-D or 2-D, got shape {p.shape}")
        if self.adjust_rows is not None:
            return self.adjust_rows(p)
        return np.array([self(row) for row in p]).reshape(p.shape)

    def level_for_one_more(self, alpha: float, m: int, n_rejected: int) -> float:
        """The uncorrected p-value below which one more hypothesis of a family of m would be rejected.

        ``r = min(n_rejected, m - 1)``; NaN for an empty family.
        """
        if m <= 0:
            return float("nan")
        r = min(n_rejected, m - 1)
        if self.next_alpha is None:
            return alpha / m
        return float(self.next_alpha(alpha, m, r))


#: name -> :class:`Correction`.
CORRECTIONS: Registry[Correction] = Registry(
    "correction", hint="add one with headstats.stats.corrections.register_correction"
)


def register_correction(
    name: str,
    adjust: Adjust,
    *,
    kind: str,
    description: str,
    statsmodels_method: str | None = None,
    adjust_rows: AdjustRows | None = None,
    next_alpha: NextAlpha | None = None,
    short: str = "",
    overwrite: bool = False,
) -> Correction:
    """Add a correction under ``name``; see :class:`Correction` for the arguments.

    Raises
    ------
    HeadstatsError
        For a name that is not an identifier, a ``kind`` not in :data:`KINDS`, a non-callable ``adjust``, or a
        name already registered (unless ``overwrite``).
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise HeadstatsError(f"a correction name must be a valid identifier, got {name!r}")
    if kind not in KINDS:
        raise HeadstatsError(f"correction {name!r}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not callable(adjust):
        raise HeadstatsError(f"correction {name!r}: adjust must be callable, got {type(adjust).__name__}")
    if name in CORRECTIONS and not overwrite:
        raise HeadstatsError(f"correction {name!r} is already registered; pass overwrite=True to replace it")
    entry = Correction(name, adjust, kind, description, statsmodels_method, adjust_rows, next_alpha, short)
    return CORRECTIONS.register(name, entry, overwrite=overwrite)


def unregister_correction(name: str) -> None:
    """Remove a registered correction (unknown names raise :class:`~headstats.errors.UnknownNameError`)."""
    CORRECTIONS.unregister(name)


def list_corrections() -> list[str]:
    """Names a protocol may give as ``correction``."""
    return CORRECTIONS.names()


def get_correction(name: str) -> Correction:
    """The registered :class:`Correction` called ``name``; unknown names raise ``UnknownNameError``."""
    return CORRECTIONS.get(name)


def check_correction(name: str) -> str:
    """Return ``name`` if it is a registered correction, else raise ``UnknownNameError`` listing them."""
    get_correction(name)
    return name


def describe_corrections() -> pd.DataFrame:
    """One row per registered correction: ``correction, kind, statsmodels_method, description``."""
    return pd.DataFrame(
        [(c.name, c.kind, c.statsmodels_method, c.description) for _, c in CORRECTIONS.items()],
        columns=["correction", "kind", "statsmodels_method", "description"],
    )


def correct_pvalues(p_values, method: str = "holm", alpha: float = 0.05) -> np.ndarray:
    """Adjust p-values over one family, leaving NaNs out of it.

    Parameters
    ----------
    p_values : array_like
        Uncorrected p-values of one family; NaN where a hypothesis had no data.
    method : str
        A registered correction: ``holm`` (Holm 1979, step-down FWER), ``bonferroni`` (``min(1, m p)``),
        ``fdr_bh`` (Benjamini-Hochberg 1995), ``fdr_by`` (Benjamini-Yekutieli 2001, FDR under any dependence),
        ``none`` (unchanged), or one added with :func:`register_correction`.
    alpha : float
        Passed to the correction (statsmodels uses it only for its reject flags, not the adjusted values).

    Returns
    -------
    numpy.ndarray
        Adjusted p-values, same shape, NaN where the input was NaN. ``m`` is the number of finite p-values.
    """
    return get_correction(method)(p_values, alpha)


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

    A registered correction without a vectorised version is applied row by row.
    """
    return get_correction(method).rows(p_values)


def next_discovery_alpha(correction: str, alpha: float, m: int, n_rejected: int) -> float:
    r"""The uncorrected p-value below which one more hypothesis of a family would have been rejected.

    With m finite p-values and R rejections (``R' = min(R, m - 1)``): ``none`` alpha; ``bonferroni``
    alpha / m; ``holm`` alpha / (m - R'); ``fdr_bh`` alpha (R' + 1) / m; ``fdr_by``
    alpha (R' + 1) / (m c_m) with :math:`c_m = \sum_{i \le m} 1/i`; a registered correction without a rule
    alpha / m. Used as the level of the power columns.
    """
    return get_correction(correction).level_for_one_more(alpha, m, n_rejected)


# ----------------------------------------------------------------------------------------------------------
# families
# ----------------------------------------------------------------------------------------------------------
def check_family(family: Sequence[str] | str, allowed: Sequence[str]) -> tuple[str, ...]:
    """Return ``family`` as a tuple if its entries are distinct names among ``allowed``, else raise."""
    fam = (family,) if isinstance(family, str) else tuple(family)
    bad = [f for f in fam if f not in allowed]
    if bad or len(set(fam)) != len(fam):
        raise HeadstatsError(
            f"family must be distinct column names among {', '.join(allowed)} (or empty for one family of "
            f"everything), got {fam!r}"
        )
    return fam


def family_labels(keys: pd.DataFrame, family: Sequence[str]) -> pd.Series:
    """A readable label per row, e.g. ``model=default|dataset=demo``; ``all`` for the empty family."""
    fam = tuple(family)
    if not fam:
        return pd.Series("all", index=keys.index, dtype=object)
    label = None
    for f in fam:
        part = f + "=" + keys[f].astype(str)
        label = part if label is None else label + "|" + part
    return label.astype(object)


def correct_within_families(
    p_values, labels, *, correction: str, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Correct ``p_values`` within each family (rows with equal ``labels``), over the finite ones only.

    Returns
    -------
    p_corr, level : numpy.ndarray
        The corrected p-values (NaN where ``p_values`` is) and, per row, the level at which one more
        hypothesis of its family would be rejected (:meth:`Correction.level_for_one_more`).
    """
    entry = get_correction(correction)
    p = np.asarray(p_values, dtype=float)
    p_corr = np.full(p.shape, np.nan)
    level = np.full(p.shape, np.nan)
    codes, _ = pd.factorize(np.asarray(labels, dtype=object))
    for c in np.unique(codes):
        idx = np.nonzero(codes == c)[0]
        p_corr[idx] = entry(p[idx], alpha)
        m = int(np.isfinite(p[idx]).sum())
        r = int(reject(p_corr[idx], alpha).sum())
        level[idx] = entry.level_for_one_more(alpha, m, r)
    return p_corr, level


def correct_rows_within_families(p_values, labels, *, correction: str) -> np.ndarray:
    """Each row of ``p_values`` (e.g. one per tau) corrected within the families of its columns."""
    entry = get_correction(correction)
    p = np.array(p_values, dtype=float, ndmin=2)
    out = np.full_like(p, np.nan)
    codes, _ = pd.factorize(np.asarray(labels, dtype=object))
    for c in np.unique(codes):
        idx = np.nonzero(codes == c)[0]
        out[:, idx] = entry.rows(p[:, idx])
    return out


def reject(p_corr: np.ndarray | float, alpha: float) -> np.ndarray:
    """``p_corr <= alpha``, False where ``p_corr`` is NaN: the package's one reject rule.

    Every decision "significant at level alpha" in headstats (tests, claims, report sentences, simulated
    rejection rates) is this function, so that no table says ``<`` where another says ``<=``
    (``tests/stats/test_corrections.py`` scans the source for any other comparison with an alpha). A scalar
    gives a 0-d array (``bool(reject(p, alpha))``).

    ``<=`` as statsmodels' ``multipletests`` decides (its ``reject`` is ``pvals_corrected <= alpha``) and as a
    p-value is defined (the smallest level at which the hypothesis is rejected); it matters for the discrete
    p-values of the sign, exact Wilcoxon and resampling tests, which can equal alpha exactly.
    """
    p_corr = np.asarray(p_corr, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(p_corr), p_corr <= alpha, False).astype(bool)


# ----------------------------------------------------------------------------------------------------------
# the built-ins
# ----------------------------------------------------------------------------------------------------------
# Each is statsmodels' multipletests(p, method=<name>) computed the same way (the same operations in the same
# order, so the same numbers bit for bit; the tests compare them), vectorised over rows: statsmodels works on
# one family per call, and its Holm runs gc.collect() on every call (a tenth of a second in a study's process).
def _sorted_rows(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Finite p-values of each row sorted ascending (NaN last), their order, m per row and ranks 1..."""
    finite = np.isfinite(p)
    m = finite.sum(axis=1, keepdims=True).astype(float)
    order = np.argsort(np.where(finite, p, np.inf), axis=1, kind="stable")
    ps = np.take_along_axis(np.where(finite, p, np.nan), order, axis=1)
    rank = np.arange(1, p.shape[1] + 1, dtype=float)[None, :]
    return ps, order, m, rank


def _unsort(adj: np.ndarray, ps: np.ndarray, order: np.ndarray) -> np.ndarray:
    adj = np.where(np.isnan(ps), np.nan, np.minimum(adj, 1.0))
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=1)
    return out


def _bonferroni_rows(p: np.ndarray) -> np.ndarray:
    """``min(1, m p)``."""
    ps, order, m, _ = _sorted_rows(p)
    return _unsort(ps * m, ps, order)


def _holm_rows(p: np.ndarray) -> np.ndarray:
    """``min(1, max_{j <= i} (m - j + 1) p_(j))``."""
    ps, order, m, rank = _sorted_rows(p)
    adj = np.maximum.accumulate(np.where(np.isnan(ps), -np.inf, ps * (m - rank + 1)), axis=1)
    return _unsort(adj, ps, order)


def _harmonic(m: np.ndarray) -> np.ndarray:
    """:math:`c_m = \\sum_{k=1}^m 1/k` for each m of a column vector."""
    return np.array([np.sum(1.0 / np.arange(1, int(k) + 1)) for k in m.ravel()]).reshape(m.shape)


def _step_up_rows(p: np.ndarray, *, by: bool) -> np.ndarray:
    """``min(1, min_{j >= i} p_(j) / (j / m))``, with ``j / m`` divided by ``c_m`` for Benjamini-Yekutieli."""
    ps, order, m, rank = _sorted_rows(p)
    with np.errstate(divide="ignore", invalid="ignore"):  # rows without a finite p-value: all NaN
        ecdf = rank / m
        if by:
            ecdf = ecdf / _harmonic(m)
        raw = np.where(np.isnan(ps), np.inf, ps / ecdf)
    adj = np.minimum.accumulate(raw[:, ::-1], axis=1)[:, ::-1]
    return _unsort(adj, ps, order)


def _one_family(rows: AdjustRows) -> Adjust:
    def adjust(p: np.ndarray, alpha: float) -> np.ndarray:
        return rows(np.asarray(p, dtype=float)[None, :])[0]

    return adjust


def _by_rows(p: np.ndarray) -> np.ndarray:
    return _step_up_rows(p, by=True)


def _bh_rows(p: np.ndarray) -> np.ndarray:
    return _step_up_rows(p, by=False)


def _unchanged_rows(p: np.ndarray) -> np.ndarray:
    return p.copy()


for _name, _short, _rows, _kind, _method, _description, _next in (
    ("holm", "Holm", _holm_rows, "fwer", "holm", "Holm's step-down correction (family-wise error rate)",
     lambda alpha, m, r: alpha / (m - r)),
    ("bonferroni", "Bonferroni", _bonferroni_rows, "fwer", "bonferroni",
     "Bonferroni correction (family-wise error rate)", lambda alpha, m, r: alpha / m),
    ("fdr_bh", "Benjamini-Hochberg", _bh_rows, "fdr", "fdr_bh", "Benjamini-Hochberg correction (false discovery rate)",
     lambda alpha, m, r: alpha * (r + 1) / m),
    ("fdr_by", "Benjamini-Yekutieli", _by_rows, "fdr", "fdr_by",
     "Benjamini-Yekutieli correction (false discovery rate under dependence)",
     lambda alpha, m, r: alpha * (r + 1) / (m * float(np.sum(1.0 / np.arange(1, m + 1))))),
    ("none", "no", _unchanged_rows, "none", None, "no multiple-comparison correction (as in the paper's code)",
     lambda alpha, m, r: alpha),
):
    register_correction(_name, _one_family(_rows), kind=_kind, statsmodels_method=_method, short=_short,
                        description=_description, adjust_rows=_rows, next_alpha=_next)
