"""Cosine similarity of two models' maps of the same inputs: on planted maps, and through the engine's runner on
real models (identical models give 1; a second model against a straight computation from the Hugging Face
attentions; models with different tokenizers refused)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from conftest import run_collectors

from headstats.analyses.similarity.collect import AttentionSimilarity, cosine_of
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
