"""Non-finite attention stops a run: one line naming the model, data set, input, layer, head and likely cause.

NaN attention (a float16 overflow, a damaged checkpoint) was once scored as 0.0 in silence, exit 0; every
test then read those heads as far below tau. The attention is checked once per batch as the forward pass
yields it (engine/batch.py ``finite_attention``), and a measure that comes out non-finite where its input
takes part stops too (engine/collector.py ``refuse_non_finite``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

import headstats as hs
from headstats.analyses.sieves import score_and_ceilings
from headstats.engine import forward as extraction
from headstats.engine.batch import view_of
from headstats.engine.collector import refuse_non_finite
from headstats.errors import HeadstatsError, ModelError
from headstats.inputs.records import Record
from cli.cli_helpers import DEMO, assert_one_line_error, runner, write_protocol
from conftest import copy_model
from headstats.cli.main import app

TEXTS = ["the cat sat on the mat .", "a dog ran", "she read the book", "the old man saw a big red car today",
         "we ate", "the child gave the dog a book"]
RECORDS = [Record(sentence_id=f"s{i}", text_a=t) for i, t in enumerate(TEXTS)]


def eager_runner(monkeypatch) -> None:
    """Every runner made from here on runs transformers' eager attention, with the maps (``map_free=False``)."""
    from headstats.engine import runner as engine_runner

    real = engine_runner.Runner.__init__
    monkeypatch.setattr(engine_runner.Runner, "__init__",
                        lambda self, **kwargs: real(self, **{**kwargs, "map_free": False}))


def plant(monkeypatch, value: float, *, index: int = 3, layer: int = 1, head: int = 0, padding: bool = False):
    """Every forward pass puts ``value`` into one weight of the map of input ``index`` (file order) at
    ``(layer, head)``: among its real positions, or (``padding``) in a padded row only. Returns the ids
    of the inputs it was planted in. Planted in the maps of transformers' eager attention, which every pass then
    takes (``Runner(map_free=False)``; the fused path checks its maps the same way, and a NaN that the model itself
    makes stops a map-free pass too, test_a_checkpoint_with_a_nan_weight_...)."""
    eager_runner(monkeypatch)
    real = extraction.forward_attentions
    planted: list[str] = []

    def planting(loaded, batch):
        attention = real(loaded, batch)
        width = attention.shape[-1]
        for b, item in enumerate(batch.inputs):
            if item.index == index and (not padding or item.length < width):
                row = width - 1 if padding else 1
                attention[b, layer, head, row, 0] = value
                planted.append(item.sentence_id)
        return attention

    monkeypatch.setattr(extraction, "forward_attentions", planting)
    return planted


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_hs_score_stops_on_non_finite_attention_naming_the_input_layer_head_and_cause(tiny_model, monkeypatch,
                                                                                      value):
    planted = plant(monkeypatch, value)
    with pytest.raises(ModelError) as raised:
        hs.score(tiny_model, RECORDS, dataset="planted", roles=["local", "delimiter"], batch_size=4, parse=False)
    message = str(raised.value)
    assert planted == ["s3"] and "\n" not in message
    assert message.startswith(f"model {tiny_model.name!r} gave non-finite attention (NaN or inf) on data set "
                              "'planted', input 's3' (layer 1, head 0, counted from 0; 1 of the batch's")
    assert "its weights are finite and it runs in float32, so the checkpoint is damaged" in message


def test_a_checkpoint_with_a_nan_weight_is_named_as_the_cause(tiny_model_dir, tmp_path):
    from safetensors.torch import load_file, save_file

    folder = copy_model(tiny_model_dir, tmp_path)
    weights = load_file(folder / "model.safetensors")
    name = next(k for k in weights if k.endswith("layer.1.attention.self.query.weight"))
    weights[name][0, 0] = math.nan  # the first query dimension of head 0 of layer 1: every map of that head
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelError) as raised:
        hs.score(hs.load_model(str(folder)), RECORDS, dataset="d", roles=["local"], parse=False)
    message = str(raised.value)
    assert "input 's0' (layer 1, head 0, counted from 0; " in message  # the first input in file order
    assert f"1 of its weight tensors holds NaN or inf (first: {name}), so the checkpoint is damaged" in message


def test_non_finite_weights_in_padding_only_change_nothing(tiny_model, monkeypatch):
    eager_runner(monkeypatch)  # both with the maps
    clean = hs.score(tiny_model, RECORDS, dataset="d", roles=["local", "delimiter", "block"], batch_size=6,
                     parse=False)
    planted = plant(monkeypatch, math.nan, index=1, padding=True)  # "a dog ran": padded in the batch of six
    again = hs.score(tiny_model, RECORDS, dataset="d", roles=["local", "delimiter", "block"], batch_size=6,
                     parse=False)
    assert planted == ["s1"]
    np.testing.assert_array_equal(again.values, clean.values)


def test_run_stops_with_one_line_exit_2_and_no_output_folder(tiny_model_dir, tmp_path, monkeypatch):
    planted = plant(monkeypatch, math.inf, index=2, layer=0, head=1)
    protocol = write_protocol(tmp_path, str(tiny_model_dir), datasets=[
        {"name": "single", "path": str(DEMO / "sentences.txt"), "limit": 8}])
    out = tmp_path / "runs" / "planted"
    result = runner.invoke(app, ["run", str(protocol), "--out", str(out)])
    assert_one_line_error(result, f"model {str(tiny_model_dir)!r} gave non-finite attention",
                          f"data set 'single', input {planted[0]!r} (layer 0, head 1, counted from 0",
                          "the checkpoint is damaged")
    assert not out.exists() and not (tmp_path / "runs").exists()  # nor its staging folder, lock or parents


def item_of(n: int, index: int):
    from headstats.model.encoding import EncodedInput

    special = np.zeros(n, bool)
    special[[0, n - 1]] = True
    return EncodedInput(index, f"s{index}", np.arange(n), np.zeros(n, np.int64), special, np.eye(n, dtype=bool)[0],
                        np.eye(n, dtype=bool)[n - 1], np.zeros(n, np.int64), False)


def test_sieve_scores_of_nan_attention_are_nan_not_zero_and_the_collector_stops_on_them():
    inputs = [item_of(5, 0), item_of(4, 1)]
    attn = torch.full((2, 1, 2, 5, 5), 0.25)
    attn[0] = 0.2
    attn[1, ..., 4] = 0.0
    attn[1, 0, 1, 2, 1] = math.nan  # input s1, head 1, query 2
    view = view_of(attn, inputs, model="m", dataset="d")
    roles = ["local", "delimiter", "delimiter_cls"]
    scores, ceilings = score_and_ceilings(view, roles)
    assert torch.isnan(scores[1, 0, 1]).all()  # every role counts query 2 (it was 0.0: the NaN zeroed)
    assert torch.isfinite(scores[0]).all() and torch.isfinite(scores[1, 0, 0]).all()
    # the head that saw uniform attention over 4 keys: 1, exactly (METHODS 1.2)
    torch.testing.assert_close(scores[1, 0, 0], torch.ones(3))
    with pytest.raises(HeadstatsError, match=r"^local of model 'm' is nan on data set 'd', input 's1' \(layer 0, "
                                             r"head 1, counted from 0\): its attention holds NaN or inf there"):
        refuse_non_finite(view, scores.numpy(), ceilings.numpy(), roles)


def test_a_measure_infinite_from_finite_attention_is_named_too():
    inputs = [item_of(4, 0), item_of(4, 1)]
    view = view_of(torch.full((2, 2, 1, 4, 4), 0.25), inputs, model="m", dataset="d")
    values = np.ones((2, 2, 1, 2), np.float32)
    ceilings = np.ones((2, 2), np.float32)
    values[0, :, :, 1] = np.nan
    ceilings[0, 1] = np.nan  # input s0 takes no part in measure b: NaN is its mark, not an error
    refuse_non_finite(view, values, ceilings, ["a", "b"])
    values[1, 1, 0, 0] = np.inf
    with pytest.raises(HeadstatsError, match=r"^a of model 'm' is inf on data set 'd', input 's1' \(layer 1, "
                                             r"head 0, counted from 0\): its attention is finite there"):
        refuse_non_finite(view, values, ceilings, ["a", "b"])
