"""Pictures (METHODS 3): the gallery picks the planted head for each pattern and the input that shows it, only
the inputs to draw are kept, long inputs are drawn on the first pieces of each sentence, and the tiny model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from headstats.analyses.pictures.collect import (GALLERY_COLUMNS, MAP_COLUMNS, PATTERNS, TOKEN_COLUMNS, AttentionPictures, shown_positions)
from headstats.engine.batch import view_of
from headstats.engine.collector import Context
from headstats.model.encoding import EncodedInput

CLS, SEP = 2, 3


def pair_item(index, ids_a, ids_b):
    ids = [CLS, *ids_a, SEP, *ids_b, SEP]
    n = len(ids)
    seg = np.array([0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1))
    special = np.isin(ids, [CLS, SEP])
    return EncodedInput(index, f"x{index}", np.array(ids), seg, special, np.arange(n) == 0,
                        np.array(ids) == SEP, seg, True)


def planted_heads(n: int, ids: list[int], segment: np.ndarray) -> torch.Tensor:
    """(1, 6, n, n): head 0 next, 1 previous, 2 identical pieces, 3 the same piece in the other sentence,
    4 [CLS]/[SEP], 5 uniform; 1 layer x 6 heads."""
    heads = torch.zeros(6, n, n)
    for i in range(n):
        heads[0, i, min(i + 1, n - 1)] = 1.0
        heads[1, i, max(i - 1, 0)] = 1.0
        same = [j for j in range(n) if j != i and ids[j] == ids[i] and ids[i] not in (CLS, SEP)]
        other = [j for j in same if segment[j] != segment[i]]
        if same:
            heads[2, i, same] = 1.0 / len(same)
        else:
            heads[2, i, i] = 1.0
        if other:
            heads[3, i, other] = 1.0 / len(other)
        else:
            heads[3, i, 0] = 0.5
            heads[3, i, i] = 0.5 if i else 1.0
        heads[4, i, 0] = 0.5
        heads[4, i, n - 1] = 0.5
        heads[5, i] = 1.0 / n
    return heads[None]


def batch(items):
    width = max(it.length for it in items)
    attn = torch.zeros(len(items), 1, 6, width, width)
    ids = torch.zeros(len(items), width, dtype=torch.int64)
    for b, it in enumerate(items):
        n = it.length
        attn[b, :, :, :n, :n] = planted_heads(n, list(it.input_ids), it.segment)
        ids[b, :n] = torch.tensor(it.input_ids)
    return view_of(attn, items, input_ids=ids)


def test_gallery_picks_the_planted_heads():
    # x0: piece 10 twice in A and once in B, piece 11 twice in A only: head 2 (identical pieces anywhere) and
    # head 3 (only in the other sentence) differ on both measures
    items = [pair_item(0, [10, 10, 11, 11], [12, 10]), pair_item(1, [13, 14, 15], [16]), pair_item(2, [10], [10])]
    c = AttentionPictures(Context(("m",), "d", 1, 6, {"punct_ids": [], "n_inputs": 2, "max_pieces": 64,
                                                      "tokens": lambda ids: [f"t{i}" for i in ids]}))
    c.update(batch(items[:2]))
    c.update(batch(items[2:]))
    assert [k.sentence_id for k in c.state().kept] == ["x0", "x1"]  # the first two that fit
    tables = c.tables()
    gallery = tables["gallery"].set_index("pattern")
    assert list(tables["gallery"].columns) == GALLERY_COLUMNS and set(gallery.index) == set(PATTERNS)
    expected = {"next_word": 0, "previous_word": 1, "identical_words": 2, "same_word_other_sentence": 3,
                "delimiters": 4, "broad": 5}
    assert {p: int(gallery.loc[p, "head"]) for p in expected} == expected
    # x1 has no repeated piece: identical words are shown on x0
    assert gallery.loc["identical_words", "sentence_id"] == "x0"
    assert gallery.loc["same_word_other_sentence", "value"] == 1.0
    maps, tokens = tables["attention_maps"], tables["attention_tokens"]
    assert list(maps.columns) == MAP_COLUMNS and list(tokens.columns) == TOKEN_COLUMNS
    m = maps[(maps["sentence_id"] == "x0") & (maps["head"] == 0)]
    grid = np.zeros((9, 9))
    grid[m["query"], m["key"]] = m["weight"]
    np.testing.assert_array_equal(grid, planted_heads(9, list(items[0].input_ids), items[0].segment)[0, 0].numpy())
    assert tokens[tokens["sentence_id"] == "x0"]["token"].tolist() == [f"t{i}" for i in items[0].input_ids]


def test_a_gallery_example_below_its_stated_strength_is_labelled_weak():
    # every head puts a quarter of its mass as planted and the rest uniformly: no head attends mostly to the
    # next piece (best mean about 0.25 + 0.75 / n < 0.5), so the gallery still shows one, labelled weak
    from headstats.analyses.pictures.collect import GALLERY_STRENGTH

    items = [pair_item(0, [10, 10, 11, 11], [12, 10]), pair_item(1, [13, 14, 15], [16])]
    view = batch(items)
    mixed = view.attention.clone()
    for b, it in enumerate(items):
        n = it.length
        mixed[b, :, :, :n, :n] = 0.25 * mixed[b, :, :, :n, :n] + 0.75 / n
    c = AttentionPictures(Context(("m",), "d", 1, 6, {"punct_ids": [], "n_inputs": 2, "max_pieces": 64,
                                                      "tokens": lambda ids: [f"t{i}" for i in ids]}))
    c.update(view_of(mixed, items, input_ids=view.input_ids))
    gallery = c.tables()["gallery"].set_index("pattern")
    assert gallery["strength"].to_dict() == GALLERY_STRENGTH
    assert gallery.loc["next_word", "mean"] < 0.5 and bool(gallery.loc["next_word", "weak"])
    assert (gallery["weak"] == (gallery["mean"] < gallery["strength"])).all()
    assert not bool(gallery.loc["broad", "weak"])  # three quarters uniform: entropy near ln n


def test_sentence_ids_and_heads_options():
    items = [pair_item(0, [10, 11], [12, 10]), pair_item(1, [13, 14, 15], [16])]
    c = AttentionPictures(Context(("m",), "d", 1, 6, {"punct_ids": [], "n_inputs": 1, "sentence_ids": ["x1"],
                                                      "heads": [[0, 5]], "tokens": lambda ids: list(map(str, ids))}))
    c.update(batch(items))
    assert [k.sentence_id for k in c.state().kept] == ["x1"]
    maps = c.tables()["attention_maps"]
    assert set(maps["sentence_id"]) == {"x1"} and 5 in set(maps["head"])


def test_long_inputs_are_drawn_on_both_sentences():
    segment = np.array([0] * 10 + [1] * 6)
    np.testing.assert_array_equal(shown_positions(segment, 8), [0, 1, 2, 3, 10, 11, 12, 13])
    np.testing.assert_array_equal(shown_positions(np.zeros(12, int), 8), np.arange(8))
    np.testing.assert_array_equal(shown_positions(segment, 20), np.arange(16))
    np.testing.assert_array_equal(shown_positions(np.array([0] * 10 + [1] * 2), 8), [0, 1, 2, 3, 4, 5, 10, 11])


def test_keeps_only_what_it_draws():
    items = [pair_item(i, [10 + i, 11], [12]) for i in range(6)]
    c = AttentionPictures(Context(("m",), "d", 1, 6, {"punct_ids": [], "n_inputs": 2}))
    for k in range(0, 6, 2):
        c.update(batch(items[k:k + 2]))
    assert len(c.state().kept) == 2
    assert c.state().surface.n[0, 0, 0] == 6  # every input counts in the means


def test_tiny_model(tiny_model):
    from headstats.engine.batch import forward_view
    from headstats.inputs.records import Record
    from headstats.model.encoding import encode_records

    records = [Record("0", "the cat sat on the mat .", "the cat ran"), Record("1", "a dog", "a dog")]
    encoded = encode_records(records, tiny_model.tokenizer).inputs
    c = AttentionPictures(Context(("tiny",), "d", 2, 2, {"n_inputs": 2}, {"tiny": tiny_model.provenance}))
    with torch.inference_mode():
        c.update(forward_view(tiny_model, encoded))
    tables = c.tables()
    assert len(tables["gallery"]) == len(PATTERNS)
    tokens = tables["attention_tokens"]
    assert tokens[tokens["sentence_id"] == "0"]["token"].tolist()[:3] == ["[CLS]", "the", "cat"]
    maps = tables["attention_maps"]
    drawn = tables["gallery"][["sentence_id", "layer", "head"]].drop_duplicates()
    whole = maps.merge(drawn, on=["sentence_id", "layer", "head"])
    rows = whole.groupby(["sentence_id", "layer", "head", "query"])["weight"].sum()
    np.testing.assert_allclose(rows.to_numpy(), 1.0, rtol=1e-5)  # short inputs: the gallery's rows drawn whole
    # every head of every kept input, for the interactive view: the weights of at least VIEW_FLOOR
    from headstats.analyses.pictures.collect import VIEW_FLOOR

    heads = maps.groupby("sentence_id")[["layer", "head"]].apply(lambda g: len(g.drop_duplicates()))
    assert heads.to_dict() == {"0": 4, "1": 4}
    others = maps.merge(drawn, on=["sentence_id", "layer", "head"], how="left", indicator=True)
    assert (others.loc[others["_merge"] == "left_only", "weight"] >= VIEW_FLOOR).all()
    assert isinstance(tables["gallery"], pd.DataFrame)
