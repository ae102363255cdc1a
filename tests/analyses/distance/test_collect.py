"""Attention distance per head: planted maps with hand-computed distances, the collector's table, shards and
hypothesis, and the analysis enabled from a protocol (``analyses: [distance]``) writing distance.csv, its
tests and its report section."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from headstats.analyses.distance.collect import AttentionDistance, distance_of
from headstats.engine.batch import view_of
from headstats.engine.collector import Context
from headstats.model.encoding import EncodedInput

DEMO = Path(__file__).resolve().parents[3] / "data" / "demo"


def item(index: int, n: int) -> EncodedInput:
    special = np.zeros(n, bool)
    special[[0, -1]] = True
    return EncodedInput(index, str(index), np.arange(n), np.zeros(n, int), special, special & (np.arange(n) == 0),
                        special & (np.arange(n) == n - 1), np.zeros(n, int), False)


def planted() -> torch.Tensor:
    """Input 0: n = 3, rows [1,0,0], [.5,0,.5], [1,0,0], padded to 4 with a garbage row and column; input 1:
    n = 4, uniform. Head 1 of both: every query on itself."""
    attn = torch.zeros(2, 1, 2, 4, 4, dtype=torch.float32)
    attn[0, 0, 0, :3, :3] = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.0, 0.5], [1.0, 0.0, 0.0]])
    attn[0, 0, 0, 3, :] = 0.25  # padded query
    attn[0, 0, 0, :3, 3] = 0.7  # padded key
    attn[1, 0, 0] = 0.25
    attn[:, 0, 1] = torch.eye(4)
    return attn


# input 0, head 0: the queries look 0, 0.5 * 1 + 0.5 * 1 = 1 and 2 tokens away: d = 1; u = (9 - 1) / 9
# input 1, head 0: uniform, so d = u = (1/16) sum_ij |i - j| = 2 (3 * 1 + 2 * 2 + 1 * 3) / 16 = 1.25
D0, U0, D1, U1 = 1.0, 8 / 9, 1.25, 1.25


def test_distance_by_hand():
    values = distance_of(view_of(planted(), [item(0, 3), item(1, 4)]))
    assert values.shape == (2, 1, 2, 3)
    np.testing.assert_allclose(values[:, 0, 0].numpy(), [[D0, U0, 1 - D0 / U0], [D1, U1, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(values[:, 0, 1].numpy(), [[0.0, U0, 1.0], [0.0, U1, 1.0]], atol=1e-7)


def test_one_token_has_no_locality():
    attn = torch.ones(1, 1, 1, 1, 1)
    value = distance_of(view_of(attn, [EncodedInput(0, "0", np.arange(1), np.zeros(1, int), np.zeros(1, bool),
                                                   np.zeros(1, bool), np.zeros(1, bool), np.zeros(1, int), False)]))
    assert value[0, 0, 0, 0] == 0 and value[0, 0, 0, 1] == 0 and torch.isnan(value[0, 0, 0, 2])


def test_collector_table_shards_and_hypothesis():
    inputs = [item(0, 3), item(1, 4)]
    whole = AttentionDistance(Context(("m",), "d", 1, 2))
    whole.update(view_of(planted(), inputs))
    table = whole.tables()["distance"]
    assert list(table.columns) == ["model", "dataset", "layer", "head", "n", "distance_mean", "distance_sd",
                                   "uniform_mean", "locality_mean"]
    row = table.iloc[0]
    assert row["n"] == 2 and row["distance_mean"] == pytest.approx((D0 + D1) / 2)
    assert row["distance_sd"] == pytest.approx(np.std([D0, D1], ddof=1))
    assert row["uniform_mean"] == pytest.approx((U0 + U1) / 2)
    assert row["locality_mean"] == pytest.approx((1 - D0 / U0) / 2)
    assert table.iloc[1]["distance_mean"] == 0 and table.iloc[1]["locality_mean"] == pytest.approx(1)
    parts = []
    for k in (1, 0):  # shards in either order
        shard = AttentionDistance(Context(("m",), "d", 1, 2))
        shard.update(view_of(planted()[k:k + 1], inputs[k:k + 1]))
        parts.append(shard.state())
    merged = AttentionDistance(Context(("m",), "d", 1, 2))
    merged.load_state(AttentionDistance.merge(parts))
    pd.testing.assert_frame_equal(merged.tables()["distance"], table)
    assert whole.hypotheses() == [{"name": "local", "measure": "locality", "threshold": 0.5, "layers": None}]


def test_enabled_from_a_protocol(tmp_path, tiny_model_dir):
    from headstats.config.protocol import load_protocol
    from headstats.report.builder import build_report
    from headstats.study.run import run_study

    protocol = {
        "name": "distance-demo", "models": [{"name": "tiny", "path": str(tiny_model_dir)}],
        "datasets": [{"name": "demo", "path": str(DEMO / "sentences.txt"), "limit": 12}],
        "scoring": {"roles": ["local"]}, "statistics": {"tau": 1.0, "sensitivity": False},
        "report": {"figures": {"formats": ["png"], "dpi": 72}},
        "analyses": ["distance"], "analysis_options": {"distance": {"locality": 0.4}},
    }
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(protocol))
    result = run_study(load_protocol(path), tmp_path / "out", report=build_report)
    table = pd.read_csv(result.out / "distance.csv")
    assert len(table) == 4 and (table["n"] == 12).all()
    # a random tiny BERT attends almost uniformly (see test_entropy): every head about as far as uniform
    assert (table["locality_mean"].abs() < 0.25).all()
    tests = pd.read_csv(result.out / "distance_tests.csv")
    assert len(tests) == 4 and (tests["threshold"] == 0.4).all() and not tests["reject"].any()
    report = (result.out / "report.md").read_text()
    assert "## Attention distance" in report and "mean locality is above 0.4" in report
