"""coreference_tests: every head against each baseline, by McNemar or by sign flips over inputs, corrected."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.stats.accuracy import paired_exact_test
from headstats.tables import RunTables


def test_coreference_tests_every_head_against_each_baseline():
    from headstats.analyses.coreference.finish import coreference_tests

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

    from headstats.analyses.coreference.finish import coreference_tests

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
    from headstats.analyses.coreference.finish import coreference_tests

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

    from headstats.analyses.coreference.finish import finish_coreference
    from headstats.analyses.probing.finish import finish_probes

    statistics = SimpleNamespace(confidence=0.95, correction="holm", alpha=0.05)
    probes = pd.DataFrame([
        {"model": "m", "dataset": d, "probe": probe, "n_words": n, "correct": c,
         "only_vs_right_branching": a, "right_branching_only": b,
         "only_vs_distance_and_words": 0, "distance_and_words_only": 0}
        for d, n, rows in (("parsed", 40, [("right_branching", 10, 0, 0), ("attention_only", 30, 25, 5)]),
                           ("raw", 0, [("right_branching", 0, 0, 0), ("attention_only", 0, 0, 0)]))
        for probe, c, a, b in rows])
    out = finish_probes(RunTables({"probes": probes}), statistics)["probes"]
    assert out["dataset"].tolist() == ["parsed", "parsed"]
    assert out["p_vs_right_branching"].iloc[1] == pytest.approx(paired_exact_test(25, 5)[0])
    coref = pd.DataFrame([
        {"model": "m", "dataset": d, "mention_type": "all", "predictor": "head", "layer": 0, "head": 0, "n": n,
         "accuracy": a, "correct": c, "only_vs_nearest_mention": 3 if n else 0, "nearest_mention_only": 1 if n else 0}
        for d, n, a, c in (("gum", 20, 0.5, 10), ("wiki", 0, float("nan"), 0))])
    finished = finish_coreference(RunTables({"coreference": coref}), statistics)
    assert finished["coreference"]["dataset"].tolist() == ["gum"]
    assert set(finished["coreference_tests"]["dataset"]) <= {"gum"}


def test_coreference_tests_are_exact_when_every_input_differs_by_one_mention():
    from headstats.analyses.coreference.finish import coreference_tests

    table = pd.DataFrame([
        {"model": "m", "dataset": "d", "mention_type": "all", "predictor": "head", "layer": 0, "head": 0, "n": 50,
         "accuracy": 0.5, "correct": 25, "only_vs_nearest_mention": 9, "nearest_mention_only": 3,
         "sum_d_vs_nearest_mention": 6.0, "sum_d2_vs_nearest_mention": 12.0, "absd_vs_nearest_mention_1": 12,
         "absd_vs_nearest_mention_2": 0, "absd_vs_nearest_mention_3": 0, "absd_vs_nearest_mention_4": 0},
        {"model": "m", "dataset": "d", "mention_type": "all", "predictor": "nearest_mention", "layer": None,
         "head": None, "n": 50, "accuracy": 0.3, "correct": 15}])
    tests = coreference_tests(table)
    # 12 inputs at +-1, 9 of them for the head: P(X >= 9), X ~ Binomial(12, 1/2) = 299/4096
    assert tests["method"].tolist() == ["binomial"]
    assert tests["p_unc"].iloc[0] == pytest.approx(299 / 4096, rel=1e-12)
