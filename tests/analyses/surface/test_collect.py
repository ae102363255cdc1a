"""Surface patterns (METHODS 2.1): planted maps with hand-computed answers, merging, the table's columns,
the tiny random model against a straight computation from the Hugging Face attentions, and a protocol run
writing surface.csv and surface_tests.csv."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from headstats.analyses.surface.collect import (SURFACE_COLUMNS, SurfacePatterns, dominant_behaviour, punctuation_ids, surface_of)
from headstats.analyses.surface.options import DEFAULT_HYPOTHESES, SURFACE_MEASURES
from headstats.engine.batch import view_of
from headstats.engine.collector import Context
from headstats.model.encoding import EncodedInput

DEMO = Path(__file__).resolve().parents[3] / "data" / "demo"
SRC = Path(__file__).resolve().parents[3] / "src"
CLS, SEP, A, DOT, B = 2, 3, 10, 11, 12

# [CLS] a . [SEP] a [SEP]: a pair, sentence B = "a [SEP]"
PAIR_IDS = [CLS, A, DOT, SEP, A, SEP]
PAIR_ROWS = [
    [0.5, 0.5, 0.0, 0.0, 0.0, 0.0],
    [0.2, 0.0, 0.3, 0.0, 0.5, 0.0],
    [0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
    [0.0, 0.4, 0.0, 0.6, 0.0, 0.0],
    [0.0, 0.0, 0.0, 0.5, 0.0, 0.5],
]
# [CLS] b b [SEP]: a single sentence, uniform attention
SINGLE_IDS = [CLS, B, B, SEP]


def pair_item(index=0):
    n = 6
    special = np.array([1, 0, 0, 1, 0, 1], bool)
    return EncodedInput(index, f"p{index}", np.array(PAIR_IDS), np.array([0, 0, 0, 0, 1, 1]), special,
                        np.arange(n) == 0, np.array([0, 0, 0, 1, 0, 1], bool), np.array([0, 0, 0, 0, 1, 1]), True)


def single_item(index=1):
    special = np.array([1, 0, 0, 1], bool)
    return EncodedInput(index, f"s{index}", np.array(SINGLE_IDS), np.zeros(4, int), special, np.arange(4) == 0,
                        np.arange(4) == 3, np.zeros(4, int), False)


def planted_view():
    """Batch of the pair (n = 6) and the single sentence (n = 4, padded to 6 with garbage rows)."""
    attn = torch.zeros(2, 1, 1, 6, 6)
    attn[0, 0, 0] = torch.tensor(PAIR_ROWS)
    attn[1, 0, 0, :4, :4] = 0.25
    attn[1, 0, 0, 4:, :] = 1 / 6  # padded queries: must be ignored
    ids = torch.tensor([PAIR_IDS, SINGLE_IDS + [0, 0]])
    return view_of(attn, [pair_item(), single_item()], input_ids=ids)


def entropy_by_hand(row):
    n = len(row)
    p = [0.9999 * a + 0.0001 / n for a in row]
    return -sum(x * math.log(x) for x in p)


def test_planted_pair_by_hand():
    got = dict(zip(SURFACE_MEASURES, surface_of(planted_view(), [DOT])[0, 0, 0].tolist()))
    # queries 0..5 of the pair; a query with no neighbour contributes 0 and still counts in n = 6
    assert got["prev"] == pytest.approx((0 + 0.2 + 1.0 + 0 + 0.6 + 0) / 6)
    assert got["self"] == pytest.approx((0.5 + 0 + 0 + 1.0 + 0 + 0.5) / 6)
    assert got["next"] == pytest.approx((0.5 + 0.3 + 0 + 0 + 0 + 0) / 6)
    assert got["cls"] == pytest.approx((0.5 + 0.2) / 6)
    assert got["sep"] == pytest.approx((1.0 + 0.6 + 1.0) / 6)  # keys 3 and 5 summed
    assert got["punct"] == pytest.approx(0.3 / 6)
    assert got["sep_to_sep"] == pytest.approx(1.0)  # two [SEP] queries, each all on [SEP]
    assert got["other_to_sep"] == pytest.approx(0.6 / 4)  # the n - 2 other queries, [CLS] included
    assert got["entropy"] == pytest.approx(sum(entropy_by_hand(r) for r in PAIR_ROWS) / 6, rel=1e-6)
    assert got["entropy_cls"] == pytest.approx(entropy_by_hand(PAIR_ROWS[0]), rel=1e-6)
    assert got["entropy_uniform"] == pytest.approx(math.log(6))
    assert got["entropy_ratio"] == pytest.approx(got["entropy"] / math.log(6), rel=1e-6)
    # "a" at 1 and 4: query 1 puts 0.5 on key 4, query 4 puts 0.4 on key 1; both across the sentences
    assert got["same_token"] == pytest.approx(0.45)
    assert got["same_token_other"] == pytest.approx(0.45)


def test_planted_single_sentence_and_padding():
    got = dict(zip(SURFACE_MEASURES, surface_of(planted_view(), [DOT])[1, 0, 0].tolist()))
    assert got["prev"] == pytest.approx(3 * 0.25 / 4)  # queries 1..3
    assert got["next"] == pytest.approx(3 * 0.25 / 4)
    assert got["self"] == pytest.approx(0.25)
    assert got["cls"] == pytest.approx(0.25) and got["sep"] == pytest.approx(0.25)
    assert got["punct"] == 0.0
    assert got["sep_to_sep"] == pytest.approx(0.25) and got["other_to_sep"] == pytest.approx(0.25)
    assert got["entropy"] == pytest.approx(math.log(4), rel=1e-9)
    assert got["entropy_ratio"] == pytest.approx(1.0, rel=1e-9)
    assert got["same_token"] == pytest.approx(0.25)  # "b" at 1 and 2
    assert math.isnan(got["same_token_other"])  # no other sentence


def test_collector_table_result_and_merge():
    whole = SurfacePatterns(Context(("m",), "d", 1, 1, {"punct_ids": [DOT]}))
    whole.update(planted_view())
    table = whole.tables()["surface"]
    assert list(table.columns) == list(SURFACE_COLUMNS)
    per_input = surface_of(planted_view(), [DOT])[:, 0, 0].numpy()
    for column in SURFACE_COLUMNS[4:]:
        assert table[column].iloc[0] == pytest.approx(per_input[:, SURFACE_MEASURES.index(column)].mean(), rel=1e-6)
    array = whole.result()
    assert array.measures == SURFACE_MEASURES and list(array.sentence_ids) == ["p0", "s1"]
    assert array.values.shape == (2, 1, 1, len(SURFACE_MEASURES))
    # two shards, fed in reverse order, merge to the same per-input array in data-set order
    view = planted_view()
    shards = []
    for b in (1, 0):
        c = SurfacePatterns(Context(("m",), "d", 1, 1, {"punct_ids": [DOT]}))
        ids = view.input_ids[b:b + 1]
        c.update(view_of(view.attention[b:b + 1], view.inputs[b:b + 1], input_ids=ids))
        shards.append(c.state())
    merged = SurfacePatterns(Context(("m",), "d", 1, 1, {"punct_ids": [DOT]}))
    merged.load_state(SurfacePatterns.merge(shards))
    np.testing.assert_allclose(merged.result().values, array.values, rtol=1e-6)


def test_hypotheses_default_and_from_options():
    c = SurfacePatterns(Context(("m",), "d", 1, 1, {"punct_ids": []}))
    names = [h["name"] for h in c.hypotheses()]
    assert {"previous_token", "next_token", "broad"} <= set(names)
    mine = [{"name": "prev_half", "measure": "prev", "threshold": 0.5, "layers": [0]}]
    assert SurfacePatterns(Context(("m",), "d", 1, 1, {"hypotheses": mine})).hypotheses() == mine


def test_dominant_behaviour():
    frame = pd.DataFrame({"prev": [0.9, 0.1, 0.1], "self": [0, 0, 0], "next": [0, 0.2, 0], "cls": [0, 0.6, 0],
                          "sep": [0.05, 0, 0.1], "punct": [0, 0, 0], "entropy": [0.1, 1.0, 4.0],
                          "entropy_uniform": [4.5, 4.5, 4.5]})
    assert dominant_behaviour(frame).tolist() == ["prev", "cls", "broad"]


def test_punctuation_ids_of_a_tokenizer(tiny_model):
    ids = punctuation_ids(tiny_model.tokenizer)
    vocab = tiny_model.tokenizer.get_vocab()
    assert ids == tuple(sorted([vocab["."], vocab[","]]))


def test_tiny_model_against_hugging_face_attentions(tiny_model):
    """prev/next/cls from the engine's view equal a straight computation on the model's own attentions."""
    from headstats.engine.batch import forward_view
    from headstats.inputs.records import Record
    from headstats.model.encoding import encode_records

    records = [Record("0", "the cat sat on the mat .", "a dog ran , quickly"), Record("1", "the big red car")]
    encoded = encode_records(records, tiny_model.tokenizer).inputs
    with torch.inference_mode():
        view = forward_view(tiny_model, encoded)
        got = surface_of(view, punctuation_ids(tiny_model.tokenizer)).numpy()
        for b, item in enumerate(encoded):
            ids = torch.tensor(item.input_ids)[None]
            out = tiny_model.model(input_ids=ids, token_type_ids=torch.tensor(item.token_type_ids)[None],
                                   output_attentions=True)
            attn = torch.stack(out.attentions)[:, 0].double()  # (L, H, n, n)
            n = item.length
            prev = np.array([[sum(float(attn[l, h, i, i - 1]) for i in range(1, n)) / n
                              for h in range(attn.shape[1])] for l in range(attn.shape[0])])
            nxt = np.array([[sum(float(attn[l, h, i, i + 1]) for i in range(n - 1)) / n
                             for h in range(attn.shape[1])] for l in range(attn.shape[0])])
            cls = attn[..., 0].mean(-1).numpy()
            np.testing.assert_allclose(got[b, ..., SURFACE_MEASURES.index("prev")], prev, atol=1e-5)
            np.testing.assert_allclose(got[b, ..., SURFACE_MEASURES.index("next")], nxt, atol=1e-5)
            np.testing.assert_allclose(got[b, ..., SURFACE_MEASURES.index("cls")], cls, atol=1e-5)


def test_enabled_from_a_protocol(tmp_path, tiny_model_dir):
    from headstats.config.protocol import load_protocol
    from headstats.report.builder import build_report
    from headstats.study.run import run_study

    protocol = {
        "name": "surface-demo", "models": [{"name": "tiny", "path": str(tiny_model_dir)}],
        "datasets": [{"name": "pairs", "path": str(DEMO / "pairs.txt"), "limit": 10, "parse": "none"}],
        "scoring": {"roles": ["local"]}, "statistics": {"tau": 1.0, "sensitivity": False},
        "analyses": ["surface"],
        "report": {"figures": {"formats": ["png"], "dpi": 72}},  # tables are tested here; figures in tests/report
        "analysis_options": {"surface": {"hypotheses": [
            {"name": "broad", "measure": "entropy_ratio", "threshold": 0.5},
            {"name": "prev_l0", "measure": "prev", "threshold": 0.5, "layers": [0]}]}},
    }
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(protocol))
    result = run_study(load_protocol(path), tmp_path / "out", report=build_report)
    table = pd.read_csv(result.out / "surface.csv")
    assert list(table.columns) == list(SURFACE_COLUMNS) and len(table) == 4
    tests = pd.read_csv(result.out / "surface_tests.csv")
    assert len(tests) == 4 + 2  # broad on 2 layers x 2 heads, prev on layer 0 only
    assert set(tests["family"]) == {"model=tiny|dataset=pairs"}
    # a random tiny BERT attends almost uniformly: broad everywhere, never mostly to the previous token
    assert tests[tests["role"] == "broad"]["reject"].all()
    assert not tests[tests["role"] == "prev_l0"]["reject"].any()
    report = (result.out / "report.md").read_text()
    assert "Surface patterns (Clark et al. 2019)" in report and "figures/surface_position_" in report
    # `headstats report` rebuilds the section from the tables the manifest names
    from headstats.report.builder import rebuild_report

    rebuild_report(result.out, html=False)
    assert "Surface patterns (Clark et al. 2019)" in (result.out / "report.md").read_text()


def test_columns_and_hypotheses_name_known_measures():
    assert SURFACE_COLUMNS[:4] == ("model", "dataset", "layer", "head")
    assert set(SURFACE_COLUMNS[4:]) <= set(SURFACE_MEASURES)
    assert {h["measure"] for h in DEFAULT_HYPOTHESES} <= set(SURFACE_MEASURES)


def test_protocol_validation_imports_no_torch():
    code = ("import sys\nfrom headstats.config.protocol import validate_protocol\n"
            "validate_protocol({'datasets': [{'name': 'd', 'path': 'x.txt'}]})\n"
            "sys.exit(1 if 'torch' in sys.modules else 0)\n")
    assert subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(SRC)}).returncode == 0
