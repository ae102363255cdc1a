"""Numeric kernels of the Clark analyses: row entropies against plain Python on a padded batch, the thread map's
order, and results that do not depend on the number of threads."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from headstats.analyses.clustering.collect import js_sums
from headstats.analyses.kernels import ENTROPY_BLOCK, row_entropies, thread_map


def entropy_by_hand(row, smoothing):
    n = len(row)
    p = [smoothing * a + (1 - smoothing) / n for a in row]
    return -sum(x * math.log(x) for x in p)


def test_row_entropies_by_hand_on_a_padded_batch():
    # input 0: n = 3 padded to 4 (junk in the padded row and key); input 1: n = 4
    g = torch.Generator().manual_seed(0)
    attn = torch.softmax(torch.randn(2, 2, 3, 4, 4, generator=g) * 3, -1)
    attn[0, ..., :3, :3] = torch.softmax(torch.randn(2, 3, 3, 3, generator=g) * 3, -1)
    attn[0, ..., :3, 3] = 5.0
    attn[0, 0, 0, 0, :3] = torch.tensor([1.0, 0.0, 0.0])  # a one-hot row: only the smoothing's entropy
    got = row_entropies(attn, [3, 4], 0.9999)
    assert got.shape == (2, 2, 3, 4) and got.dtype == np.float64
    for b, n in enumerate([3, 4]):
        for layer in range(2):
            for head in range(3):
                for i in range(n):
                    row = attn[b, layer, head, i, :n].double().tolist()
                    assert got[b, layer, head, i] == pytest.approx(entropy_by_hand(row, 0.9999), rel=1e-12)
    assert (got[0, ..., 3] == 0).all()  # the padded row
    assert got[0, 0, 0, 0] == pytest.approx(7.539e-4, rel=1e-3)  # 0.9999 + 1e-4/3 and twice 1e-4/3


def test_row_entropies_cut_into_blocks_equal_one_block(monkeypatch):
    g = torch.Generator().manual_seed(1)
    attn = torch.softmax(torch.randn(3, 2, 4, 9, 9, generator=g), -1)
    whole = row_entropies(attn, [9, 7, 5], 0.999)
    monkeypatch.setattr("headstats.analyses.kernels.ENTROPY_BLOCK", 50)  # one head per block
    assert ENTROPY_BLOCK > 50
    np.testing.assert_array_equal(row_entropies(attn, [9, 7, 5], 0.999), whole)


def test_thread_map_keeps_the_order():
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert thread_map(lambda x: x * x, range(50)) == [x * x for x in range(50)]
        assert thread_map(lambda x: x, []) == []
    finally:
        torch.set_num_threads(threads)


def test_js_sums_the_same_on_one_thread_and_on_two(monkeypatch):
    monkeypatch.setattr("headstats.analyses.clustering.collect.JS_BLOCK", 1000)  # blocks of 4 rows (6 heads x 40 keys)
    monkeypatch.setattr("headstats.analyses.clustering.collect.JS_ROWS_PER_JOB", 9)  # 5 + 4 + 3 jobs of up to 9 rows
    g = torch.Generator().manual_seed(2)
    attn = torch.softmax(torch.randn(3, 6, 40, 40, generator=g) * 2, -1)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = js_sums(attn, [40, 33, 21])
        torch.set_num_threads(2)
        two = js_sums(attn, [40, 33, 21])
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, two)
    monkeypatch.undo()
    torch.testing.assert_close(js_sums(attn, [40, 33, 21]), one, rtol=1e-6, atol=0)  # one job, one block: same to float32
