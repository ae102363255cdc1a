"""Cosine similarity of two models' maps of the same inputs, on planted maps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from headstats.analyses.similarity import AttentionSimilarity, cosine_of
from headstats.model.encoding import EncodedInput
from headstats.engine.batch import view_of
from headstats.engine.collector import Context


def item(index, n):
    special = np.zeros(n, bool)
    return EncodedInput(index, str(index), np.arange(n), np.zeros(n, int), special, special, special, np.zeros(n, int),
                        False)


def test_cosine_by_hand():
    a = torch.zeros(2, 1, 1, 3, 3)
    b = torch.zeros(2, 1, 1, 3, 3)
    a[0, ..., :2, :2] = torch.eye(2)
    b[0, ..., :2, :2] = 0.5
    b[0, ..., 2, :] = 7.0  # a padded query's garbage row: left out
    a[1] = b[1] = torch.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0], [0.1, 0.1, 0.8]])
    inputs = [item(0, 2), item(1, 3)]
    va, vb = view_of(a, inputs, model="A"), view_of(b, inputs, model="B")
    cos = cosine_of(va, vb)[:, 0, 0].tolist()
    # <I, J/2> = 1, ||I|| = sqrt(2), ||J/2|| = 1
    assert cos == pytest.approx([1 / np.sqrt(2), 1.0])
    c = AttentionSimilarity(Context(("A", "B"), "d", 1, 1))
    c.update(va, vb)
    row = c.tables()["similarity"].iloc[0]
    assert (row["model_a"], row["model_b"], row["dataset"], row["n"]) == ("A", "B", "d", 2)
    assert row["cosine_mean"] == pytest.approx((1 / np.sqrt(2) + 1) / 2)
    assert row["cosine_sd"] == pytest.approx((1 - 1 / np.sqrt(2)) / np.sqrt(2))
    assert AttentionSimilarity.pair
