"""The viewer's forward pass: the engine's attention of each input, its pieces and words."""

from __future__ import annotations

import numpy as np
import pytest

from headstats.engine.forward import forward_attentions, pad_batch
from headstats.errors import DataError, UnknownNameError
from headstats.inputs.records import Record
from headstats.model.encoding import encode_records
from headstats.study.viewing import MOST_INPUTS, VIEW_MEASURES, view_inputs, word_of_pieces


def test_words_of_pieces_follow_each_tokenizer_family():
    assert word_of_pieces(["[CLS]", "token", "##ization", "is", "[SEP]"], [1, 0, 0, 0, 1]).tolist() == [0, 1, 1, 2, 3]
    assert word_of_pieces(["<s>", "Token", "ization", "\u0120is", "</s>"], [1, 0, 0, 0, 1]).tolist() == [0, 1, 1, 2, 3]
    assert word_of_pieces(["<s>", "\u2581a", "b", "\u2581c", "</s>"], [1, 0, 0, 0, 1]).tolist() == [0, 1, 1, 2, 3]
    assert word_of_pieces(["[CLS]", "a", "b", "c", "[SEP]"], [1, 0, 0, 0, 1], [(1, 2), (3,)]).tolist() == \
        [0, 1, 1, 2, 3]


def test_the_maps_are_the_engines_forward_pass_of_each_input(tiny_model):
    records = [Record("a", "The cat sat on the mat."), Record("b", "A dog.", "It barked loudly at night.")]
    inputs = view_inputs(tiny_model, records)
    assert [v.sentence_id for v in inputs] == ["a", "b"] and [v.is_pair for v in inputs] == [False, True]
    for record, item in zip(records, inputs):  # one input alone, unpadded
        encoded = encode_records([record], tiny_model.tokenizer, max_length=512).inputs[0]
        alone = forward_attentions(tiny_model, pad_batch([encoded], tiny_model.tokenizer.pad_token_id))[0]
        np.testing.assert_allclose(item.maps, alone.detach().numpy(), atol=1e-6)
        assert item.tokens == tiny_model.tokenizer.convert_ids_to_tokens(encoded.input_ids.tolist())
        np.testing.assert_array_equal(item.segment, encoded.segment)
    np.testing.assert_allclose(inputs[1].maps.sum(-1), 1.0, atol=1e-5)


def test_long_inputs_are_cut_at_max_length_and_say_so(tiny_model):
    item = view_inputs(tiny_model, [Record("a", " ".join(["word"] * 40))], max_length=16)[0]
    assert item.length == 16 and item.truncated and item.maps.shape[-1] == 16


def test_the_view_refuses_what_it_cannot_draw(tiny_model):
    with pytest.raises(DataError, match="nothing to view"):
        view_inputs(tiny_model, [])
    with pytest.raises(DataError, match=f"more than one page holds \\({MOST_INPUTS}\\); give --limit N"):
        view_inputs(tiny_model, [Record(str(k), "a b") for k in range(MOST_INPUTS + 1)])
    with pytest.raises(UnknownNameError, match="unknown view measure 'norm'; choose one of weights"):
        view_inputs(tiny_model, [Record("a", "a b")], measure="norm")
    assert VIEW_MEASURES.names() == ["weights"]
