"""Attention mass on [CLS], [SEP] and other tokens: on a planted map, and through the engine's runner on a real
model (sums to one, the same for every batch size, equal to a straight computation from the Hugging Face
attentions)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import run_collectors

from headstats.analyses.special_mass.collect import SpecialMass, special_mass_of
from headstats.engine.batch import view_of
from headstats.engine.collector import Context
from headstats.engine.runner import Job
from headstats.model.encoding import EncodedInput


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


TEXTS = [("the cat sat on the mat .", None), ("a dog ran", "the man saw it ."), ("big red car", None),
         ("she likes the book .", "he read it yesterday .")]


def special_mass(loaded, texts, *, batch_size: int = 16):
    (collector,) = run_collectors({loaded.name: loaded}, texts,
                                  [Job(SpecialMass, (loaded.name,), "d", name="special_mass")], batch_size=batch_size)
    return collector.tables()["special_mass"]


def test_mass_sums_to_one_and_is_batch_invariant(tiny_model):
    m1 = special_mass(tiny_model, TEXTS, batch_size=1)
    m4 = special_mass(tiny_model, TEXTS, batch_size=4)
    assert np.allclose(m1["mass_mean"], m4["mass_mean"], atol=1e-6)
    total = m1.groupby(["layer", "head"])["mass_mean"].sum()
    assert np.allclose(total, 1.0, atol=1e-5)


def test_mass_matches_hugging_face(tiny_model):
    from headstats.inputs.records import Record
    from headstats.model.encoding import encode_records

    (item,) = encode_records([Record(sentence_id="0", text_a=TEXTS[1][0], text_b=TEXTS[1][1])],
                             tiny_model.tokenizer).inputs
    with torch.inference_mode():
        out = tiny_model.model(input_ids=torch.from_numpy(item.input_ids[None]),
                               token_type_ids=torch.from_numpy(item.token_type_ids[None]), output_attentions=True)
    attn = torch.stack(out.attentions, 1)[0].numpy()  # (L, H, N, N)
    sep_pos = np.flatnonzero(item.sep)
    expected = attn[..., sep_pos].sum(-1).mean(-1)  # mean over queries of mass on [SEP]
    got = special_mass(tiny_model, TEXTS[1:2]).query("target == 'sep'").sort_values(["layer", "head"])
    assert np.allclose(got["mass_mean"].to_numpy(), expected.ravel(), atol=1e-6)
