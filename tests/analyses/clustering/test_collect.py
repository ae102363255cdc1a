"""Clustering heads (METHODS 2.6): the JS divergence by hand on planted maps, streaming equals one pass,
max_inputs, the MDS, and the tiny random model."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from headstats.analyses.clustering.collect import (JS_COLUMNS, MDS_COLUMNS, HeadClustering, js_sums, mds_embedding, pair_offsets)
from headstats.engine.batch import view_of
from headstats.engine.collector import Context
from headstats.model.encoding import EncodedInput


def js_sums_pairwise(maps: torch.Tensor) -> torch.Tensor:
    """The oracle: version 1's js_sums, one input, float64, head pair by head pair (the released code's way:
    ``JS = 1/2 KL(p || m) + 1/2 KL(q || m)`` row by row, each pair's mixture formed in full)."""
    k, n = maps.shape[0], maps.shape[-1]
    p = 0.999 * maps.to(torch.float64) + 0.001 / n
    neg_entropy = (p * p.log()).sum(-1)
    out = torch.zeros(k, k, dtype=torch.float64)
    for a in range(k - 1):
        m = 0.5 * (p[a] + p[a + 1:])
        js = 0.5 * neg_entropy[a] + 0.5 * neg_entropy[a + 1:] - (m * m.log()).sum(-1)
        out[a, a + 1:] = js.sum(-1)
    return (out + out.T).clamp_(min=0.0)


def js_by_hand(p, q):
    """JS(p, q) in nats, rows smoothed as 0.999 p + 0.001 / n (scipy's jensenshannon is its square root)."""
    n = len(p)
    p = [0.999 * x + 0.001 / n for x in p]
    q = [0.999 * x + 0.001 / n for x in q]
    m = [(a + b) / 2 for a, b in zip(p, q)]
    kl = lambda a, b: sum(x * math.log(x / y) for x, y in zip(a, b))  # noqa: E731
    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


@pytest.mark.parametrize("k", range(1, 10))
def test_pair_offsets_visit_every_pair_of_heads_once(k):
    pairs = [frozenset((a, (a + d) % k)) for d, m in pair_offsets(k) for a in range(m)]
    assert len(pairs) == k * (k - 1) // 2
    assert set(pairs) == {frozenset((a, b)) for a in range(k) for b in range(a + 1, k)}


def test_js_sums_by_hand_and_against_scipy():
    from scipy.spatial.distance import jensenshannon

    a = [[1.0, 0.0, 0.0], [0.2, 0.3, 0.5], [0.0, 0.0, 1.0]]
    b = [[0.0, 1.0, 0.0], [0.2, 0.3, 0.5], [1 / 3, 1 / 3, 1 / 3]]
    c = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    # js_sums computes in float32 (the sums of s log s): equal to the float64 hand answer to about 1e-7
    got = js_sums(torch.tensor([a, b, c], dtype=torch.float64)).numpy()
    expected_ab = sum(js_by_hand(p, q) for p, q in zip(a, b))
    assert got[0, 1] == pytest.approx(expected_ab, rel=1e-6)
    assert got[1, 0] == got[0, 1] and np.all(np.diag(got) == 0)
    # the same through scipy (base e): its distance squared is the divergence
    sm = lambda r: 0.999 * np.asarray(r) + 0.001 / 3  # noqa: E731
    assert got[1, 2] == pytest.approx(sum(jensenshannon(sm(p), sm(q)) ** 2 for p, q in zip(b, c)), rel=1e-6)
    # identical first rows give 0 there: a vs c differ only in row 1 and row 2
    assert got[0, 2] == pytest.approx(js_by_hand(a[1], c[1]) + js_by_hand(a[2], c[2]), rel=1e-6)


def test_js_sums_planted_batch_with_padding_by_hand():
    # two inputs of 3 heads, n = 2 and n = 3, padded to 3: padded rows and keys hold junk that must not count
    a0 = [[[0.9, 0.1], [0.5, 0.5]], [[0.1, 0.9], [0.5, 0.5]], [[1.0, 0.0], [0.0, 1.0]]]
    a1 = [[[1.0, 0.0, 0.0], [0.2, 0.3, 0.5], [0.0, 0.0, 1.0]], [[0.0, 1.0, 0.0], [0.2, 0.3, 0.5], [1 / 3, 1 / 3, 1 / 3]],
          [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]]
    batch = torch.full((2, 3, 3, 3), 7.0)
    batch[0, :, :2, :2] = torch.tensor(a0)
    batch[1] = torch.tensor(a1)
    got = js_sums(batch, [2, 3]).numpy()
    for x in range(3):
        for y in range(3):
            expected = 0.0 if x == y else (sum(js_by_hand(p, q) for p, q in zip(a0[x], a0[y]))
                                           + sum(js_by_hand(p, q) for p, q in zip(a1[x], a1[y])))
            assert got[x, y] == pytest.approx(expected, rel=1e-5, abs=1e-7)
    # the rows of input 0 that are identical in heads 0 and 1 (row 1) add nothing: only row 0 differs
    assert got[0, 1] - sum(js_by_hand(p, q) for p, q in zip(a1[0], a1[1])) == pytest.approx(
        js_by_hand(a0[0][0], a0[1][0]), rel=1e-5)


def test_js_sums_equals_the_pairwise_oracle_on_a_batch_of_tiny_model_maps(tiny_model):
    from headstats.engine.batch import forward_view
    from headstats.inputs.records import Record
    from headstats.model.encoding import encode_records

    records = [Record("0", "the cat sat on the mat .", "a dog ran far away"), Record("1", "the big red car"),
               Record("2", "colourless green ideas sleep furiously tonight")]
    encoded = encode_records(records, tiny_model.tokenizer).inputs
    with torch.inference_mode():
        view = forward_view(tiny_model, encoded)
    attention = view.attention.reshape(view.size, -1, view.width, view.width)
    expected = sum(js_sums_pairwise(attention[b, :, :n, :n]) for b, n in enumerate(view.lengths))
    got = js_sums(attention, view.lengths)
    off = ~torch.eye(got.shape[0], dtype=torch.bool)
    torch.testing.assert_close(got[off], expected[off], rtol=1e-5, atol=0)
    assert (torch.diagonal(got) == 0).all()


def test_js_sums_equals_the_pairwise_oracle_on_wikitext_with_the_default_model(shared_data):
    # real inputs: WikiText-2 paragraph pairs at 128 pieces through the default model (6 x 12 heads)
    from headstats.engine.batch import forward_view
    from headstats.inputs.readers import read_records
    from headstats.model.encoding import encode_records
    from headstats.model.loading import load_model

    loaded = load_model("default")
    records = read_records(shared_data / "wiki" / "wikitext-2-raw" / "wiki.test.raw", limit=3)
    encoded = encode_records(records, loaded.tokenizer, max_length=128, too_long="truncate").inputs
    with torch.inference_mode():
        view = forward_view(loaded, encoded)
    attention = view.attention.reshape(view.size, -1, view.width, view.width)
    expected = sum(js_sums_pairwise(attention[b, :, :n, :n]) for b, n in enumerate(view.lengths))
    got = js_sums(attention, view.lengths)
    off = ~torch.eye(72, dtype=torch.bool)
    torch.testing.assert_close(got[off], expected[off], rtol=1e-5, atol=0)
    assert view.lengths.max() == 128


def item(index, n):
    special = np.zeros(n, bool)
    special[[0, n - 1]] = True
    return EncodedInput(index, str(index), np.arange(n) + 5, np.zeros(n, int), special, np.arange(n) == 0,
                        np.arange(n) == n - 1, np.zeros(n, int), False)


def planted(seed=0):
    """Two inputs (n = 3 and n = 4 padded to 4) of 2 layers x 2 heads with random rows."""
    g = torch.Generator().manual_seed(seed)
    attn = torch.softmax(torch.randn(2, 2, 2, 4, 4, generator=g) * 2, -1)
    attn[0, ..., :3, :3] = torch.softmax(torch.randn(2, 2, 3, 3, generator=g) * 2, -1)
    attn[0, ..., 3, :] = 0.25
    attn[0, ..., :3, 3] = 0.0
    return attn


def test_collector_streams_and_merges():
    attn = planted()
    inputs = [item(0, 3), item(1, 4)]
    c = HeadClustering(Context(("m",), "d", 2, 2, {"punct_ids": [], "max_inputs": None, "seed": 0}))
    c.update(view_of(attn, inputs))
    tables = c.tables()
    js, mds = tables["js_distance"], tables["mds"]
    assert list(js.columns) == JS_COLUMNS and list(mds.columns) == MDS_COLUMNS
    assert len(js) == 16 and (js["n_inputs"] == 2).all() and (js["n_queries"] == 7).all()
    # head (0, 0) against head (1, 1) by hand: sum over the 3 + 4 queries of the two inputs
    maps0 = attn[0, :, :, :3, :3].reshape(4, 3, 3)
    maps1 = attn[1].reshape(4, 4, 4)
    expected = sum(js_by_hand(maps0[0, i].tolist(), maps0[3, i].tolist()) for i in range(3)) + \
        sum(js_by_hand(maps1[0, i].tolist(), maps1[3, i].tolist()) for i in range(4))
    row = js[(js.layer_a == 0) & (js.head_a == 0) & (js.layer_b == 1) & (js.head_b == 1)].iloc[0]
    assert row["js_sum"] == pytest.approx(expected, rel=1e-5)
    assert row["js_mean"] == pytest.approx(expected / 7, rel=1e-5)
    # shards merge to the same sums
    parts = []
    for b in range(2):
        s = HeadClustering(Context(("m",), "d", 2, 2, {"punct_ids": [], "max_inputs": None}))
        s.update(view_of(attn[b:b + 1], inputs[b:b + 1]))
        parts.append(s.state())
    merged = HeadClustering.merge(parts)
    np.testing.assert_allclose(merged.js, c.state().js, rtol=1e-10)
    assert merged.n_queries == 7 and merged.n_inputs == 2


def test_max_inputs_keeps_the_first():
    attn = planted()
    c = HeadClustering(Context(("m",), "d", 2, 2, {"punct_ids": [], "max_inputs": 1}))
    c.update(view_of(attn, [item(0, 3), item(1, 4)]))
    c.update(view_of(attn, [item(2, 3), item(3, 4)]))
    assert c.state().n_inputs == 1 and c.state().n_queries == 3
    assert c.state().surface.n[0, 0, 0] == 1


def test_mds_recovers_planted_distances():
    # the corners of a 3 x 4 rectangle (diagonals 5) and its centre: a metric MDS to 2-D keeps their distances
    # (up to rotation and reflection), with a stress near 0
    x = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0], [3.0, 4.0], [1.5, 2.0]])
    d = np.linalg.norm(x[:, None] - x[None, :], axis=-1)
    points, stress = mds_embedding(d, seed=3)
    got = np.linalg.norm(points[:, None] - points[None, :], axis=-1)
    np.testing.assert_allclose(got, d, atol=1e-2)
    assert stress < 1e-3
    again, _ = mds_embedding(d, seed=3)
    np.testing.assert_array_equal(points, again)  # seeded
    assert np.isnan(mds_embedding(np.full((4, 4), np.nan))[0]).all()


def test_tiny_model(tiny_model):
    from headstats.engine.batch import forward_view
    from headstats.inputs.records import Record
    from headstats.model.encoding import encode_records

    records = [Record("0", "the cat sat on the mat .", "a dog ran"), Record("1", "the big red car")]
    encoded = encode_records(records, tiny_model.tokenizer).inputs
    c = HeadClustering(Context(("tiny",), "d", 2, 2, {"punct_ids": [], "max_inputs": None}))
    with torch.inference_mode():
        view = forward_view(tiny_model, encoded)
        c.update(view)
    d = c.distance()
    assert d.shape == (4, 4) and np.allclose(d, d.T) and np.all(np.diag(d) == 0) and (d[~np.eye(4, dtype=bool)] > 0).all()
    # JS is at most ln 2 per query
    assert d.max() <= math.log(2)
    assert c.tables()["mds"]["x"].notna().all()
