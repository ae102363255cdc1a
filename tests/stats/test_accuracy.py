"""Accuracy intervals, McNemar's exact test and the dependency table (METHODS 2.3), checked against
statsmodels and scipy and against counts worked out by hand."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from headstats.stats.accuracy import dependency_table, paired_exact_test, proportion_interval


def test_wilson_interval_by_formula():
    # Wilson (1927): (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n), p = 8/10
    z, p, n = 1.959963984540054, 0.8, 10
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low, high = proportion_interval([8], [10])
    assert low[0] == pytest.approx((centre - half) / (1 + z * z / n), rel=1e-9)
    assert high[0] == pytest.approx((centre + half) / (1 + z * z / n), rel=1e-9)
    assert np.isnan(proportion_interval([0], [0])[0][0])


def test_paired_exact_test_is_mcnemar_exact():
    # two-sided equals statsmodels' exact McNemar on the 2x2 table; one-sided is P(X >= b), X ~ Bin(b + c, 1/2)
    for b, c in [(9, 2), (3, 3), (0, 5), (12, 0)]:
        table = [[40, b], [c, 30]]
        assert paired_exact_test(b, c, alternative="two-sided")[0] == pytest.approx(mcnemar(table, exact=True).pvalue)
    assert paired_exact_test(9, 2)[0] == pytest.approx(sum(math.comb(11, k) for k in range(9, 12)) / 2**11)
    assert paired_exact_test(0, 0)[0] == 1.0


def counts_frame(choose: dict, test: dict, relation="det") -> pd.DataFrame:
    """Two heads (layer 0, heads 0 and 1), one direction, offsets -1 and 1; values are per-head dicts."""
    rows = []
    for head in (0, 1):
        for k, offset in enumerate((-1, 1)):
            row = {"model": "m", "dataset": "d", "relation": relation, "layer": 0, "head": head,
                   "direction": "dependent_to_head", "offset": offset}
            for half, values in (("choose", choose), ("test", test)):
                row |= {f"n_{half}": values["n"], f"head_correct_{half}": values["head"][head],
                        f"offset_correct_{half}": values["offset"][k],
                        f"head_only_{half}": values["head_only"][head][k],
                        f"offset_only_{half}": values["offset_only"][head][k]}
            rows.append(row)
    return pd.DataFrame(rows)


def test_dependency_table_chooses_on_one_half_and_tests_on_the_other():
    # choose half: head 1 best (70/100), offset +1 best (50); test half: head 0 best (80/100) and offset -1 (60)
    choose = {"n": 100, "head": [60, 70], "offset": [40, 50], "head_only": [[30, 25], [35, 30]],
              "offset_only": [[10, 15], [5, 10]]}
    test = {"n": 100, "head": [80, 60], "offset": [60, 45], "head_only": [[25, 40], [20, 30]],
            "offset_only": [[5, 5], [20, 15]]}
    table = dependency_table(counts_frame(choose, test), min_count=10, test="mcnemar_words").iloc[0]
    # the paper's layout, all words: head 0 (140/200), offset -1 (100/200)
    assert (table["layer"], table["head"], table["accuracy"]) == (0, 0, 0.7)
    assert (table["offset"], table["offset_accuracy"]) == (-1, 0.5)
    # the test: head 1 and offset +1 (chosen on the even half), judged on the odd half: b = 30, c = 15
    assert (table["tested_head"], table["tested_offset"], table["n_tested"]) == (1, 1, 100)
    assert (table["head_only"], table["offset_only"]) == (30, 15)
    assert table["tested_accuracy"] == 0.6 and table["tested_offset_accuracy"] == 0.45
    assert table["p_unc"] == pytest.approx(paired_exact_test(30, 15)[0])
    same = dependency_table(counts_frame(choose, test), min_count=10, selection="same", test="mcnemar_words").iloc[0]
    # chosen and tested on all: head 0 against offset -1: b = 30 + 25, c = 10 + 5
    assert (same["head_only"], same["offset_only"], same["n_tested"]) == (55, 15, 200)


def test_dependency_table_corrects_over_relations_and_drops_rare_ones():
    choose = {"n": 100, "head": [60, 70], "offset": [40, 50], "head_only": [[30, 25], [35, 30]],
              "offset_only": [[10, 15], [5, 10]]}
    frames = [counts_frame(choose, choose, r) for r in ("det", "amod")]
    rare = counts_frame({**choose, "n": 2}, {**choose, "n": 2}, "case")
    table = dependency_table(pd.concat([*frames, rare]), min_count=10, correction="bonferroni", test="mcnemar_words")
    assert list(table.relation) == ["det", "amod"]
    assert table["p_corr"].tolist() == pytest.approx(np.minimum(1, 2 * table["p_unc"]).tolist())
    assert list(table.columns[:8]) == ["relation", "n", "layer", "head", "direction", "accuracy", "offset",
                                       "offset_accuracy"]


def test_coreference_tests_every_head_against_each_baseline():
    from headstats.stats.accuracy import coreference_tests

    table = pd.DataFrame([
        {"model": "m", "dataset": "d", "mention_type": "all", "predictor": "head", "layer": 0, "head": h, "n": 50,
         "accuracy": a, "correct": int(50 * a), "only_vs_nearest_mention": b, "nearest_mention_only": c}
        for h, a, b, c in ((0, 0.8, 20, 2), (1, 0.4, 5, 6))] + [
        {"model": "m", "dataset": "d", "mention_type": "all", "predictor": "nearest_mention", "layer": None,
         "head": None, "n": 50, "accuracy": 0.44, "correct": 22}])
    tests = coreference_tests(table, correction="bonferroni")
    assert tests["baseline_accuracy"].tolist() == [0.44, 0.44]
    expected = [paired_exact_test(20, 2)[0], paired_exact_test(5, 6)[0]]
    assert tests["p_unc"].tolist() == pytest.approx(expected)
    assert tests["p_corr"].tolist() == pytest.approx(np.minimum(1, 2 * np.array(expected)).tolist())
    assert tests["reject"].tolist() == [True, False]


def test_coreference_tests_take_the_input_as_the_unit_when_the_sums_are_there():
    # sum d = 10, sum d^2 = 30 over inputs: z = 10 / sqrt(30), one-sided normal p; McNemar on the same
    # mentions (12 against 2) would treat them as independent
    from scipy.stats import norm

    from headstats.stats.accuracy import coreference_tests

    table = pd.DataFrame([
        {"model": "m", "dataset": "d", "mention_type": "all", "predictor": "head", "layer": 0, "head": 0, "n": 50,
         "accuracy": 0.5, "correct": 25, "only_vs_nearest_mention": 12, "nearest_mention_only": 2,
         "sum_d_vs_nearest_mention": 10.0, "sum_d2_vs_nearest_mention": 30.0},
        {"model": "m", "dataset": "d", "mention_type": "all", "predictor": "nearest_mention", "layer": None,
         "head": None, "n": 50, "accuracy": 0.3, "correct": 15}])
    tests = coreference_tests(table)
    assert tests["test"].tolist() == ["signflip_inputs"]
    assert tests["p_unc"].iloc[0] == pytest.approx(norm.sf(10 / np.sqrt(30)), rel=1e-12)
    old = coreference_tests(table.drop(columns=["sum_d_vs_nearest_mention", "sum_d2_vs_nearest_mention"]))
    assert old["test"].tolist() == ["mcnemar_exact"]
    assert old["p_unc"].iloc[0] == pytest.approx(paired_exact_test(12, 2)[0])


def test_a_baseline_that_is_0_or_1_is_flagged_and_never_beaten():
    # GAP: the same-head-word baseline is right on no query (no name shares a pronoun's head word); a head right
    # on 20 of 50 would "beat" it with McNemar p = 0.5^20; a baseline right on every query cannot be beaten
    from headstats.stats.accuracy import coreference_tests

    table = pd.DataFrame([
        {"model": "m", "dataset": "gap", "mention_type": "all", "predictor": "head", "layer": 0, "head": h, "n": 50,
         "accuracy": a, "correct": int(50 * a), "only_vs_same_head_word": int(50 * a), "same_head_word_only": 0,
         "only_vs_nearest_mention": b, "nearest_mention_only": c}
        for h, a, b, c in ((0, 0.4, 12, 2), (1, 0.2, 3, 3))] + [
        {"model": "m", "dataset": "gap", "mention_type": "all", "predictor": p, "layer": None, "head": None,
         "n": 50, "accuracy": acc, "correct": int(50 * acc)}
        for p, acc in (("same_head_word", 0.0), ("nearest_mention", 0.22))])
    tests = coreference_tests(table, correction="holm").set_index(["baseline", "head"])
    flat = tests.loc["same_head_word"]
    assert flat["baseline_degenerate"].all() and flat["p_unc"].isna().all() and not flat["reject"].any()
    assert flat["note"].str.startswith("baseline right on no query (0 by construction").all()
    live = tests.loc["nearest_mention"]
    assert not live["baseline_degenerate"].any() and (live["note"] == "").all()
    # the family of the live baseline is its own two heads (Holm: 2 x the smaller p)
    assert live.loc[0, "p_corr"] == pytest.approx(2 * paired_exact_test(12, 2)[0])
    perfect = table.assign(accuracy=table["accuracy"].where(table["predictor"] != "nearest_mention", 1.0))
    top = coreference_tests(perfect).set_index(["baseline", "head"]).loc["nearest_mention"]
    assert top["baseline_degenerate"].all() and not top["reject"].any()
    assert (top["note"] == "baseline right on every query: it cannot be beaten; not tested").all()


def test_data_sets_where_nothing_was_counted_are_left_out_not_given_p_1():
    """A data set without parses (probes) or antecedents (coreference) has no rows, rather than untested rows
    whose McNemar p-value of 0 against 0 discordant words would read as 1."""
    from types import SimpleNamespace

    from headstats.stats.accuracy import finish_coreference, finish_probes

    statistics = SimpleNamespace(confidence=0.95, correction="holm", alpha=0.05)
    probes = pd.DataFrame([
        {"model": "m", "dataset": d, "probe": probe, "n_words": n, "correct": c,
         "only_vs_right_branching": a, "right_branching_only": b,
         "only_vs_distance_and_words": 0, "distance_and_words_only": 0}
        for d, n, rows in (("parsed", 40, [("right_branching", 10, 0, 0), ("attention_only", 30, 25, 5)]),
                           ("raw", 0, [("right_branching", 0, 0, 0), ("attention_only", 0, 0, 0)]))
        for probe, c, a, b in rows])
    out = finish_probes({"probes": probes}, statistics)["probes"]
    assert out["dataset"].tolist() == ["parsed", "parsed"]
    assert out["p_vs_right_branching"].iloc[1] == pytest.approx(paired_exact_test(25, 5)[0])
    coref = pd.DataFrame([
        {"model": "m", "dataset": d, "mention_type": "all", "predictor": "head", "layer": 0, "head": 0, "n": n,
         "accuracy": a, "correct": c, "only_vs_nearest_mention": 3 if n else 0, "nearest_mention_only": 1 if n else 0}
        for d, n, a, c in (("gum", 20, 0.5, 10), ("wiki", 0, float("nan"), 0))])
    finished = finish_coreference({"coreference": coref}, statistics)
    assert finished["coreference"]["dataset"].tolist() == ["gum"]
    assert set(finished["coreference_tests"]["dataset"]) <= {"gum"}


def test_cluster_signflip_test_enumerates_the_sentences_signs():
    from itertools import product

    from headstats.stats.accuracy import cluster_signflip_test

    d = [2.0, 1.0, -1.0, 3.0, 0.0]  # the 0 sentence changes nothing
    sums = [sum(s * x for s, x in zip(signs, d[:4])) for signs in product((1, -1), repeat=4)]
    assert cluster_signflip_test(d) == pytest.approx(sum(v >= 5 for v in sums) / 16)  # 2/16
    assert cluster_signflip_test(d, alternative="two-sided") == pytest.approx(sum(abs(v) >= 5 for v in sums) / 16)
    assert cluster_signflip_test([0, 0]) == 1.0
    # many sentences: Monte Carlo, p = (1 + hits) / (B + 1), never 0
    p = cluster_signflip_test(np.ones(40), n_resamples=999)
    assert p == pytest.approx(1 / 1000)


def test_cluster_bootstrap_interval_resamples_whole_sentences():
    from headstats.stats.accuracy import cluster_bootstrap_interval

    # identical sentences: every resample has the same ratio
    assert cluster_bootstrap_interval([3, 3, 3], [4, 4, 4]) == (0.75, 0.75)
    rng = np.random.default_rng(0)
    n = rng.integers(5, 20, 60)
    correct = rng.binomial(n, 0.7)
    low, high = cluster_bootstrap_interval(correct, n, confidence=0.9, n_resamples=4999)
    assert low < correct.sum() / n.sum() < high
    # the by-hand bootstrap with the same generator gives the same percentiles
    idx = np.random.default_rng(0).integers(0, 60, size=(4999, 60))
    ratios = correct[idx].sum(1) / n[idx].sum(1)
    assert (low, high) == (np.quantile(ratios, 0.05), np.quantile(ratios, 0.95))


def test_words_clustered_in_sentences_make_mcnemar_anti_conservative_not_the_sentence_test():
    """METHODS 5.3 on simulated data: under H0 with sentence effects (sd 1.5 on the logit), McNemar on words
    rejects far above alpha, the sign-flip test over sentences near it; with independent words both hold."""
    from headstats.stats.accuracy import simulate_clustered_level

    out = simulate_clustered_level(n_sentences=60, words=12, sd_sentence=1.5, n_sim=200, n_resamples=199,
                                   rng_seed=3).set_index("method")["rejection_rate"]
    assert out["mcnemar_words"] > 0.12 and out["wald_words_interval"] > 0.12
    assert out["signflip_sentences"] < 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200)
    assert out["cluster_bootstrap_interval"] < 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200) + 0.02
    flat = simulate_clustered_level(n_sentences=60, words=12, sd_sentence=0.0, n_sim=200, n_resamples=199,
                                    rng_seed=4).set_index("method")["rejection_rate"]
    assert flat["mcnemar_words"] < 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200)


def test_signflip_normal_test_has_the_sign_flip_variance_and_approaches_the_exact_test():
    from itertools import product

    from headstats.stats.accuracy import cluster_signflip_test, signflip_normal_test

    d = np.array([3.0, -1.0, 2.0, 2.0, 0.0, 1.0])
    sums = np.array([np.dot(signs, d) for signs in product((1, -1), repeat=len(d))])
    assert sums.mean() == 0 and sums.var() == pytest.approx((d * d).sum())  # the variance is exactly sum d^2
    assert signflip_normal_test(d.sum(), (d * d).sum())[()] == pytest.approx(sps.norm.sf(7 / np.sqrt(19)))
    assert signflip_normal_test(0.0, 0.0)[()] == 1.0
    rng = np.random.default_rng(2)
    d = rng.integers(-3, 5, size=300).astype(float)
    exact = cluster_signflip_test(d, n_resamples=199_999)
    assert signflip_normal_test(d.sum(), (d * d).sum())[()] == pytest.approx(exact, abs=0.01)


def test_cluster_ratio_interval_is_the_sandwich_over_sentences():
    from headstats.stats.accuracy import cluster_ratio_interval

    rng = np.random.default_rng(1)
    n = rng.integers(3, 15, 80).astype(float)
    c = rng.binomial(n.astype(int), rng.uniform(0.3, 0.9, 80)).astype(float)
    p = c.sum() / n.sum()
    se = np.sqrt(80 / 79 * ((c - p * n) ** 2).sum()) / n.sum()
    low, high = cluster_ratio_interval(c.sum(), n.sum(), (c * c).sum(), (c * n).sum(), (n * n).sum(), 80,
                                       confidence=0.9)
    assert (low, high) == (pytest.approx(p - 1.6448536269514722 * se), pytest.approx(p + 1.6448536269514722 * se))
    # one word per sentence: the Wald interval of a proportion (times J / (J - 1))
    x = (rng.random(200) < 0.7).astype(float)
    lo, hi = cluster_ratio_interval(x.sum(), 200, x.sum(), x.sum(), 200, 200)
    wald = 1.959963984540054 * np.sqrt(x.mean() * (1 - x.mean()) / 200 * 200 / 199)
    assert (lo, hi) == (pytest.approx(x.mean() - wald), pytest.approx(x.mean() + wald))


def test_dependency_table_tests_sentences_by_default():
    from headstats.stats.accuracy import signflip_normal_test

    choose = {"n": 100, "head": [60, 70], "offset": [40, 50], "head_only": [[30, 25], [35, 30]],
              "offset_only": [[10, 15], [5, 10]]}
    frame = counts_frame(choose, choose)
    for half in ("choose", "test"):
        frame[f"d2_{half}"] = [90.0, 80.0, 100.0, 120.0]
        frame[f"n_sentences_{half}"] = 10
        frame[f"nn_{half}"] = 1000
        frame[f"head_c2_{half}"], frame[f"head_cn_{half}"] = 400.0, 650.0
        frame[f"offset_c2_{half}"], frame[f"offset_cn_{half}"] = 200.0, 450.0
    row = dependency_table(frame, min_count=10).iloc[0]
    assert row["test"] == "signflip_sentences"
    # chosen on the even half: head 1, offset +1; tested on the odd half: d = 30 - 10, sum d^2 = 120
    assert row["p_unc"] == pytest.approx(signflip_normal_test(30 - 10, 120.0)[()])
    with pytest.raises(ValueError, match="mcnemar_words"):
        dependency_table(counts_frame(choose, choose), min_count=10)
