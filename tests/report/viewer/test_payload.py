"""The viewer's page data: the sieve sums (METHODS 1.2) and what the page weighs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import headstats as hs
from headstats.inputs.records import Record
from headstats.report.viewer.page import viewer_page
from headstats.report.viewer.payload import sieve_sums, viewer_data
from headstats.study.viewing import view_inputs
from report.viewer.helpers import default_model, js_grid


def test_sieve_sums_of_a_planted_map():
    # one head, 3 pieces; rows sum to 1, so m_i = 1/3 and A/m = 3A
    a = np.array([[0.5, 0.5, 0.0], [0.2, 0.2, 0.6], [0.0, 0.1, 0.9]])[None, None]
    kinds, sums = sieve_sums(a, np.array([0, 0, 1]), np.array([True, False, False]), window=0, is_pair=True)
    assert kinds == ["loc", "col", "blk"]
    np.testing.assert_allclose(sums[0, 0, 0], [1.5, 0.6, 2.7], rtol=1e-6)  # 3 A[i, i]
    np.testing.assert_allclose(sums[0, 0, 1], [2.1, 2.4, 4.5], rtol=1e-6)  # 3 sum_i A[i, j]
    # block: non-special keys of i's sentence (piece 0 special; pieces 0, 1 in A, piece 2 in B)
    np.testing.assert_allclose(sums[0, 0, 2], [1.5, 0.6, 2.7], rtol=1e-6)
    _, without = sieve_sums(a, np.array([0, 0, 1]), np.array([True, False, False]), window=0,
                            count_special_queries=False)
    np.testing.assert_allclose(without[0, 0, 1], [0.6, 0.9, 4.5], rtol=1e-6)  # the special query 0 left out


def test_the_block_sieve_of_a_pair_equals_hs_score(tiny_model):
    record = Record("p", "The dog barked at the mailman.", "A cat slept on the warm mat.")
    inputs = view_inputs(tiny_model, [record])
    data = viewer_data(inputs, model="tiny", window=1)
    scores = hs.score(tiny_model, [record], roles=["block", "local", "delimiter"], window=1)
    for r, role in enumerate(["block", "local", "delimiter"]):
        np.testing.assert_allclose(js_grid(data["inputs"][0], data, role), scores.values[0, :, :, r], atol=1e-5,
                                   rtol=0, err_msg=role)
    data = viewer_data(inputs, model="tiny", window=1, count_special_queries=False)
    scores = hs.score(tiny_model, [record], roles=["local", "delimiter_sep"], window=1, count_special_queries=False)
    for r, role in enumerate(["local", "delimiter_sep"]):
        np.testing.assert_allclose(js_grid(data["inputs"][0], data, role), scores.values[0, :, :, r], atol=1e-5,
                                   rtol=0, err_msg=role)


def test_three_inputs_of_128_pieces_make_a_page_of_about_1_mb(capsys):
    words = (Path(__file__).resolve().parents[3] / "data" / "demo" / "sentences.txt").read_text().split()
    texts = [" ".join(words[k * 120:(k + 1) * 120]) for k in range(3)]
    inputs = view_inputs(default_model(), [Record(str(k), t) for k, t in enumerate(texts)], max_length=128)
    assert [v.length for v in inputs] == [128, 128, 128] and all(v.truncated for v in inputs)
    size = len(viewer_page(viewer_data(inputs, model="default")).encode())
    with capsys.disabled():
        print(f"\nviewer page, 3 inputs of 128 pieces, default model: {size / 1e6:.2f} MB")
    assert size < 1.1e6


def _unpack(data: dict, n_layers: int, n_heads: int) -> dict:
    """The layout of :func:`pack_explorer_weights`, decoded independently: per head n counts, keys, weights."""
    raw, n = data["data"], data["n"]
    dtype = np.dtype("u1") if data["width"] == 1 else np.dtype("<u2")
    out, at = {}, 0
    for layer in range(n_layers):
        for head in range(n_heads):
            counts = np.frombuffer(raw, dtype, n, at)
            at += n * dtype.itemsize
            m = int(counts.sum())
            keys = np.frombuffer(raw, dtype, m, at)
            at += m * dtype.itemsize
            w = np.frombuffer(raw, np.uint8, m, at) / 255
            at += m
            dense = np.zeros((n, n))
            dense[np.repeat(np.arange(n), counts), keys] = w
            out[layer, head] = dense
    assert at == len(raw)
    return out


def test_packed_weights_round_trip_within_half_a_step():
    """Softmax rows of 128 pieces on 6 x 12 heads: every weight decodes to within 1/510 of its value or, if left
    out, was under 2.5/255 (the layout decoded independently)."""
    from headstats.report.viewer.payload import pack_explorer_weights

    rng = np.random.default_rng(0)
    n, n_layers, n_heads = 128, 6, 12
    logits = rng.normal(0, 3, (n_layers, n_heads, n, n))
    w = np.exp(logits - logits.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    q, kk = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    data, width = pack_explorer_weights({(l, h): (q.ravel(), kk.ravel(), w[l, h].ravel())
                                         for l in range(n_layers) for h in range(n_heads)}, n,
                                        n_layers=n_layers, n_heads=n_heads)
    assert width == 1
    back = _unpack({"data": data, "n": n, "width": width}, n_layers, n_heads)
    for l in range(n_layers):
        for h in range(n_heads):
            got, true = back[l, h], w[l, h]
            kept = got > 0
            assert np.abs(got - true)[kept].max() <= 0.5 / 255 + 1e-12
            assert (true[~kept] < 2.5 / 255 + 1e-12).all()


def test_packed_weights_of_inputs_over_255_pieces_take_two_bytes_per_position():
    from headstats.report.viewer.payload import pack_explorer_weights

    data, width = pack_explorer_weights({(0, 1): ([299, 0, 299], [280, 299, 3], [0.6, 0.5, 0.4])}, 300,
                                        n_layers=1, n_heads=2)
    assert width == 2
    # 2 heads x (300 counts + keys) x 2 bytes + one byte per weight: 2 * 600 + 3 * 2 + 3
    assert len(data) == 1209
    back = _unpack({"data": data, "n": 300, "width": width}, 1, 2)[0, 1]
    assert back[299, 3] == 102 / 255 and back[299, 280] == 153 / 255 and back[0, 299] == 128 / 255
    assert np.count_nonzero(back) == 3
