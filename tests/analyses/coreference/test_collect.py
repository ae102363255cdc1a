"""Antecedent selection (METHODS 2.4): planted word-level maps with hand-computed choices, baselines and
discordant counts; the analysis through a protocol on a tiny random model and a GUM-style file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from conftest import GUM

from headstats.analyses.coreference.collect import AntecedentSelection
from headstats.engine.batch import view_of
from headstats.engine.collector import Context
from headstats.model.encoding import EncodedInput


def item() -> EncodedInput:
    """[CLS] w0 w1 w2 w3 w4 [SEP]; w1 has two pieces (positions 2, 3), so w2 is at 4, w3 at 5, w4 at 6."""
    n = 8
    special = np.zeros(n, bool)
    special[[0, 7]] = True
    return EncodedInput(0, "s", np.arange(n), np.zeros(n, int), special, special & (np.arange(n) == 0),
                        special & (np.arange(n) == 7), np.zeros(n, int), False,
                        word_pieces=[(1,), (2, 3), (4,), (5,), (6,)])


QUERY = {"head": 4, "type": "pronoun", "nearest": 1, "same_head": -1,
         "candidates": [{"words": [0], "gold": True, "head_text": "x"},
                        {"words": [1, 2], "gold": False, "head_text": "y"}]}


def planted() -> torch.Tensor:
    attn = torch.zeros(1, 1, 2, 8, 8)
    attn[0, 0, :] = torch.eye(8)
    # head 0: w4 gives 0.5 to w0 and 0.2 + 0.1 (pieces of w1) + 0.1 (w2) to candidate 1 -> candidate 0, right
    attn[0, 0, 0, 6] = torch.tensor([0, 0.5, 0.2, 0.1, 0.1, 0.1, 0, 0])
    # head 1: 0.3 to w0 against 0.2 + 0.2 + 0.3 to candidate 1 (a name's words are summed) -> wrong
    attn[0, 0, 1, 6] = torch.tensor([0, 0.3, 0.2, 0.2, 0.3, 0, 0, 0])
    return attn


def test_selection_and_baselines_by_hand():
    collector = AntecedentSelection(Context(("m",), "d", 1, 2, {"queries": {"s": [QUERY]}}))
    collector.update(view_of(planted(), [item()]))
    table = collector.tables()["coreference"]
    heads = table[(table.predictor == "head") & (table.mention_type == "pronoun")].set_index("head")
    assert heads.loc[0, "accuracy"] == 1.0 and heads.loc[1, "accuracy"] == 0.0
    assert (heads.loc[0, "only_vs_nearest_mention"], heads.loc[1, "nearest_mention_only"]) == (1, 0)
    base = table[(table.predictor != "head") & (table.mention_type == "all")].set_index("predictor")
    assert base.loc["nearest_mention", "accuracy"] == 0.0 and base.loc["same_head_word", "accuracy"] == 0.0
    assert (table[table.mention_type == "proper"].n == 0).all()


def test_enabled_from_a_protocol_on_a_tiny_model(tmp_path, tiny_model_dir):
    from headstats.config.protocol import load_protocol
    from headstats.report.builder import build_report
    from headstats.study.run import run_study

    data = tmp_path / "g.conllu"
    data.write_text(GUM)
    protocol = {"name": "coref", "models": [{"name": "tiny", "path": str(tiny_model_dir)}],
                "datasets": [{"name": "gum", "path": str(data), "format": "gum_coref"}],
                "scoring": {"roles": ["local"]}, "statistics": {"tau": 1.0, "sensitivity": False},
                "report": {"figures": {"formats": ["png"], "dpi": 72}},
                "analyses": ["coreference"]}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(protocol))
    result = run_study(load_protocol(path), tmp_path / "out", report=build_report)
    table = pd.read_csv(result.out / "coreference.csv")
    base = table[(table.predictor != "head") & (table.mention_type == "all")].set_index("predictor")
    # two queries (She, the dog): nearest gets neither (the old dog; She); same head word gets "the dog"
    assert base.loc["nearest_mention", "n"] == 2
    assert base.loc["nearest_mention", "accuracy"] == 0.0 and base.loc["same_head_word", "accuracy"] == 0.5
    heads = table[(table.predictor == "head") & (table.mention_type == "all")]
    assert len(heads) == 4 and heads.accuracy.isin([0.0, 0.5, 1.0]).all()
    tests = pd.read_csv(result.out / "coreference_tests.csv")
    assert len(tests) == 4 * 4 * 2   # heads x mention types (with all) x baselines
    assert "Coreference: antecedent selection" in (result.out / "report.md").read_text()


def test_mentions_of_one_input_are_summed_before_squaring():
    # the same query twice in one input: head 0 is right and the nearest-mention baseline wrong on both, so the
    # input's difference is 2 (sum d = 2, sum d^2 = 4; as independent mentions it would be 1 + 1 = 2)
    collector = AntecedentSelection(Context(("m",), "d", 1, 2, {"queries": {"s": [QUERY, QUERY]}}))
    collector.update(view_of(planted(), [item()]))
    merged = AntecedentSelection.merge([collector.state(), collector.state()])  # two such inputs
    table = collector.tables()["coreference"]
    heads = table[(table.predictor == "head") & (table.mention_type == "all")].set_index("head")
    assert heads.loc[0, "sum_d_vs_nearest_mention"] == 2 and heads.loc[0, "sum_d2_vs_nearest_mention"] == 4
    assert heads.loc[1, "sum_d_vs_nearest_mention"] == 0 and heads.loc[1, "sum_d2_vs_nearest_mention"] == 0
    assert merged["sum_d"]["nearest_mention"][3, 0, 0] == 4 and merged["sum_d2"]["nearest_mention"][3, 0, 0] == 8


def test_inputs_with_a_difference_above_four_are_counted_and_tested_by_the_exact_law():
    """Head 0 beats the nearest mention on 6 queries of one input (d = 6) and on 2 of another (d = 2); shards
    with different largest |d| merge. The exact sign-flip law over the two inputs: only (+6, +2) reaches 8, p =
    1/4 (counted only up to |d| = 4 it was normal: 8 / sqrt(40), p = 0.103)."""
    from headstats.analyses.coreference.finish import coreference_tests

    six = AntecedentSelection(Context(("m",), "d", 1, 2, {"queries": {"s": [QUERY] * 6}}))
    six.update(view_of(planted(), [item()]))
    two = AntecedentSelection(Context(("m",), "d", 1, 2, {"queries": {"s": [QUERY] * 2}}))
    two.update(view_of(planted(), [item()]))
    assert two.state()["absd"]["nearest_mention"].shape == (2, 4, 1, 2)  # as long as its largest |d|
    merged = AntecedentSelection(Context(("m",), "d", 1, 2, {"queries": {}}))
    merged.load_state(AntecedentSelection.merge([two.state(), six.state()]))
    table = merged.tables()["coreference"]
    heads = table[(table.predictor == "head") & (table.mention_type == "all")].set_index("head")
    assert [heads.loc[0, f"absd_vs_nearest_mention_{m}"] for m in range(1, 7)] == [0, 1, 0, 0, 0, 1]
    assert heads.loc[0, "sum_d2_vs_nearest_mention"] == 40
    # the planted nearest mention is never right, a degenerate baseline that is not tested: give it 1/2
    tests = coreference_tests(table.assign(accuracy=table.accuracy.where(table.predictor == "head", 0.5)))
    row = tests[(tests.baseline == "nearest_mention") & (tests.mention_type == "all") & (tests["head"] == 0)].iloc[0]
    assert row["method"] == "exact" and row["p_unc"] == pytest.approx(0.25, rel=1e-12)
