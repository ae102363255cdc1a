"""The batch view: masks of a padded batch, derived views computed once, and the forward pass behind it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from headstats.model.encoding import EncodedInput
from headstats.engine.batch import BatchLayout, forward_view, row_means, view_of


def item(index, special, cls, sep, segment, *, is_pair=False):
    n = len(special)
    return EncodedInput(index, f"s{index}", np.arange(n), np.asarray(segment), np.asarray(special, bool),
                        np.asarray(cls, bool), np.asarray(sep, bool), np.asarray(segment), is_pair)


SINGLE = item(3, [1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 0, 0])
PAIR = item(7, [1, 0, 1, 0, 1], [1, 0, 0, 0, 0], [0, 0, 1, 0, 1], [0, 0, 0, 1, 1], is_pair=True)


def planted_view():
    attn = torch.full((2, 1, 1, 5, 5), 0.2)
    attn[1, ..., :3, :3] = torch.tensor([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
    attn[1, ..., :3, 3:] = 0.0
    attn[1, ..., 3:, :] = 9.0  # garbage rows of padded queries
    return view_of(attn, [PAIR, SINGLE], model="m", dataset="d")


def test_masks_of_a_padded_batch():
    view = planted_view()
    assert (view.size, view.n_layers, view.n_heads, view.width) == (2, 1, 1, 5)
    assert view.real.tolist() == [[True] * 5, [True, True, True, False, False]]
    assert view.cls.tolist()[1] == [True, False, False, False, False]
    assert view.sep.tolist()[0] == [False, False, True, False, True]
    assert view.special.tolist()[1] == [True, False, True, False, False]
    assert view.segment.tolist()[0] == [0, 0, 0, 1, 1]
    assert view.is_pair.tolist() == [True, False]
    assert view.lengths.tolist() == [5, 3] and view.index.tolist() == [7, 3]
    assert view.sentence_ids == ["s7", "s3"]


def test_masked_attention_and_row_means():
    view = planted_view()
    masked = view.masked_attention
    assert float(masked[1, ..., 3:, :].abs().sum()) == 0.0 and float(masked[1, ..., :, 3:].abs().sum()) == 0.0
    torch.testing.assert_close(masked[0], view.attention[0])
    # mean over the n = 3 real keys of each real row of the single input: each row sums to 1, so 1/3
    torch.testing.assert_close(view.row_means[1, 0, 0, :3], torch.full((3,), 1 / 3))
    torch.testing.assert_close(view.row_means, row_means(view.attention, view.real))


def test_derived_views_are_computed_once():
    view = planted_view()
    calls = []
    for _ in range(3):
        view.cached("thing", lambda: calls.append(1) or len(calls))
    assert calls == [1] and view.cached("thing", lambda: 0) == 1
    assert view.layout is view.layout and view.masked_attention is view.masked_attention


def test_view_of_checks_shape():
    with pytest.raises(ValueError, match="B = 1 inputs"):
        view_of(torch.zeros(2, 1, 1, 3, 3), [SINGLE])


def test_layout_from_inputs():
    layout = BatchLayout.from_inputs([SINGLE], 4)
    assert layout.real.tolist() == [[True, True, True, False]] and layout.sep.tolist() == [[False, False, True, False]]


def test_forward_view_is_one_forward_pass(tiny_model):
    from headstats.model.encoding import encode_records
    from headstats.engine.forward import forward_attentions, pad_batch
    from headstats.inputs.records import Record

    inputs = encode_records([Record("a", "the cat sat"), Record("b", "a dog ran in the house")],
                            tiny_model.tokenizer).inputs
    with torch.inference_mode():
        view = forward_view(tiny_model, inputs, dataset="d")
        expected = forward_attentions(tiny_model, pad_batch(inputs, tiny_model.tokenizer.pad_token_id))
    torch.testing.assert_close(view.attention, expected, rtol=0, atol=0)
    assert view.model == tiny_model.name and view.dataset == "d" and view.inputs == inputs
    assert view.input_ids.shape == (2, view.width)


# ------------------------------------------------------------------------------------------ word level (METHODS 2.2)
def split_word_input():
    """[CLS] w0a w0b w1 w2 [SEP]: word 0 has two pieces; units [CLS], w0, w1, w2, [SEP]."""
    from headstats.model.encoding import EncodedInput

    n = 6
    special = np.zeros(n, bool)
    special[[0, 5]] = True
    return EncodedInput(0, "s", np.arange(n), np.zeros(n, int), special, special & (np.arange(n) == 0),
                        special & (np.arange(n) == 5), np.zeros(n, int), False,
                        word_pieces=[(1, 2), (3,), (4,)])


def split_word_attention():
    attn = torch.zeros(1, 1, 1, 7, 7)          # padded to 7
    attn[0, 0, 0, :6, :6] = torch.eye(6)
    attn[0, 0, 0, 1, :6] = torch.tensor([0, 0, 0, 0.6, 0.2, 0.2])
    attn[0, 0, 0, 2, :6] = torch.tensor([0, 0.2, 0, 0.2, 0.2, 0.4])
    attn[0, 0, 0, 6] = 1 / 7                    # a padded query's garbage
    return attn


def test_word_attention_sums_to_and_averages_from():
    from headstats.engine.batch import UNIT_CLS, UNIT_SEP, UNIT_WORD

    view = view_of(split_word_attention(), [split_word_input()])
    units = view.word_units
    assert units.kind[0].tolist() == [UNIT_CLS, UNIT_WORD, UNIT_WORD, UNIT_WORD, UNIT_SEP]
    assert units.unit_of_word[0].tolist() == [1, 2, 3]
    w = view.word_attention("mean")[0, 0, 0]
    # row of the split word: mean of its pieces' rows, each summed over the key unit's pieces
    assert w[1].tolist() == pytest.approx([0.0, 0.1, 0.4, 0.2, 0.3])
    # column of the split word for [CLS]'s row (eye): nothing; for w1's row: sum of its pieces (0)
    assert w.sum(-1).tolist() == pytest.approx([1.0] * 5)
    first = view.word_attention("first")[0, 0, 0]
    assert first[1].tolist() == pytest.approx([0.0, 0.0, 0.6, 0.2, 0.2])
    assert view.word_attention("mean") is view.word_attention("mean")   # cached, shared by collectors


def test_words_sharing_pieces_are_one_unit():
    from headstats.engine.batch import WordUnits
    from headstats.model.encoding import EncodedInput

    n = 5
    special = np.zeros(n, bool)
    special[[0, 4]] = True
    item = EncodedInput(0, "s", np.arange(n), np.zeros(n, int), special, special & (np.arange(n) == 0),
                        special & (np.arange(n) == 4), np.zeros(n, int), False,
                        word_pieces=[(1,), (2,), (2, 3)])  # "gonna": two words, overlapping pieces
    units = WordUnits.from_inputs([item], n)
    assert units.unit_of_word[0].tolist() == [1, 2, 2]
    assert units.n_units.tolist() == [4]


def test_forward_views_norm_is_one_pass_and_the_renormalised_weights(tiny_model):
    """The norm view (METHODS 6.1) comes from the same forward pass as the weights; its maps are
    ``alpha_ij n_j / sum_k alpha_ik n_k`` with ``n_j = ||(x_j W_V^h + b_V^h) W_O^h||`` from the weights."""
    from headstats.engine import forward as extraction
    from headstats.engine.batch import forward_views
    from headstats.model.encoding import encode_records
    from headstats.inputs.records import Record

    inputs = encode_records([Record("a", "the cat sat"), Record("b", "a dog ran in the house")],
                            tiny_model.tokenizer).inputs
    calls = []
    real = extraction.forward_attentions

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    extraction.forward_attentions = counted
    try:
        with torch.inference_mode():
            views = forward_views(tiny_model, inputs, measures=("weights", "norm"))
    finally:
        extraction.forward_attentions = real
    assert len(calls) == 1 and set(views) == {"weights", "norm"}
    model = tiny_model.model
    batch = extraction.pad_batch(inputs, tiny_model.tokenizer.pad_token_id)
    with torch.inference_mode():
        hidden = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                       token_type_ids=batch.token_type_ids, output_hidden_states=True).hidden_states
    A = views["weights"].attention
    H, d = tiny_model.n_heads, model.config.hidden_size // tiny_model.n_heads
    with torch.inference_mode():
        for layer in range(tiny_model.n_layers):
            attention = model.encoder.layer[layer].attention
            v = hidden[layer] @ attention.self.value.weight.T + attention.self.value.bias
            W = attention.output.dense.weight
            for h in range(H):
                n = (v[..., h * d:(h + 1) * d] @ W[:, h * d:(h + 1) * d].T).norm(dim=-1)  # (B, T)
                weighted = A[:, layer, h] * n[:, None, :]
                expected = weighted / weighted.sum(-1, keepdim=True)
                torch.testing.assert_close(views["norm"].attention[:, layer, h], expected, rtol=1e-5, atol=1e-7)
    assert views["norm"].inputs == views["weights"].inputs
    with pytest.raises(ValueError, match="unknown attention measure 'values'"):
        forward_views(tiny_model, inputs, measures=("values",))
