"""Mean attention entropy per head (METHODS 2.1): planted maps with hand-computed answers, and the analysis
enabled from a protocol (``analyses: [entropy]``) writing entropy.csv and its report section."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from headstats.analyses.entropy.collect import AttentionEntropy, entropy_of
from headstats.engine.batch import view_of
from headstats.engine.collector import Context
from headstats.model.encoding import EncodedInput

DEMO = Path(__file__).resolve().parents[3] / "data" / "demo"


def item(index, n, cls=True):
    special = np.zeros(n, bool)
    special[[0, -1]] = True
    first = special & (np.arange(n) == 0) if cls else np.zeros(n, bool)
    return EncodedInput(index, str(index), np.arange(n), np.zeros(n, int), special, first,
                        special & (np.arange(n) == n - 1), np.zeros(n, int), False)


def smoothed_entropy(row: list[float]) -> float:
    """METHODS 2.1 for one row, in plain Python: p = 0.9999 a + 0.0001 / n, H = -sum p ln p."""
    n = len(row)
    p = [0.9999 * a + 0.0001 / n for a in row]
    return -sum(x * math.log(x) for x in p)


ROWS = [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]]


def planted() -> torch.Tensor:
    """Input 0: n = 3 with ROWS, padded to 4 with a garbage row; input 1: n = 4, uniform."""
    attn = torch.zeros(2, 1, 1, 4, 4, dtype=torch.float32)
    attn[0, 0, 0, :3, :3] = torch.tensor(ROWS)
    attn[0, 0, 0, 3, :] = 0.25  # padded query
    attn[1] = 0.25
    return attn


def test_entropy_by_hand():
    mean, cls = entropy_of(view_of(planted(), [item(0, 3), item(1, 4, cls=False)]))
    expected = [smoothed_entropy(r) for r in ROWS]
    # the numbers themselves: a one-hot row keeps only the smoothing's entropy, a half/half row is just above
    # ln 2, and a uniform row stays exactly uniform (ln 3)
    assert expected[0] == pytest.approx(7.539e-4, rel=1e-3)
    assert expected[1] == pytest.approx(math.log(2) + 3.539e-4, abs=1e-6)
    assert expected[2] == pytest.approx(math.log(3), rel=1e-12)
    assert float(mean[0, 0, 0]) == pytest.approx(sum(expected) / 3, rel=1e-6)
    assert float(mean[1, 0, 0]) == pytest.approx(math.log(4), rel=1e-6)
    assert float(cls[0, 0, 0]) == pytest.approx(expected[0], rel=1e-4)
    assert math.isnan(float(cls[1, 0, 0]))  # no [CLS] position


def test_collector_table_and_merge():
    inputs = [item(0, 3), item(1, 4)]
    whole = AttentionEntropy(Context(("m",), "d", 1, 1))
    whole.update(view_of(planted(), inputs))
    table = whole.tables()["entropy"]
    assert list(table.columns) == ["model", "dataset", "layer", "head", "n", "entropy", "entropy_sd",
                                   "entropy_cls", "entropy_cls_sd", "entropy_uniform"]
    per_input = [sum(smoothed_entropy(r) for r in ROWS) / 3, math.log(4)]
    row = table.iloc[0]
    assert row["n"] == 2
    assert row["entropy"] == pytest.approx(np.mean(per_input), rel=1e-6)
    assert row["entropy_sd"] == pytest.approx(np.std(per_input, ddof=1), rel=1e-5)
    assert row["entropy_cls"] == pytest.approx((smoothed_entropy(ROWS[0]) + math.log(4)) / 2, rel=1e-5)
    assert row["entropy_uniform"] == pytest.approx((math.log(3) + math.log(4)) / 2)
    parts = []
    for k in range(2):
        c = AttentionEntropy(Context(("m",), "d", 1, 1))
        c.update(view_of(planted()[k:k + 1], inputs[k:k + 1]))
        parts.append(c.state())
    merged = AttentionEntropy(Context(("m",), "d", 1, 1))
    merged.load_state(AttentionEntropy.merge(parts))
    pd.testing.assert_frame_equal(merged.tables()["entropy"], table, rtol=1e-6)


def test_enabled_from_a_protocol(tmp_path, tiny_model_dir):
    from headstats.config.protocol import load_protocol
    from headstats.report.builder import build_report
    from headstats.study.run import run_study

    protocol = {
        "name": "entropy-demo", "models": [{"name": "tiny", "path": str(tiny_model_dir)}],
        "datasets": [{"name": "demo", "path": str(DEMO / "sentences.txt"), "limit": 12}],
        "scoring": {"roles": ["local", "delimiter"]},
        "statistics": {"tau": 1.0, "sensitivity": False},
        "report": {"figures": {"formats": ["png"], "dpi": 72}},
        "analyses": ["entropy"],
    }
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(protocol))
    result = run_study(load_protocol(path), tmp_path / "out", report=build_report)
    table = pd.read_csv(result.out / "entropy.csv")
    assert len(table) == 4 and (table["n"] == 12).all() and (table["model"] == "tiny").all()
    # a random tiny BERT attends almost uniformly: every head near the uniform reference, never above it
    assert (table["entropy"] <= table["entropy_uniform"] + 1e-6).all()
    assert (table["entropy"] > 0.9 * table["entropy_uniform"]).all()
    report = (result.out / "report.md").read_text()
    assert "## Attention entropy" in report and "`entropy.csv`" in report
    pd.testing.assert_frame_equal(result.tables["entropy"], table, check_dtype=False)


def test_unknown_analysis_in_a_protocol_is_refused_before_any_model(tmp_path):
    from headstats.errors import UnknownNameError
    from headstats.config.protocol import load_protocol
    from headstats.study.run import run_study

    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"models": [{"name": "x", "path": str(tmp_path / "no-model")}],
                                    "datasets": [{"name": "demo", "path": str(DEMO / "sentences.txt")}],
                                    "analyses": ["entropie"]}))
    with pytest.raises(UnknownNameError, match="did you mean 'entropy'"):
        run_study(load_protocol(path), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_entropy_and_surface_tables_share_one_schema():
    # The drift this catches: entropy.csv said cls_entropy_mean / uniform_entropy where surface.csv said
    # entropy_cls / entropy_uniform for the same quantities. Same names, and the same numbers on the same maps.
    from headstats.analyses.entropy.collect import ENTROPY_COLUMNS, ENTROPY_MEANS
    from headstats.analyses.surface.collect import SURFACE_COLUMNS, SurfacePatterns

    inputs = [item(0, 3), item(1, 4)]
    view = view_of(planted(), inputs)
    entropy = AttentionEntropy(Context(("m",), "d", 1, 1))
    entropy.update(view)
    surface = SurfacePatterns(Context(("m",), "d", 1, 1, options={"punct_ids": ()}))
    surface.update(view_of(planted(), inputs))
    a, b = entropy.tables()["entropy"], surface.tables()["surface"]
    assert set(ENTROPY_MEANS) <= set(ENTROPY_COLUMNS) and set(ENTROPY_MEANS) <= set(SURFACE_COLUMNS)
    assert list(a.columns) == list(ENTROPY_COLUMNS) and list(b.columns) == list(SURFACE_COLUMNS)
    # entropy: the mean of ((H of ROWS) / 3, ln 4); the [CLS] row of input 0 is ROWS[0]; uniform (ln 3 + ln 4) / 2
    expected = [(sum(map(smoothed_entropy, ROWS)) / 3 + math.log(4)) / 2,
                (smoothed_entropy(ROWS[0]) + math.log(4)) / 2, (math.log(3) + math.log(4)) / 2]
    for column, value in zip(ENTROPY_MEANS, expected):
        assert a[column].iat[0] == pytest.approx(value, rel=1e-5)
        assert b[column].iat[0] == pytest.approx(a[column].iat[0], rel=1e-6)  # surface keeps float32 per input
