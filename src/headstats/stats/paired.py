r"""Paired tests of the change of every head between two models (pretrained vs fine-tuned), input by input.

The paper (Pande et al. 2021, section 6) counts heads per role per layer before and after fine-tuning.
headstats also tests each head's change directly: the same inputs go through both models, and for every
(dataset, role, layer, head) the per-input difference of sieve bias scores

    d_i = s_i(after) - s_i(before)

is tested for a location shift with

- ``wilcoxon`` (default): the Wilcoxon signed-rank test, exactly as
  ``scipy.stats.wilcoxon(after, before, alternative=...)`` computes it (zero differences dropped, scipy's
  ``method="auto"``: exact null distribution for n <= 50 without ties or zeros, else the normal
  approximation with tie correction). The estimate is the Hodges-Lehmann pseudo-median of the differences
  (the median of the n(n+1)/2 Walsh averages ``(d_i + d_j)/2, i <= j``), the location the test is about;
  its confidence interval is the Walsh-average interval of Hollander & Wolfe (1999, section 3.3):
  ``[W_(C), W_(M+1-C)]`` with ``M = n(n+1)/2`` and ``C - 1`` the largest c with ``P(T+ <= c) <= a``
  (``a = (1 - confidence)/2`` two-sided, ``1 - confidence`` one-sided). ``T+`` has its exact null
  distribution for n <= 50 (``ci_method = "walsh_exact"``), and for n > 50 the normal approximation
  ``C = floor(M/2 - z_{1-a} sqrt(n(n+1)(2n+1)/24) + 1/2)`` with a continuity correction and no tie correction
  (``"walsh_normal"``). The interval uses the nonzero differences, as the test does. Effect size: the
  matched-pairs rank-biserial correlation ``r = (T+ - T-) / (T+ + T-)`` (King & Minium; pingouin's
  ``RBC``), in [-1, 1], positive when ``after`` is larger.
- ``t``: the paired t-test, exactly ``scipy.stats.ttest_rel(after, before, alternative=...)``; estimate and
  interval are for the mean difference (``ci_method = "t"``, as
  ``ttest_rel(...).confidence_interval(confidence)``); effect size the paired Cohen's ``d_z = mean(d) /
  sd(d)``.

Inputs are paired by ``sentence_id`` (an inner join); inputs present for one model only are counted in
``n_unpaired``, pairs with a NaN score on either side in ``n_missing`` (an input that does not take part in
a role, e.g. no arc of a relation), and both are left out of the test. p-values are corrected within each
family over the finite ones (:func:`headstats.stats.corrections.correct_pvalues`).

The statistics layer: tables in, tables out; no torch, matplotlib or rich.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import stats as sps

from headstats.errors import HeadstatsError
from headstats.stats.corrections import check_correction, correct_pvalues

PAIRED_TESTS = ("wilcoxon", "t")
ALTERNATIVES = ("two-sided", "greater", "less")
#: Columns a family may name; ``model`` stands for the compared pair (``model_after``).
FAMILY_KEYS = ("model", "dataset", "role", "layer")
#: The output columns, in order; they never change with a parameter.
PAIRED_COLUMNS: tuple[str, ...] = (
    "model_before", "model_after", "dataset", "role", "layer", "head", "test", "n", "n_unpaired", "n_missing",
    "n_zero", "median_before", "median_after", "median_diff", "mean_diff", "sd_diff", "estimate",
    "ci_low", "ci_high", "confidence", "ci_method", "statistic", "dof", "alternative", "p_unc", "p_corr",
    "correction", "family", "alpha", "reject", "effect_size", "effect_size_type",
)
#: Above this n the Walsh-average interval uses the normal approximation of T+.
EXACT_CI_MAX_N = 50


@lru_cache(maxsize=64)
def _signrank_cdf(n: int) -> np.ndarray:
    """``P(T+ <= t)`` for t = 0..n(n+1)/2 under H0 (no ties), by counting subsets of {1..n} by sum."""
    m = n * (n + 1) // 2
    counts = np.zeros(m + 1, dtype=float)
    counts[0] = 1.0
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[: m + 1 - k].copy()
    return np.cumsum(counts) / 2.0**n


@lru_cache(maxsize=8)
def _triu(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs i <= j of the Walsh averages (cached: every head of a data set has the same n)."""
    i, j = np.triu_indices(n)
    return i.astype(np.int32), j.astype(np.int32)


def walsh_rank_bound(n: int, tail: float) -> int:
    """``C``: the 1-based rank of the lower Walsh average bounding a one-tail-``tail`` interval.

    ``C - 1`` is the largest c with ``P(T+ <= c) <= tail`` (exact for ``n <= EXACT_CI_MAX_N``, else normal
    approximation with continuity correction); at least 1.
    """
    m = n * (n + 1) // 2
    if n <= EXACT_CI_MAX_N:
        cdf = _signrank_cdf(n)
        c = int(np.searchsorted(cdf, tail, side="right"))  # number of t with cdf(t) <= tail
    else:
        sigma = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        c = int(math.floor(m / 2.0 - sps.norm.ppf(1.0 - tail) * sigma + 0.5))
    return max(1, min(c, (m + 1) // 2))


def hodges_lehmann(d: np.ndarray, *, confidence: float = 0.95, alternative: str = "two-sided") -> tuple[float, float, float]:
    """Hodges-Lehmann pseudo-median of ``d`` and its Walsh-average confidence interval.

    Returns ``(estimate, ci_low, ci_high)``; one-sided alternatives give an infinite other end.
    Zeros in ``d`` are kept (drop them first to match the ``wilcox`` zero method). NaN for empty ``d``.
    """
    d = np.asarray(d, dtype=float)
    n = d.size
    if n == 0:
        return (np.nan, np.nan, np.nan)
    i, j = _triu(n)
    walsh = (d[i] + d[j]) / 2.0
    m = walsh.size
    tail = (1.0 - confidence) / 2.0 if alternative == "two-sided" else 1.0 - confidence
    c = walsh_rank_bound(n, tail)
    lo_k, hi_k = c - 1, m - c  # 0-based ranks of W_(C) and W_(M+1-C)
    mid = [(m - 1) // 2, m // 2]
    part = np.partition(walsh, sorted({lo_k, hi_k, *mid}))
    estimate = float((part[mid[0]] + part[mid[1]]) / 2.0)
    low, high = float(part[lo_k]), float(part[hi_k])
    if alternative == "greater":
        high = np.inf
    elif alternative == "less":
        low = -np.inf
    return (estimate, low, high)


def _rank_biserial(d: np.ndarray) -> float:
    nz = d[d != 0]
    if nz.size == 0:
        return np.nan
    ranks = sps.rankdata(np.abs(nz))
    r_plus, r_minus = ranks[nz > 0].sum(), ranks[nz < 0].sum()
    return float((r_plus - r_minus) / (r_plus + r_minus))


def _check_args(test: str, alternative: str, correction: str, family: Sequence[str], confidence: float,
                alpha: float) -> tuple[str, ...]:
    if test not in PAIRED_TESTS:
        raise HeadstatsError(f"unknown paired test {test!r}; choose one of {', '.join(PAIRED_TESTS)}")
    if alternative not in ALTERNATIVES:
        raise HeadstatsError(f"unknown alternative {alternative!r}; choose one of {', '.join(ALTERNATIVES)}")
    check_correction(correction)
    fam = (family,) if isinstance(family, str) else tuple(family)
    bad = [f for f in fam if f not in FAMILY_KEYS]
    if bad or len(set(fam)) != len(fam):
        raise HeadstatsError(
            f"family must be distinct names among {', '.join(FAMILY_KEYS)} (or empty), got {fam!r}"
        )
    for name, value in (("confidence", confidence), ("alpha", alpha)):
        if not 0 < float(value) < 1:
            raise HeadstatsError(f"{name} must be between 0 and 1, got {value!r}")
    return fam


def _single_model(frame: pd.DataFrame, which: str) -> str:
    if "model" not in frame.columns:
        raise HeadstatsError(f"the {which} scores have no 'model' column; give a scores table")
    models = frame["model"].dropna().unique()
    if len(models) != 1:
        raise HeadstatsError(
            f"the {which} scores must hold exactly one model, found {len(models)} ({', '.join(map(str, models[:4]))}); "
            "filter the scores table to one model"
        )
    return str(models[0])


def pair_scores(before: pd.DataFrame, after: pd.DataFrame, *,
                keys: Sequence[str] = ("dataset", "role", "layer", "head")) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Join two scores tables by ``keys + sentence_id``.

    Returns ``(pairs, unpaired)``: ``pairs`` has ``keys, sentence_id, score_before, score_after`` (inner
    join); ``unpaired`` counts, per key, the rows present in only one table (column ``n_unpaired``).
    """
    keys = list(keys)
    need = [*keys, "sentence_id", "score"]
    for which, frame in (("before", before), ("after", after)):
        missing = [c for c in need if c not in frame.columns]
        if missing:
            raise HeadstatsError(f"the {which} scores lack column(s) {missing}; give a scores table with {need}")
        if frame.duplicated([*keys, "sentence_id"]).any():
            raise HeadstatsError(
                f"the {which} scores have repeated ({', '.join(keys)}, sentence_id) rows; each input must be "
                "scored once per head and role"
            )
    b = before[need].astype({"sentence_id": str})
    a = after[need].astype({"sentence_id": str})
    merged = b.merge(a, on=[*keys, "sentence_id"], how="outer", suffixes=("_before", "_after"), indicator=True)
    one_side = merged["_merge"] != "both"
    unpaired = (
        merged.loc[one_side, keys].value_counts(dropna=False).rename("n_unpaired").reset_index()
        if one_side.any() else pd.DataFrame(columns=[*keys, "n_unpaired"])
    )
    pairs = merged.loc[~one_side, [*keys, "sentence_id", "score_before", "score_after"]]
    return pairs.reset_index(drop=True), unpaired


def _test_one(d: np.ndarray, test: str, alternative: str, confidence: float) -> dict[str, float | str]:
    """Statistic, p, estimate, interval and effect size for one head's finite differences ``d``."""
    n = d.size
    out: dict[str, float | str] = {"statistic": np.nan, "dof": np.nan, "p_unc": np.nan, "estimate": np.nan,
                                   "ci_low": np.nan, "ci_high": np.nan, "effect_size": np.nan}
    if test == "t":
        out["ci_method"] = "t"
        out["effect_size_type"] = "cohen_dz"
        if n < 2:
            return out
        mean, sd = float(np.mean(d)), float(np.std(d, ddof=1))
        out["estimate"] = mean
        out["dof"] = float(n - 1)
        if sd > 0:
            # equals scipy.stats.ttest_rel(after, before, alternative=alternative)
            res = sps.ttest_1samp(d, 0.0, alternative=alternative)
            ci = res.confidence_interval(confidence)
            out.update(statistic=float(res.statistic), p_unc=float(res.pvalue), ci_low=float(ci.low),
                       ci_high=float(ci.high), effect_size=mean / sd)
        return out

    out["effect_size_type"] = "rank_biserial"
    nz = d[d != 0]
    out["ci_method"] = "walsh_exact" if nz.size <= EXACT_CI_MAX_N else "walsh_normal"
    if nz.size == 0:
        return out
    # equals scipy.stats.wilcoxon(after, before, alternative=alternative) (zero_method="wilcox", method="auto")
    res = sps.wilcoxon(d, alternative=alternative)
    est, low, high = hodges_lehmann(nz, confidence=confidence, alternative=alternative)
    out.update(statistic=float(res.statistic), p_unc=float(res.pvalue), estimate=est, ci_low=low, ci_high=high,
               effect_size=_rank_biserial(nz))
    return out


def family_label(row_values: dict[str, object], family: Sequence[str]) -> str:
    """``model=sst2-ft|dataset=sst2``-style label of a family (``all`` when empty)."""
    return "|".join(f"{f}={row_values[f]}" for f in family) if family else "all"


def paired_tests(
    before: pd.DataFrame,
    after: pd.DataFrame,
    *,
    keys: Sequence[str] = ("dataset", "role", "layer", "head"),
    test: str = "wilcoxon",
    alternative: str = "two-sided",
    correction: str = "holm",
    family: Sequence[str] = ("dataset",),
    confidence: float = 0.95,
    alpha: float = 0.05,
    min_n: int = 2,
) -> pd.DataFrame:
    """Test, per head and role, whether the scores changed from ``before`` to ``after``.

    Parameters
    ----------
    before, after : pandas.DataFrame
        Long scores tables (``model, dataset, sentence_id, layer, head, role, score``), one model each,
        scored on the same inputs.
    keys : sequence of str
        One hypothesis per distinct value of these columns.
    test : {"wilcoxon", "t"}
        Wilcoxon signed-rank (default) or paired t; see the module docstring.
    alternative : {"two-sided", "greater", "less"}
        ``greater``: the score is larger after (``d = after - before > 0``).
    correction : str
        ``holm`` (default), ``bonferroni``, ``fdr_bh``, ``fdr_by`` or ``none``.
    family : sequence of str
        Columns among ``model, dataset, role, layer`` whose values make one family of the correction
        (``model`` is the compared pair). Default: all heads x roles of one data set.
    confidence : float
        Level of the interval of ``estimate`` (not adjusted for multiplicity).
    alpha : float
        ``reject = p_corr < alpha``.
    min_n : int
        Heads with fewer usable pairs get NaN results (they stay in the table).

    Returns
    -------
    pandas.DataFrame
        One row per hypothesis with the columns :data:`PAIRED_COLUMNS`: ``n`` usable pairs, ``n_unpaired``,
        ``n_missing`` (NaN pairs), ``n_zero`` (zero differences, dropped by the signed-rank test),
        ``median_before``, ``median_after``, ``median_diff`` (median of ``after - before``), ``mean_diff``,
        ``sd_diff``, ``estimate`` (Hodges-Lehmann pseudo-median for ``wilcoxon``, mean difference for ``t``)
        with ``ci_low``/``ci_high``, ``statistic`` (scipy's), ``dof`` (t only), ``p_unc``, ``p_corr``,
        ``reject``, ``effect_size`` (rank-biserial or d_z).
    """
    fam = _check_args(test, alternative, correction, family, confidence, alpha)
    keys = list(keys)
    missing_keys = [f for f in fam if f != "model" and f not in keys]
    if missing_keys:
        raise HeadstatsError(f"family names {missing_keys}, which are not among the keys {keys}")
    model_before, model_after = _single_model(before, "before"), _single_model(after, "after")
    pairs, unpaired = pair_scores(before, after, keys=keys)

    pairs = pairs.sort_values(keys, kind="stable").reset_index(drop=True)
    xb = pairs["score_before"].to_numpy(dtype=float)
    xa = pairs["score_after"].to_numpy(dtype=float)
    if len(pairs):
        group_keys = pairs[keys].drop_duplicates().reset_index(drop=True)
        starts = np.flatnonzero(~pairs.duplicated(keys).to_numpy())
    else:
        group_keys = pd.DataFrame(columns=keys)
        starts = np.empty(0, dtype=int)
    bounds = np.append(starts, len(pairs))

    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        for g in range(len(group_keys)):
            sl = slice(bounds[g], bounds[g + 1])
            b, a = xb[sl], xa[sl]
            ok = np.isfinite(b) & np.isfinite(a)
            b, a = b[ok], a[ok]
            d = a - b
            n = int(d.size)
            row = {
                "n": n, "n_missing": int((~ok).sum()), "n_zero": int((d == 0).sum()),
                "median_before": float(np.median(b)) if n else np.nan,
                "median_after": float(np.median(a)) if n else np.nan,
                "median_diff": float(np.median(d)) if n else np.nan,
                "mean_diff": float(np.mean(d)) if n else np.nan,
                "sd_diff": float(np.std(d, ddof=1)) if n > 1 else np.nan,
            }
            if n >= min_n:
                row.update(_test_one(d, test, alternative, confidence))
            else:
                row.update(_test_one(np.empty(0), test, alternative, confidence))
            rows.append(row)

    out = pd.concat([group_keys, pd.DataFrame(rows, index=group_keys.index)], axis=1)
    if len(unpaired):
        out = out.merge(unpaired, on=keys, how="outer")
    else:
        out["n_unpaired"] = 0
    out["n_unpaired"] = out["n_unpaired"].fillna(0).astype(int)
    for col in ("n", "n_missing", "n_zero"):
        out[col] = out[col].fillna(0).astype(int)
    out.insert(0, "model_before", model_before)
    out.insert(1, "model_after", model_after)
    out["test"] = test
    out["alternative"] = alternative
    out["confidence"] = float(confidence)
    out["correction"] = correction
    out["alpha"] = float(alpha)

    label_frame = out.assign(model=model_after)
    labels = (
        label_frame[list(fam)].astype(str).apply(lambda r: family_label(r.to_dict(), fam), axis=1)
        if fam and len(out) else pd.Series("all", index=out.index, dtype=object)
    )
    out["family"] = labels.to_numpy() if len(out) else []
    p = out["p_unc"].to_numpy(dtype=float) if len(out) else np.empty(0)
    p_corr = np.full(p.shape, np.nan)
    for label in pd.unique(out["family"]):
        idx = np.flatnonzero(out["family"].to_numpy() == label)
        p_corr[idx] = correct_pvalues(p[idx], method=correction, alpha=alpha)
    out["p_corr"] = p_corr
    with np.errstate(invalid="ignore"):
        out["reject"] = np.where(np.isfinite(p_corr), p_corr < alpha, False).astype(bool)
    for col in PAIRED_COLUMNS:
        if col not in out.columns:
            out[col] = np.nan
    extra = [c for c in keys if c not in PAIRED_COLUMNS]
    out = out[[*PAIRED_COLUMNS[:6], *extra, *PAIRED_COLUMNS[6:]]]
    return out.sort_values(keys, kind="stable").reset_index(drop=True)
