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
