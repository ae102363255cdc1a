"""The comparison's collectors and planner. Cosine similarity of two models' maps of the same inputs: on planted maps,
and through the engine's runner on real models (identical models give 1; a second model against a straight
computation from the Hugging Face attentions; models with different tokenizers refused). Attention mass on [CLS],
[SEP] and other tokens: on a planted map, and through the engine's runner on a real model (sums to one, the same for
every batch size, equal to a straight computation from the Hugging Face attentions)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from conftest import run_collectors

from headstats.analyses.finetune_comparison.collect import AttentionSimilarity, SpecialMass, cosine_of, special_mass_of
from headstats.engine.batch import view_of
from headstats.engine.collector import Context
from headstats.engine.runner import Job
from headstats.errors import HeadstatsError
from headstats.model.encoding import EncodedInput


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


TEXTS = [("the cat sat on the mat .", None), ("a dog ran", "the man saw it ."), ("big red car", None),
         ("she likes the book .", "he read it yesterday .")]


def similarity(a, b, *, batch_size: int = 16):
    models = {"A": dataclasses.replace(a, name="A"), "B": dataclasses.replace(b, name="B")}
    (collector,) = run_collectors(models, TEXTS, [Job(AttentionSimilarity, ("A", "B"), "d", name="similarity")],
                                  batch_size=batch_size)
    return collector.tables()["similarity"]


def test_identical_models_have_cosine_one(tiny_model):
    sim = similarity(tiny_model, tiny_model, batch_size=3)
    assert len(sim) == tiny_model.n_layers * tiny_model.n_heads
    assert np.allclose(sim["cosine_mean"], 1.0, atol=1e-6)
    assert (sim["n"] == len(TEXTS)).all() and (sim["dataset"] == "d").all()


def test_similarity_against_direct_computation(tiny_model, tmp_path):
    """A second random model with the same tokenizer: cosine per head equals a one-input-at-a-time
    computation straight from the Hugging Face attentions."""
    from conftest import build_tiny_bert
    from headstats.model.encoding import encode_records
    from headstats.inputs.records import Record
    from headstats.model.loading import load_model

    other = load_model(str(build_tiny_bert(tmp_path / "other", seed=7)))
    with torch.no_grad():  # random BERTs attend almost uniformly; sharpen the other model's attention
        for layer in other.model.encoder.layer:
            layer.attention.self.query.weight.mul_(60.0)
    sim = similarity(tiny_model, other, batch_size=4).sort_values(["layer", "head"])
    records = [Record(sentence_id=str(i), text_a=a, text_b=b) for i, (a, b) in enumerate(TEXTS)]
    per_input = []
    for item in encode_records(records, tiny_model.tokenizer).inputs:
        maps = []
        for m in (tiny_model, other):
            with torch.inference_mode():
                out = m.model(input_ids=torch.from_numpy(item.input_ids[None]),
                              token_type_ids=torch.from_numpy(item.token_type_ids[None]), output_attentions=True)
            maps.append(torch.stack(out.attentions, 1)[0].numpy().reshape(m.n_layers, m.n_heads, -1))
        a, b = maps
        per_input.append((a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1)))
    per_input = np.array(per_input)
    assert np.allclose(sim["cosine_mean"].to_numpy(), per_input.mean(0).ravel(), atol=1e-5)
    assert np.allclose(sim["cosine_sd"].to_numpy(), per_input.std(0, ddof=1).ravel(), atol=1e-5)
    assert (sim["cosine_mean"] < 0.99).any()


def test_models_with_different_tokenizers_are_refused(tiny_model, tmp_path):
    from transformers import BertTokenizerFast

    from conftest import build_tiny_bert
    from headstats.model.loading import load_model

    other_dir = build_tiny_bert(tmp_path / "other", seed=1)
    vocab = (other_dir / "vocab.txt").read_text().splitlines()
    vocab[vocab.index("book")] = "zebra"  # same size as the model's embeddings, one word different
    (other_dir / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab=str(other_dir / "vocab.txt"), do_lower_case=True).save_pretrained(other_dir)
    with pytest.raises(HeadstatsError, match="different tokenizers"):
        similarity(tiny_model, load_model(str(other_dir)))


# ------------------------------------------------------------------ special-token mass


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


# ------------------------------------------------------------------ the planner


def test_the_plan_has_the_mass_of_every_compared_model_and_the_similarity_of_every_pair_and_seed_pair():
    """Two entries: ``base`` vs ``other`` on every data set, ``base`` vs a group of three seeds on ``d1``: the mass of
    each (model, data set) once, the similarity of each (base, fine-tuned) pair and of the 3 seed pairs."""
    from headstats.analyses import PlanContext
    from headstats.analyses.finetune_comparison.collect import comparison_jobs as plan
    from headstats.analyses.finetune_comparison.options import CompareSpec

    seeds = ["s0", "s1", "s2"]
    compare = [CompareSpec(base="base", finetuned=["other"]),
               CompareSpec(base="base", finetuned=seeds, datasets=["d1"])]
    context = PlanContext(models=("base", "other", *seeds), datasets=("d1", "d2"), measure={"measure": "norm"},
                          extra={"replicate_of": {s: "ft" for s in seeds}})
    jobs = plan(compare, context)
    mass = [(j.models, j.dataset) for j in jobs if j.factory is SpecialMass]
    pairs = [(j.models, j.dataset) for j in jobs if j.factory is AttentionSimilarity]
    assert mass == [(("base",), "d1"), (("other",), "d1"), (("base",), "d2"), (("other",), "d2"),
                    *[((s,), "d1") for s in seeds]]
    assert pairs == [(("base", "other"), "d1"), (("base", "other"), "d2"), *[(("base", s), "d1") for s in seeds],
                     (("s0", "s1"), "d1"), (("s0", "s2"), "d1"), (("s1", "s2"), "d1")]
    assert {j.name for j in jobs} == {"finetune_comparison"} and all(j.options == {"measure": "norm"} for j in jobs)
    assert plan([], context) == []
