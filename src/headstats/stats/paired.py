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
family over the finite ones (:func:`headstats.stats.corrections.correct_within_families`).

The tests are entries of :data:`PAIRED_TESTS` (:func:`register_paired_test` adds one; an unknown name raises
:class:`~headstats.errors.UnknownNameError`). The Walsh averages are selected, never all built, by
:mod:`headstats.stats.ranks`, which the one-sample bound shares; the rank-biserial correlation and d_z come
from :mod:`headstats.stats.effects` and the families from :mod:`headstats.stats.corrections`.

The statistics layer: tables in, tables out; no torch, matplotlib or rich.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from headstats.errors import HeadstatsError
from headstats.registry import Registry
from headstats.stats.corrections import check_correction, check_family, correct_within_families, family_labels, reject
from headstats.stats.options import FAMILY_KEYS  # columns a family may name; here ``model`` is the pair
from headstats.stats.effects import cohen_d, rank_biserial
from headstats.stats.ranks import EXACT_MAX_N, hodges_lehmann, signed_rank_sums, walsh_rank_bound

__all__ = [
    "ALTERNATIVES", "EXACT_CI_MAX_N", "FAMILY_KEYS", "PAIRED_COLUMNS", "PAIRED_TESTS", "PairedTestSpec",
    "check_paired_test", "get_paired_test", "hodges_lehmann", "list_paired_tests",
    "pair_scores", "paired_tests", "register_paired_test", "walsh_rank_bound",
]

ALTERNATIVES = ("two-sided", "greater", "less")
#: The output columns, in order; they never change with a parameter.
PAIRED_COLUMNS: tuple[str, ...] = (
    "model_before", "model_after", "dataset", "role", "layer", "head", "test", "n", "n_unpaired", "n_missing",
    "n_zero", "median_before", "median_after", "median_diff", "mean_diff", "sd_diff", "estimate",
    "ci_low", "ci_high", "confidence", "ci_method", "statistic", "dof", "alternative", "p_unc", "p_corr",
    "correction", "family", "alpha", "reject", "effect_size", "effect_size_type",
)
#: Above this n the Walsh-average interval uses the normal approximation of T+ (shared with the one-sample bound).
EXACT_CI_MAX_N = EXACT_MAX_N

#: What a paired test returns for one head: ``statistic, dof, p_unc, estimate, ci_low, ci_high, effect_size``
#: (floats) and ``ci_method, effect_size_type`` (str).
PairedResult = dict


# ----------------------------------------------------------------------------------------------------------
# the registry
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PairedTestSpec:
    """A registered paired test and what it means.

    Attributes
    ----------
    name : str
        The name protocols (``compare: test``) and the ``test`` column use.
    fn : callable
        ``fn(d, *, alternative, confidence) -> dict`` for one head's finite differences ``d = after - before``
        (possibly empty: then NaNs), with the keys of :data:`PairedResult`.
    parameter : {"mean", "pseudo-median"}
        The location of the differences that the test and its ``estimate`` are about.
    effect_size : str
        The ``effect_size_type`` it reports.
    description : str
        One line for reports.
    """

    name: str
    fn: Callable[..., PairedResult]
    parameter: str
    effect_size: str
    description: str = ""


#: name -> :class:`PairedTestSpec`.
PAIRED_TESTS: Registry[PairedTestSpec] = Registry(
    "paired test", hint="add one with headstats.stats.paired.register_paired_test"
)


def register_paired_test(
    name: str, fn: Callable[..., PairedResult], *, parameter: str, effect_size: str, description: str = "",
    overwrite: bool = False,
) -> PairedTestSpec:
    """Add a paired test under ``name`` (see :class:`PairedTestSpec`)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise HeadstatsError(f"a paired test name must be a valid identifier, got {name!r}")
    if not callable(fn):
        raise TypeError(f"paired test {name!r}: fn must be callable, got {type(fn).__name__}")
    if name in PAIRED_TESTS and not overwrite:
        raise HeadstatsError(f"paired test {name!r} is already registered; pass overwrite=True to replace it")
    return PAIRED_TESTS.register(name, PairedTestSpec(name, fn, parameter, effect_size, description),
                                 overwrite=overwrite)


def list_paired_tests() -> list[str]:
    """Names a comparison may give as ``test``."""
    return PAIRED_TESTS.names()


def get_paired_test(name: str) -> PairedTestSpec:
    """The registered paired test called ``name``; unknown names raise ``UnknownNameError``."""
    return PAIRED_TESTS.get(name)


def check_paired_test(name: str) -> str:
    """Return ``name`` if it is a registered paired test, else raise ``UnknownNameError`` listing them."""
    get_paired_test(name)
    return name


# ----------------------------------------------------------------------------------------------------------
# the two tests
# ----------------------------------------------------------------------------------------------------------
def _empty_result(ci_method: str, effect_size_type: str) -> PairedResult:
    return {"statistic": np.nan, "dof": np.nan, "p_unc": np.nan, "estimate": np.nan, "ci_low": np.nan,
            "ci_high": np.nan, "effect_size": np.nan, "ci_method": ci_method, "effect_size_type": effect_size_type}


def paired_t(d: np.ndarray, *, alternative: str, confidence: float) -> PairedResult:
    """Paired t-test of the differences: ``scipy.stats.ttest_rel(after, before, alternative=...)``.

    Estimate and interval are for the mean difference (``ci_method = "t"``); effect size the paired Cohen's
    ``d_z = mean(d) / sd(d)``.
    """
    out = _empty_result("t", "cohen_dz")
    n = d.size
    if n < 2:
        return out
    mean, sd = float(np.mean(d)), float(np.std(d, ddof=1))
    out["estimate"] = mean
    out["dof"] = float(n - 1)
    if sd > 0:  # sd = 0 (a constant difference): t undefined, p NaN -- the rule of every mean test
        res = sps.ttest_1samp(d, 0.0, alternative=alternative)
        ci = res.confidence_interval(confidence)
        out.update(statistic=float(res.statistic), p_unc=float(res.pvalue), ci_low=float(ci.low),
                   ci_high=float(ci.high), effect_size=float(cohen_d(mean, sd)))
    return out


def paired_wilcoxon(d: np.ndarray, *, alternative: str, confidence: float) -> PairedResult:
    """Wilcoxon signed-rank test of the differences: ``scipy.stats.wilcoxon(after, before, alternative=...)``.

    Zero differences are dropped (``zero_method="wilcox"``); estimate and interval are the Hodges-Lehmann
    pseudo-median of the non-zero differences and its Walsh-average interval
    (:func:`headstats.stats.ranks.hodges_lehmann`); effect size the matched-pairs rank-biserial correlation.
    """
    nz = d[d != 0]
    out = _empty_result("walsh_exact" if nz.size <= EXACT_CI_MAX_N else "walsh_normal", "rank_biserial")
    if nz.size == 0:
        return out
    res = sps.wilcoxon(d, alternative=alternative)
    est, low, high = hodges_lehmann(nz, confidence=confidence, alternative=alternative)
    t_plus, n_nonzero = signed_rank_sums(nz)
    out.update(statistic=float(res.statistic), p_unc=float(res.pvalue), estimate=est, ci_low=low, ci_high=high,
               effect_size=float(rank_biserial(t_plus, n_nonzero)))
    return out


register_paired_test("wilcoxon", paired_wilcoxon, parameter="pseudo-median", effect_size="rank_biserial",
                     description="Wilcoxon signed-rank test of the paired differences")
register_paired_test("t", paired_t, parameter="mean", effect_size="cohen_dz",
                     description="paired t-test")


def _check_args(test: str, alternative: str, correction: str, family: Sequence[str], confidence: float,
                alpha: float) -> tuple[str, ...]:
    check_paired_test(test)
    if alternative not in ALTERNATIVES:
        raise HeadstatsError(f"unknown alternative {alternative!r}; choose one of {', '.join(ALTERNATIVES)}")
    check_correction(correction)
    fam = check_family(family, FAMILY_KEYS)
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
        try:
            values = frame["score"].to_numpy(dtype=float, na_value=np.nan)
        except (TypeError, ValueError) as exc:
            raise HeadstatsError(f"column 'score' of the {which} scores must be numeric: {exc}") from None
        if np.isinf(values).any():  # refused as the one-sample tests refuse them (headstats.stats.matrix)
            raise HeadstatsError(
                f"column 'score' of the {which} scores holds {int(np.isinf(values).sum())} infinite value(s); "
                "use NaN for an input that did not take part"
            )
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


def _test_one(d: np.ndarray, test: str, alternative: str, confidence: float) -> PairedResult:
    """Statistic, p, estimate, interval and effect size for one head's finite differences ``d``."""
    return get_paired_test(test).fn(d, alternative=alternative, confidence=confidence)


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
    test : str
        ``wilcoxon`` (default, signed-rank) or ``t`` (paired t), see the module docstring, or a test added
        with :func:`register_paired_test`.
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
        ``reject = p_corr <= alpha``.
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

    labels = family_labels(out.assign(model=model_after), fam).to_numpy()
    out["family"] = labels
    p = out["p_unc"].to_numpy(dtype=float)
    out["p_corr"] = correct_within_families(p, labels, correction=correction, alpha=alpha)[0]
    out["reject"] = reject(out["p_corr"].to_numpy(dtype=float), alpha)
    for col in PAIRED_COLUMNS:
        if col not in out.columns:
            out[col] = np.nan
    extra = [c for c in keys if c not in PAIRED_COLUMNS]
    out = out[[*PAIRED_COLUMNS[:6], *extra, *PAIRED_COLUMNS[6:]]]
    return out.sort_values(keys, kind="stable").reset_index(drop=True)
