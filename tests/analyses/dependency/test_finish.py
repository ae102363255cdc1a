"""Table 1 of Clark et al.: the head and offset chosen on one half, tested on the other, clustered by sentence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.analyses.dependency.finish import dependency_table
from headstats.stats.accuracy import paired_exact_test


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


def test_dependency_table_is_exact_when_every_sentence_differs_by_one_word():
    # the tested cell: 5 sentences where only the head is right (d = +1), none the other way: the binomial
    # law gives 1/32, where the normal approximation gave 0.0127 (EWT compound, issue 32)
    choose = {"n": 100, "head": [60, 70], "offset": [40, 50], "head_only": [[30, 25], [35, 5]],
              "offset_only": [[10, 15], [5, 0]]}
    frame = counts_frame(choose, choose)
    for half in ("choose", "test"):
        frame[f"d2_{half}"] = [90.0, 80.0, 100.0, 5.0]
        frame[f"n_sentences_{half}"] = 10
        frame[f"nn_{half}"] = 1000
        frame[f"head_c2_{half}"], frame[f"head_cn_{half}"] = 400.0, 650.0
        frame[f"offset_c2_{half}"], frame[f"offset_cn_{half}"] = 200.0, 450.0
        frame[f"absd1_{half}"] = [10, 10, 10, 5]
        for m in (2, 3, 4):
            frame[f"absd{m}_{half}"] = [20, 10, 20, 0]
    row = dependency_table(frame, min_count=10).iloc[0]
    assert (row["tested_head"], row["tested_offset"]) == (1, 1)
    assert row["method"] == "binomial" and row["p_unc"] == pytest.approx(1 / 32, rel=1e-12)


def test_a_data_set_without_parses_gives_an_empty_table_not_an_error():
    """Plain text (no words, no arcs): the collector counts nothing, and Table 1 is empty with its columns."""
    table = dependency_table(pd.DataFrame())
    assert table.empty and {"relation", "n", "layer", "head", "p_corr", "reject"} <= set(table.columns)
