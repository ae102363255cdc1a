"""Attention mass on [CLS], [SEP] and other tokens, on a planted map."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from headstats.analyses.special_mass import SpecialMass, special_mass_of
from headstats.model.encoding import EncodedInput
from headstats.engine.batch import view_of
from headstats.engine.collector import Context

# [CLS] a b [SEP]
ITEM = EncodedInput(0, "x", np.arange(4), np.zeros(4, int), np.array([1, 0, 0, 1], bool), np.array([1, 0, 0, 0], bool),
                    np.array([0, 0, 0, 1], bool), np.zeros(4, int), False)
A = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.25, 0.25, 0.0], [0.0, 0.0, 0.0, 1.0], [0.25, 0.25, 0.25, 0.25]])


def test_mass_by_hand_and_padding_ignored():
    padded = torch.zeros(1, 1, 1, 6, 6)
    padded[..., :4, :4] = A
    padded[..., 4:, :] = 1 / 6  # garbage rows of padded queries
    mass = special_mass_of(view_of(padded, [ITEM]))[0, 0, 0].tolist()
    # mean over the 4 queries of column 0, of column 3, and of the rest
    assert mass == pytest.approx([(0.1 + 0.5 + 0.0 + 0.25) / 4, (0.4 + 0.0 + 1.0 + 0.25) / 4, 0.375])


def test_table_mean_and_sd_over_inputs():
    c = SpecialMass(Context(("m",), "d", 1, 1))
    c.update(view_of(A[None, None, None], [ITEM]))
    c.update(view_of(torch.full((1, 1, 1, 4, 4), 0.25), [ITEM]))
    table = c.tables()["special_mass"]
    assert table["target"].tolist() == ["cls", "sep", "other"] and (table["n"] == 2).all()
    assert list(table.columns) == ["model", "dataset", "layer", "head", "target", "mass_mean", "mass_sd", "n"]
    np.testing.assert_allclose(table["mass_mean"], [(0.2125 + 0.25) / 2, (0.4125 + 0.25) / 2, (0.375 + 0.5) / 2], rtol=1e-6)
    np.testing.assert_allclose(table["mass_sd"], np.std([[0.2125, 0.4125, 0.375], [0.25, 0.25, 0.5]], 0, ddof=1), rtol=1e-5)
