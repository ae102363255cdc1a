"""Batching, padding and the forward pass that returns attention."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from headstats.model.encoding import EncodedInput, encode_records
from headstats.errors import HeadstatsError
from headstats.engine.forward import forward_attentions, length_sorted_batches, pad_batch
from headstats.inputs.records import Record
from headstats.model.loading import LoadedModel

TEXTS = ["the cat sat", "a dog ran in the house", "the cat", "the old man saw a big red car", "it was"]


def fake_input(index: int, length: int, pair: bool = False) -> EncodedInput:
    ids = np.arange(10, 10 + length, dtype=np.int64)
    special = np.zeros(length, dtype=bool)
    special[[0, -1]] = True
    types = np.zeros(length, dtype=np.int64)
    if pair:
        types[length // 2:] = 1
    return EncodedInput(index, f"s{index}", ids, types, special, special & (np.arange(length) == 0),
                        special & (np.arange(length) > 0), types.astype(np.int8), pair)


def test_length_sorted_batches():
    lengths = [3, 5, 4, 5, 2]
    inputs = [fake_input(i, n) for i, n in enumerate(lengths)]
    batches = length_sorted_batches(inputs, 2)
    # longest first, ties in input order; last batch short
    assert [[item.index for item in b] for b in batches] == [[1, 3], [2, 0], [4]]
    assert [len(b) for b in length_sorted_batches(inputs, 3)] == [3, 2]
    assert [[item.index for item in b] for b in length_sorted_batches(inputs, 10)] == [[1, 3, 2, 0, 4]]
    assert length_sorted_batches([], 4) == []
    with pytest.raises(ValueError, match="batch_size"):
        length_sorted_batches(inputs, 0)


def test_length_sorted_batches_within_a_cell_budget():
    # B = min(batch_size, max(1, floor(max_cells / T^2))), T = the batch's longest (first) input
    lengths = [7, 12, 3, 10, 7, 11, 6, 4]
    inputs = [fake_input(i, n) for i, n in enumerate(lengths)]
    lengths_of = lambda batches: [[item.length for item in b] for b in batches]  # noqa: E731
    # 300 cells: T=12 -> 2 inputs, T=10 -> 3, T=6 -> 8 but batch_size 4 caps it (3 left)
    assert lengths_of(length_sorted_batches(inputs, 4, max_cells=300)) == [[12, 11], [10, 7, 7], [6, 4, 3]]
    # ties keep the input order within and across batches
    assert [[item.index for item in b] for b in length_sorted_batches(inputs, 4, max_cells=300)] == \
        [[1, 5], [3, 0, 4], [6, 7, 2]]
    # fewer cells than the longest input's T^2: one input a batch, never none
    assert lengths_of(length_sorted_batches(inputs, 4, max_cells=50)) == \
        [[12], [11], [10], [7], [7], [6], [4, 3]]
    # a budget that every batch fits changes nothing
    assert length_sorted_batches(inputs, 3, max_cells=10_000) == length_sorted_batches(inputs, 3)
    with pytest.raises(ValueError, match="max_cells"):
        length_sorted_batches(inputs, 4, max_cells=0)


def test_pad_batch():
    items = [fake_input(0, 3), fake_input(1, 5, pair=True)]
    batch = pad_batch(items, pad_token_id=0)
    assert batch.input_ids.shape == batch.token_type_ids.shape == batch.attention_mask.shape == (2, 5)
    assert batch.input_ids.dtype == torch.int64
    assert batch.input_ids.tolist() == [[10, 11, 12, 0, 0], [10, 11, 12, 13, 14]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    assert batch.token_type_ids.tolist() == [[0, 0, 0, 0, 0], [0, 0, 1, 1, 1]]
    assert batch.lengths.tolist() == [3, 5]
    assert batch.inputs == items
    assert pad_batch(items, pad_token_id=7).input_ids[0].tolist() == [10, 11, 12, 7, 7]


@pytest.fixture(scope="module")
def encoded(tiny_model):
    records = [Record(str(i), t) for i, t in enumerate(TEXTS)] + [Record("p", "the cat sat", "a dog ran")]
    return encode_records(records, tiny_model.tokenizer).inputs


def test_forward_attentions_match_transformers(tiny_model, encoded):
    batch = pad_batch(encoded, tiny_model.tokenizer.pad_token_id)
    with torch.inference_mode():
        attn = forward_attentions(tiny_model, batch)
        reference = tiny_model.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                                     token_type_ids=batch.token_type_ids, output_attentions=True).attentions
    B, N = batch.input_ids.shape
    assert attn.shape == (B, 2, 2, N, N) and attn.dtype == torch.float32
    torch.testing.assert_close(attn, torch.stack(reference, dim=1), rtol=0, atol=0)
    for b, item in enumerate(encoded):
        n = item.length
        rows = attn[b, :, :, :n, :n].sum(-1)
        torch.testing.assert_close(rows, torch.ones_like(rows), rtol=0, atol=1e-5)
        if n < N:
            assert float(attn[b, :, :, :n, n:].abs().max()) < 1e-6  # no weight on padded keys


def test_padding_does_not_change_attention(tiny_model, encoded):
    batch = pad_batch(encoded, tiny_model.tokenizer.pad_token_id)
    with torch.inference_mode():
        padded = forward_attentions(tiny_model, batch)
        for b, item in enumerate(encoded):
            alone = forward_attentions(tiny_model, pad_batch([item], tiny_model.tokenizer.pad_token_id))
            n = item.length
            torch.testing.assert_close(padded[b, :, :, :n, :n], alone[0], rtol=1e-5, atol=1e-6)


def test_sdpa_model_is_refused(tiny_model, tiny_model_dir, encoded):
    from transformers import AutoModel

    sdpa = AutoModel.from_pretrained(tiny_model_dir, attn_implementation="sdpa").eval()
    loaded = LoadedModel("tiny-sdpa", sdpa, tiny_model.tokenizer, dict(tiny_model.provenance))
    batch = pad_batch(encoded[:2], tiny_model.tokenizer.pad_token_id)
    with pytest.raises(HeadstatsError, match="eager") as info, torch.inference_mode():
        forward_attentions(loaded, batch)
    assert "no attention weights" in str(info.value) and "'tiny-sdpa'" in str(info.value)


def test_progress_order_starts_longest_and_makes_the_first_time_left_right():
    """Batches run longest first made the first time left about 2-3 x too long; in progress_order the
    rate after the second batch (rich's first estimate) is the whole pass's. Cost model: padded pieces
    B x T plus the attention's B x T^2 (lengths of a log-normal like sentence data)."""
    from headstats.engine.forward import inputs_per_batch, progress_order

    for n in range(0, 40):
        order = progress_order(n)
        assert sorted(order) == list(range(n)) and (n == 0 or order[0] == 0)
    assert progress_order(5) == [0, 2, 1, 3, 4]  # the median second

    rng = np.random.default_rng(0)
    lengths = np.sort(np.clip(rng.lognormal(3.3, 0.5, 600).astype(int), 5, 128))[::-1]
    batches, start = [], 0
    while start < len(lengths):
        size = inputs_per_batch(int(lengths[start]), 32, 32 * 40 * 40)
        batches.append(lengths[start:start + size])
        start += size

    def first_estimate_over_truth(order):
        seconds = [len(batches[i]) * batches[i][0] * (1 + batches[i][0] / 1000) for i in order]
        sizes = [len(batches[i]) for i in order]
        speed = sizes[1] / seconds[1]  # rich: inputs after the first sample / time since it
        return (sum(sizes) - sizes[0] - sizes[1]) / speed / sum(seconds[2:])

    assert first_estimate_over_truth(range(len(batches))) > 2.5  # the old order: the bug
    assert first_estimate_over_truth(progress_order(len(batches))) == pytest.approx(1.0, abs=0.15)
