r"""Accuracies as proportions: confidence intervals, a paired exact test of two predictors, and the tests of
the dependency analysis (Clark et al. 2019, Table 1; METHODS 2.3).

Two predictors (a head, a fixed offset) judged on the same words are compared by McNemar's exact test: only
the discordant words count, b (only the head is right) and c (only the offset is right); under H0 (equal
accuracy) b ~ Binomial(b + c, 1/2) (McNemar 1947; Fagerland, Lydersen and Laake 2013). The one-sided p-value
for "the head is more accurate" is ``P(X >= b)``; the two-sided one equals
``statsmodels.stats.contingency_tables.mcnemar(table, exact=True)``. An accuracy's confidence interval is
Wilson's score interval by default (``statsmodels.stats.proportion.proportion_confint``).

Words of one sentence share its attention and its parse, so counting them as independent pairs overstates
the evidence (METHODS 5.3). The sentence (or document) is the unit of the clustered tests:
:func:`cluster_signflip_test` tests the per-sentence differences ``d_j = (words the head gets right) - (words
the baseline gets right)`` by flipping their signs (exact up to 2^16 sentences, else Monte Carlo);
:func:`cluster_bootstrap_interval` resamples sentences for the interval of an accuracy or of a difference of
accuracies. McNemar's test on words stays available under the name ``mcnemar_words``;
:func:`simulate_clustered_level` shows why it is not the default.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from headstats.stats.corrections import correct_within_families, family_labels, reject

#: Interval methods of :func:`proportion_interval` (statsmodels' names; ``beta`` is Clopper-Pearson).
INTERVALS = ("wilson", "beta")


def proportion_interval(correct, n, *, confidence: float = 0.95, method: str = "wilson") -> tuple[np.ndarray, np.ndarray]:
    """Two-sided confidence interval of ``correct / n`` (Wilson, or ``beta``: Clopper-Pearson exact); NaN where n = 0."""
    if method not in INTERVALS:
        raise ValueError(f"method must be one of {INTERVALS}, not {method!r}")
    correct = np.asarray(correct, dtype=float)
    n = np.asarray(n, dtype=float)
    ok = n > 0
    low, high = np.full(np.broadcast(correct, n).shape, np.nan), np.full(np.broadcast(correct, n).shape, np.nan)
    if ok.any():
        c, m = np.broadcast_to(correct, low.shape)[ok], np.broadcast_to(n, low.shape)[ok]
        lo, hi = proportion_confint(c, m, alpha=1 - confidence, method=method)
        p = c / m  # round-off puts Wilson's bound a hair past p at 0 and n correct: clip to contain p
        low[ok], high[ok] = np.minimum(lo, p), np.maximum(hi, p)
    return low, high


def paired_exact_test(only_a, only_b, *, alternative: str = "greater") -> np.ndarray:
    """McNemar's exact test from the discordant counts: p-values of H0 "a and b are equally accurate".

    Parameters
    ----------
    only_a, only_b : array_like of int
        Items only predictor a gets right (b in McNemar's table), and only b gets right (c).
    alternative : {"greater", "two-sided"}
        ``greater``: a is more accurate (``P(X >= only_a)``, X ~ Binomial(only_a + only_b, 1/2)).

    Returns
    -------
    ndarray
        p-values; 1 where there is no discordant item.
    """
    if alternative not in ("greater", "two-sided"):
        raise ValueError(f"alternative must be 'greater' or 'two-sided', not {alternative!r}")
    a = np.atleast_1d(np.asarray(only_a, dtype=np.int64))
    b = np.atleast_1d(np.asarray(only_b, dtype=np.int64))
    out = np.ones(np.broadcast(a, b).shape)
    for k, (x, y) in enumerate(zip(np.broadcast_to(a, out.shape).ravel(), np.broadcast_to(b, out.shape).ravel())):
        if x + y > 0:
            out.flat[k] = sps.binomtest(int(x), int(x + y), 0.5, alternative=alternative).pvalue
    return out


#: The paired tests of two predictors: on sentences (the unit of replication) or on words (McNemar, named).
PAIRED_TESTS = ("signflip_sentences", "mcnemar_words")


def cluster_signflip_test(diffs, *, alternative: str = "greater", n_resamples: int = 9_999, seed: int = 0) -> float:
    r"""Sign-flip test over clusters of H0 "the two predictors are equally accurate", from per-cluster differences.

    ``diffs[j]`` is, in sentence j, the number of words predictor a gets right minus the number b gets right.
    Under H0 (exchangeable predictors within a sentence) each ``d_j`` is symmetric about 0 and the sentences
    are independent, so the sign of each is a fair coin: the statistic :math:`\sum_j d_j` is referred to its
    sign-flip distribution (``scipy.stats.permutation_test``, ``permutation_type="samples"``): exact (all
    ``2^J`` patterns of the J non-zero sentences) when ``2^J <= n_resamples``, otherwise ``n_resamples``
    random patterns with p = (1 + #{at least as extreme}) / (n_resamples + 1). Sentences with ``d_j = 0`` do
    not change the statistic and are left out. ``alternative``: ``greater`` (a more accurate) or
    ``two-sided``. Without any non-zero sentence p = 1 (no evidence), as McNemar's test.
    """
    if alternative not in ("greater", "two-sided", "less"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', not {alternative!r}")
    d = np.asarray(diffs, dtype=float)
    d = d[np.isfinite(d) & (d != 0)]
    if d.size == 0:
        return 1.0
    res = sps.permutation_test((d,), lambda x, axis=-1: np.sum(x, axis=axis), permutation_type="samples",
                               vectorized=True, n_resamples=n_resamples, alternative=alternative,
                               random_state=np.random.default_rng(seed))
    return float(res.pvalue)


def signflip_normal_test(sum_d, sum_d2, *, alternative: str = "greater") -> np.ndarray:
    r"""The sign-flip test over sentences from two sums, with the normal approximation of its distribution.

    Under H0 the signs of the per-sentence differences ``d_s`` are fair coins, so :math:`\sum_s \epsilon_s d_s`
    has mean 0 and variance exactly :math:`\sum_s d_s^2` over the sign patterns; the statistic
    :math:`z = \sum_s d_s / \sqrt{\sum_s d_s^2}` is referred to N(0, 1) (a central limit over sentences; the
    self-normalised sum of Efron 1969). It needs only the two sums, which an analysis accumulates per batch.
    p = 1 where every ``d_s`` is 0. ``alternative``: ``greater`` or ``two-sided``.
    """
    if alternative not in ("greater", "two-sided"):
        raise ValueError(f"alternative must be 'greater' or 'two-sided', not {alternative!r}")
    d = np.asarray(sum_d, dtype=float)
    d2 = np.asarray(sum_d2, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(d2 > 0, d / np.sqrt(np.where(d2 > 0, d2, 1.0)), 0.0)
    p = sps.norm.sf(z) if alternative == "greater" else 2 * sps.norm.sf(np.abs(z))
    return np.where(d2 > 0, np.minimum(p, 1.0), 1.0)


def cluster_ratio_interval(correct, n, sum_c2, sum_cn, sum_n2, n_clusters, *,
                           confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    r"""Cluster-robust (linearised ratio-estimator) interval of an accuracy ``C / N`` over J sentences.

    With ``c_s`` words right of ``n_s`` in sentence s, :math:`\hat p = C / N` and

    .. math:: \widehat{\operatorname{var}}(\hat p) = \frac{J}{J - 1} \frac{\sum_s (c_s - \hat p n_s)^2}{N^2}
              = \frac{J}{J-1} \frac{\sum c_s^2 - 2 \hat p \sum c_s n_s + \hat p^2 \sum n_s^2}{N^2}

    (Cochran 1977, section 6.4; the sandwich variance with the sentence as cluster), the interval
    :math:`\hat p \pm z_{(1+c)/2} \hat{se}` clipped to [0, 1]. Built from sums an analysis accumulates per
    batch. With one word per sentence it is the Wald interval. NaN where N = 0 or J < 2.
    """
    c, m = np.asarray(correct, dtype=float), np.asarray(n, dtype=float)
    c2, cn, n2 = (np.asarray(x, dtype=float) for x in (sum_c2, sum_cn, sum_n2))
    j = np.asarray(n_clusters, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = c / m
        var = j / (j - 1) * np.maximum(c2 - 2 * p * cn + p * p * n2, 0.0) / (m * m)
        half = sps.norm.ppf(0.5 + confidence / 2) * np.sqrt(var)
        ok = (m > 0) & (j >= 2)
        low = np.where(ok, np.clip(p - half, 0.0, 1.0), np.nan)
        high = np.where(ok, np.clip(p + half, 0.0, 1.0), np.nan)
    return low, high


def cluster_bootstrap_interval(correct, n, *, confidence: float = 0.95, n_resamples: int = 9_999,
                               seed: int = 0) -> tuple[float, float]:
    r"""Cluster bootstrap percentile interval of a ratio of sums, ``sum_j correct_j / sum_j n_j``.

    Sentences (clusters) are resampled with replacement, J of J, and the ratio recomputed each time; the
    interval is the ``(1 -+ confidence) / 2`` percentiles (Davison & Hinkley 1997, section 3.8). For an
    accuracy ``correct_j`` is the number of words right in sentence j of ``n_j``; for a difference of two
    accuracies on the same words give ``correct_j = right_a - right_b``. NaN without words.
    """
    c = np.asarray(correct, dtype=float)
    m = np.asarray(n, dtype=float)
    if c.size == 0 or m.sum() <= 0:
        return np.nan, np.nan
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, c.size, size=(n_resamples, c.size))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = c[idx].sum(1) / m[idx].sum(1)
    ratios = ratios[np.isfinite(ratios)]
    tail = (1 - confidence) / 2
    return float(np.quantile(ratios, tail)), float(np.quantile(ratios, 1 - tail))


def simulate_clustered_level(*, n_sentences: int = 100, words: int = 12, accuracy: float = 0.6, sd_sentence: float = 1.0,
                             n_sim: int = 1000, alpha: float = 0.05, n_resamples: int = 999, rng_seed: int = 0,
                             ) -> pd.DataFrame:
    r"""Type I error of the word-level McNemar test and the sentence-level tests when words cluster in sentences.

    Under H0 two predictors are equally accurate, but each gets whole sentences easier or harder: in sentence
    j predictor a is right on each word with probability :math:`\operatorname{expit}(\mu + u_j)` and b with
    :math:`\operatorname{expit}(\mu + v_j)`, :math:`u_j, v_j \sim N(0, \texttt{sd\_sentence}^2)` independent
    (``sd_sentence = 0``: independent words), ``mu`` set so the mean accuracy is about ``accuracy``. Each
    simulation draws ``n_sentences`` sentences of ``words`` words and tests "a is more accurate" one-sided with
    ``mcnemar_words`` (:func:`paired_exact_test` on the discordant words) and ``signflip_sentences``
    (:func:`cluster_signflip_test`); it also records whether the cluster bootstrap interval of the difference
    of accuracies (and the Wald interval that treats words as independent) covers 0 at ``1 - 2 alpha``.

    Returns
    -------
    DataFrame
        ``method, rejection_rate, mc_se`` (rejection rates at ``alpha``; for the intervals, the rate of
        intervals missing 0 on the side of a: comparable with alpha) with the design columns.
    """
    rng = np.random.default_rng(rng_seed)
    mu = np.log(accuracy / (1 - accuracy))
    rates = {"mcnemar_words": 0, "signflip_sentences": 0, "wald_words_interval": 0, "cluster_bootstrap_interval": 0}
    expit = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    for s in range(n_sim):
        u = rng.normal(0, sd_sentence, n_sentences)[:, None]
        v = rng.normal(0, sd_sentence, n_sentences)[:, None]
        a = rng.random((n_sentences, words)) < expit(mu + u)
        b = rng.random((n_sentences, words)) < expit(mu + v)
        only_a, only_b = int((a & ~b).sum()), int((b & ~a).sum())
        rates["mcnemar_words"] += paired_exact_test(only_a, only_b)[0] <= alpha
        d = a.sum(1).astype(float) - b.sum(1)
        rates["signflip_sentences"] += cluster_signflip_test(d, n_resamples=n_resamples, seed=s) <= alpha
        n_words = n_sentences * words
        diff = d.sum() / n_words
        wald_se = np.sqrt(((a.astype(float) - b).ravel().var(ddof=1)) / n_words)
        rates["wald_words_interval"] += diff - sps.norm.ppf(1 - alpha) * wald_se > 0
        low, _ = cluster_bootstrap_interval(d, np.full(n_sentences, words), confidence=1 - 2 * alpha,
                                            n_resamples=n_resamples, seed=s)
        rates["cluster_bootstrap_interval"] += low > 0
    rows = []
    for method, hits in rates.items():
        r = hits / n_sim
        rows.append({"method": method, "rejection_rate": r, "mc_se": float(np.sqrt(r * (1 - r) / n_sim)),
                     "alpha": alpha, "n_sim": n_sim, "n_sentences": n_sentences, "words": words,
                     "sd_sentence": sd_sentence})
    return pd.DataFrame(rows)


def _best(frame: pd.DataFrame, value: str) -> pd.Series:
    """The row of highest ``value``; ties: the first row (layer, head, direction order)."""
    return frame.loc[frame[value].to_numpy().argmax()] if len(frame) else pd.Series(dtype=object)


def dependency_table(counts: pd.DataFrame, *, min_count: int = 100, selection: str = "split",
                     alternative: str = "greater", correction: str = "holm", alpha: float = 0.05,
                     confidence: float = 0.95, test: str = "signflip_sentences") -> pd.DataFrame:
    r"""Table 1 of Clark et al. (2019) with a paired exact test of each best head against the best offset.

    Per (model, dataset, relation) with at least ``min_count`` words: the head and direction of highest
    accuracy on all words and the offset of highest accuracy on all words (the paper's layout: ``relation,
    n, layer, head, direction, accuracy, offset, offset_accuracy``), with Wilson intervals. Then the test:
    with ``selection="split"`` a head, direction and offset are chosen on the *choose* half (inputs of even
    position) and the test uses only the *test* half (odd position), so the head is not tested on the data
    that picked it; with ``"same"`` both use all words (what the paper's numbers do; the selection then
    inflates the test). The p-values of one (model, dataset) are corrected together over its relations.

    The test (``test``): ``signflip_sentences`` (default) takes the sentence as the unit: per sentence the
    words the head gets right minus those the offset gets right, tested by sign flips
    (:func:`signflip_normal_test`); ``mcnemar_words`` is McNemar's exact test on the discordant words, which
    treats the words of one sentence as independent (anti-conservative when they cluster, METHODS 5.3). The
    intervals of ``accuracy`` and ``offset_accuracy`` are clustered on sentences
    (:func:`cluster_ratio_interval`) with ``signflip_sentences``, Wilson's with ``mcnemar_words``.

    Parameters
    ----------
    counts : DataFrame
        ``dependency_counts`` of :class:`headstats.analyses.dependency.DependencyAccuracy`.
    """
    if test not in PAIRED_TESTS:
        raise ValueError(f"test must be one of {', '.join(PAIRED_TESTS)}, not {test!r}")
    if test == "signflip_sentences" and "d2_test" not in counts:
        raise ValueError("the sentence-level test needs the per-sentence sums of dependency_counts (d2_choose, "
                         "d2_test), which this table lacks (counted by an older headstats): re-run the analysis "
                         "or choose test: mcnemar_words")
    columns = ["relation", "n", "layer", "head", "direction", "accuracy", "offset", "offset_accuracy"]
    rows = []
    for (model, dataset, relation), cell in counts.groupby(["model", "dataset", "relation"], sort=False):
        row = _relation_row(cell, selection=selection)
        if row["n"] < min_count:
            continue
        rows.append({"model": model, "dataset": dataset, "relation": relation, **row})
    if not rows:
        return pd.DataFrame(columns=columns + ["model", "dataset", "p_unc", "p_corr", "reject"])
    table = pd.DataFrame(rows)
    for what, k in (("accuracy", "correct"), ("offset_accuracy", "offset_correct")):
        if test == "signflip_sentences":
            part = "head" if what == "accuracy" else "offset"
            table[f"{what}_ci_low"], table[f"{what}_ci_high"] = cluster_ratio_interval(
                table[k], table["n"], table[f"{part}_c2"], table[f"{part}_cn"], table["nn"], table["n_sentences"],
                confidence=confidence)
        else:
            table[f"{what}_ci_low"], table[f"{what}_ci_high"] = proportion_interval(table[k], table["n"],
                                                                                    confidence=confidence)
    table["test"] = test
    table["alternative"] = alternative
    if test == "signflip_sentences":
        table["p_unc"] = signflip_normal_test(table["head_only"] - table["offset_only"], table["d2_tested"],
                                              alternative=alternative)
    else:
        table["p_unc"] = paired_exact_test(table["head_only"], table["offset_only"], alternative=alternative)
    table["p_unc"] = table["p_unc"].where(table["n_tested"] > 0)
    table["family"] = family_labels(table, ["model", "dataset"])
    table["p_corr"], _ = correct_within_families(table["p_unc"], table["family"], correction=correction, alpha=alpha)
    table["correction"] = correction
    table["alpha"] = alpha
    table["confidence"] = confidence
    table["reject"] = reject(table["p_corr"].to_numpy(), alpha)
    first = [*columns, "model", "dataset"]
    return table[first + [c for c in table.columns if c not in first]].reset_index(drop=True)


def _relation_row(cell: pd.DataFrame, *, selection: str) -> dict[str, Any]:
    """The paper's numbers and the test counts of one relation (rows: layer, head, direction, offset)."""
    cell = cell.reset_index(drop=True)
    n = int(cell["n_choose"].iat[0] + cell["n_test"].iat[0])
    cell = cell.assign(correct=cell["head_correct_choose"] + cell["head_correct_test"],
                       offset_correct=cell["offset_correct_choose"] + cell["offset_correct_test"])
    best = _best(cell, "correct")
    best_offset = _best(cell, "offset_correct")
    if selection == "split":
        chooser, tested = "choose", ["test"]
    else:
        chooser, tested = None, ["choose", "test"]
    pick = best if chooser is None else _best(cell, f"head_correct_{chooser}")
    pick_offset = best_offset if chooser is None else _best(cell, f"offset_correct_{chooser}")
    one = cell[(cell["layer"] == pick["layer"]) & (cell["head"] == pick["head"])
               & (cell["direction"] == pick["direction"]) & (cell["offset"] == pick_offset["offset"])].iloc[0]
    n_tested = int(sum(one[f"n_{h}"] for h in tested))
    head_ok = int(sum(one[f"head_correct_{h}"] for h in tested))
    offset_ok = int(sum(one[f"offset_correct_{h}"] for h in tested))
    ratio = (lambda k: k / n_tested) if n_tested else (lambda k: np.nan)
    return {
        "n": n, "layer": int(best["layer"]), "head": int(best["head"]), "direction": best["direction"],
        "accuracy": best["correct"] / n if n else np.nan, "offset": int(best_offset["offset"]),
        "offset_accuracy": best_offset["offset_correct"] / n if n else np.nan,
        "correct": int(best["correct"]), "offset_correct": int(best_offset["offset_correct"]),
        "selection": selection, "tested_layer": int(pick["layer"]), "tested_head": int(pick["head"]),
        "tested_direction": pick["direction"], "tested_offset": int(pick_offset["offset"]),
        "n_tested": n_tested, "tested_accuracy": ratio(head_ok), "tested_offset_accuracy": ratio(offset_ok),
        "head_only": int(sum(one[f"head_only_{h}"] for h in tested)),
        "offset_only": int(sum(one[f"offset_only_{h}"] for h in tested)),
        **_sentence_sums(cell, best, best_offset, one, tested),
    }


def _sentence_sums(cell: pd.DataFrame, best: pd.Series, best_offset: pd.Series, one: pd.Series,
                   tested: list[str]) -> dict[str, float]:
    """The per-sentence sums behind the clustered interval of the best head's and the best offset's accuracy
    (all words) and behind the sentence-level test (the tested halves); empty without them (older tables)."""
    if "d2_test" not in cell:
        return {}
    halves = list(HALVES_OF_COUNTS)
    head_row = cell[(cell["layer"] == best["layer"]) & (cell["head"] == best["head"])
                    & (cell["direction"] == best["direction"])].iloc[0]
    offset_row = cell[cell["offset"] == best_offset["offset"]].iloc[0]
    return {
        "n_sentences": float(sum(head_row[f"n_sentences_{h}"] for h in halves)),
        "nn": float(sum(head_row[f"nn_{h}"] for h in halves)),
        "head_c2": float(sum(head_row[f"head_c2_{h}"] for h in halves)),
        "head_cn": float(sum(head_row[f"head_cn_{h}"] for h in halves)),
        "offset_c2": float(sum(offset_row[f"offset_c2_{h}"] for h in halves)),
        "offset_cn": float(sum(offset_row[f"offset_cn_{h}"] for h in halves)),
        "d2_tested": float(sum(one[f"d2_{h}"] for h in tested)),
        "n_sentences_tested": float(sum(one[f"n_sentences_{h}"] for h in tested)),
    }


#: The halves of ``dependency_counts`` (inputs of even and odd position).
HALVES_OF_COUNTS = ("choose", "test")


def finish_dependency(tables: Mapping[str, pd.DataFrame], statistics: Any, options: Any,
                      seed: int = 0) -> dict[str, pd.DataFrame]:
    """The study's ``finish`` step of the ``dependency`` analysis: intervals on every head's accuracy and
    ``dependency_table`` (:func:`dependency_table`) with the ``statistics``' correction, alpha and confidence
    and the analysis' ``options`` (``DependencyOptions``: test, min_count, selection, alternative).
    Returns the tables to add or replace (``dependency_heads``, ``dependency_table``)."""
    st = statistics
    out: dict[str, pd.DataFrame] = {}
    heads = tables["dependency_heads"].copy()
    if options.test == "signflip_sentences" and "c2" in heads:
        heads["ci_low"], heads["ci_high"] = cluster_ratio_interval(heads["correct"], heads["n"], heads["c2"],
                                                                   heads["cn"], heads["nn"], heads["n_sentences"],
                                                                   confidence=st.confidence)
    else:
        heads["ci_low"], heads["ci_high"] = proportion_interval(heads["correct"], heads["n"], confidence=st.confidence)
    out["dependency_heads"] = heads
    out["dependency_table"] = dependency_table(
        tables["dependency_counts"], min_count=options.min_count, selection=options.selection,
        alternative=options.alternative, correction=st.correction, alpha=st.alpha, confidence=st.confidence,
        test=options.test)
    return out


def coreference_tests(table: pd.DataFrame, *, correction: str = "holm", alpha: float = 0.05) -> pd.DataFrame:
    """Every head against each baseline of the ``coreference`` table, one-sided ("the head selects antecedents
    more accurately"), corrected over the heads of one (model, dataset, mention_type, baseline).

    Mentions of one input share its text, so the input is the unit: the sign-flip test over inputs of
    ``d = head_only - baseline_only`` from its sums (:func:`signflip_normal_test`, ``test = signflip_inputs``).
    A table without the sums (a state cached before they were kept) gets McNemar's exact test on mentions
    (``mcnemar_exact``), which treats mentions as independent.

    A baseline whose accuracy is exactly 0 or 1 on a (model, dataset, mention type) is degenerate (on GAP the
    same-head-word baseline is 0 by construction: no name shares a pronoun's head word, so it never chooses):
    beating 0 only means being right at all, and 1 cannot be beaten. Its rows are flagged
    (``baseline_degenerate``, with the reason in ``note``), not tested (p NaN, outside the correction's family)
    and never rejected.

    Returns ``model, dataset, mention_type, baseline, layer, head, n, accuracy, baseline_accuracy,
    baseline_degenerate, head_only, baseline_only, test, alternative, p_unc, p_corr, correction, family, alpha,
    reject, note``.
    """
    heads = table[table["predictor"] == "head"]
    baselines = [c.removeprefix("only_vs_") for c in table.columns if c.startswith("only_vs_")]
    frames = []
    for name in baselines:
        base = table[table["predictor"] == name][["model", "dataset", "mention_type", "accuracy"]]
        part = heads.merge(base.rename(columns={"accuracy": "baseline_accuracy"}),
                           on=["model", "dataset", "mention_type"])
        part = part.assign(baseline=name, head_only=part[f"only_vs_{name}"], baseline_only=part[f"{name}_only"])
        if f"sum_d_vs_{name}" in part:
            part = part.assign(sum_d=part[f"sum_d_vs_{name}"], sum_d2=part[f"sum_d2_vs_{name}"])
        frames.append(part)
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    out["alternative"] = "greater"
    if "sum_d" in out and out["sum_d"].notna().all():  # the input (sentence, document chunk) as the unit
        out["test"] = "signflip_inputs"
        out["p_unc"] = signflip_normal_test(out["sum_d"].to_numpy(float), out["sum_d2"].to_numpy(float))
    else:
        out["test"] = "mcnemar_exact"
        out["p_unc"] = paired_exact_test(out["head_only"], out["baseline_only"]).astype(float)
    out["p_unc"] = out["p_unc"].where(out["n"] > 0)
    base_acc = out["baseline_accuracy"].astype(float)
    out["baseline_degenerate"] = (out["n"] > 0) & ((base_acc == 0) | (base_acc == 1))
    out["note"] = np.where(out["baseline_degenerate"] & (base_acc == 0),
                           "baseline right on no query (0 by construction, e.g. no candidate shares the head word): "
                           "beating it only means being right at all; not tested",
                           np.where(out["baseline_degenerate"], "baseline right on every query: it cannot be beaten; "
                                    "not tested", ""))
    out["p_unc"] = out["p_unc"].where(~out["baseline_degenerate"])
    out["family"] = family_labels(out, ["model", "dataset", "mention_type", "baseline"])
    out["p_corr"], _ = correct_within_families(out["p_unc"], out["family"], correction=correction, alpha=alpha)
    out["correction"], out["alpha"] = correction, alpha
    out["reject"] = reject(out["p_corr"].to_numpy(), alpha)
    cols = ["model", "dataset", "mention_type", "baseline", "layer", "head", "n", "accuracy", "baseline_accuracy",
            "baseline_degenerate", "head_only", "baseline_only", "test", "alternative", "p_unc", "p_corr",
            "correction", "family", "alpha", "reject", "note"]
    return out[cols].reset_index(drop=True)


def counted_only(table: pd.DataFrame, n: str) -> pd.DataFrame:
    """The rows of the (model, data set) pairs where the analysis counted anything (``n`` summed > 0).

    A data set that lacks what an analysis needs (no parses for the probes, no coreference links) is left out
    of its tables, with the reason in the analysis' notes, rather than shown as untested rows with p = 1.
    """
    if table.empty:
        return table
    return table[table.groupby(["model", "dataset"])[n].transform("sum") > 0].reset_index(drop=True)


def finish_coreference(tables: Mapping[str, pd.DataFrame], statistics: Any, options: Any = None,
                       seed: int = 0) -> dict[str, pd.DataFrame]:
    """The study's ``finish`` step of the ``coreference`` analysis: Wilson intervals and the head tests, on the
    data sets that have mentions with antecedents. Returns the tables to add or replace (``coreference``,
    ``coreference_tests``)."""
    st = statistics
    out: dict[str, pd.DataFrame] = {}
    table = counted_only(tables["coreference"], "n").copy()
    table["ci_low"], table["ci_high"] = proportion_interval(table["correct"], table["n"], confidence=st.confidence)
    out["coreference"] = table
    out["coreference_tests"] = coreference_tests(table, correction=st.correction, alpha=st.alpha)
    return out


def finish_probes(tables: Mapping[str, pd.DataFrame], statistics: Any, options: Any = None,
                  seed: int = 0) -> dict[str, pd.DataFrame]:
    """The study's ``finish`` step of the ``probing`` analysis: Wilson intervals of each UAS, and McNemar's exact
    one-sided test of each probe against each baseline on the same held-out words (``p_vs_<baseline>``,
    uncorrected: a handful of planned comparisons; ``p_corr_vs_<baseline>`` Holm-corrected over the probes of
    one model and data set with the ``statistics``' correction), on the data sets with parsed held-out words.
    Returns the table to replace (``probes``)."""
    st = statistics
    out: dict[str, pd.DataFrame] = {}
    probes = counted_only(tables["probes"], "n_words").copy()
    probes["ci_low"], probes["ci_high"] = proportion_interval(probes["correct"], probes["n_words"],
                                                              confidence=st.confidence)
    for base in ("right_branching", "distance_and_words"):
        p = paired_exact_test(probes[f"only_vs_{base}"], probes[f"{base}_only"]).astype(float)
        p[(probes["probe"] == base).to_numpy()] = np.nan
        probes[f"p_vs_{base}"] = p
        labels = family_labels(probes, ["model", "dataset"])
        probes[f"p_corr_vs_{base}"], _ = correct_within_families(p, labels, correction=st.correction, alpha=st.alpha)
    probes["correction"], probes["alpha"] = st.correction, st.alpha
    out["probes"] = probes
    return out
