"""Ablation batches, run by the runner: a removed head is the model with that head's values set to zero."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from headstats.engine.ablation import AblationBatch, run_ablation, run_ablations
from headstats.model.loading import load_model


def _pooled(result, n):
    return {"first": result.last_hidden_state[:, 1, 0], "second": result.last_hidden_state[:, 2, 3]}


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    loaded = load_model(str(tiny_model_dir))
    enc = loaded.tokenizer(["the dog ran", "a cat sat down"], padding=True, return_tensors="pt")
    return loaded.model, {k: v for k, v in enc.items()}


def _zeroed(model, enc, layer, head, d=8):
    """The model with head (layer, head)'s value projection set to zero: its output is then 0 (zero ablation)."""
    value = model.encoder.layer[layer].attention.self.value
    saved = value.weight.detach().clone(), value.bias.detach().clone()
    with torch.no_grad():
        value.weight[head * d:(head + 1) * d] = 0
        value.bias[head * d:(head + 1) * d] = 0
        out = model(**enc).last_hidden_state
        value.weight.copy_(saved[0])
        value.bias.copy_(saved[1])
    return out


def test_a_zero_gate_is_the_head_with_zero_values_and_passes_are_cut_by_max_tokens(tiny):
    model, enc = tiny
    B, T = enc["input_ids"].shape
    gates = np.ones((4, B, 2, 2), np.float32)  # pattern k removes head k (row-major), for both inputs
    for k in range(4):
        gates[k, :, k // 2, k % 2] = 0
    batch = AblationBatch(model, enc, gates, _pooled, max_tokens=3 * B * T)
    assert batch.copies_per_pass() == 3  # floor(floor(3 B T / T) / B)
    with torch.no_grad():
        got, passes = run_ablation(batch, n_heads=2)
    assert passes == 2 and got["first"].shape == (B, 4)
    for k in range(4):
        expected = _zeroed(model, enc, k // 2, k % 2)
        np.testing.assert_allclose(got["first"][:, k], expected[:, 1, 0].numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["second"][:, k], expected[:, 2, 3].numpy(), rtol=1e-5, atol=1e-6)


def test_a_bytes_bound_caps_the_copies_of_a_pass():
    batch = AblationBatch(None, {"input_ids": torch.zeros((2, 5))}, np.ones((8, 2, 1, 1)), _pooled,
                          max_tokens=100, max_bytes=1000, bytes_per_sequence=300)
    assert batch.copies_per_pass() == 1  # min(100 // 5, 1000 // 300) = 3 sequences, 3 // 2 = 1 copy
    assert AblationBatch(None, {"input_ids": torch.zeros((2, 5))}, np.ones((8, 2, 1, 1)), _pooled,
                         max_tokens=100).copies_per_pass() == 10


def test_run_ablations_sends_each_result_back_without_gradients(tiny):
    model, enc = tiny
    B = enc["input_ids"].shape[0]
    seen = []

    class Removing:
        context = SimpleNamespace(n_heads=2)

        def ablations(self):
            for k in range(2):
                gates = np.ones((1, B, 2, 2), np.float32)
                gates[0, :, 0, k] = 0
                seen.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
                result = yield AblationBatch(model, enc, gates, _pooled)
                seen.append(result["first"][:, 0])

    with torch.inference_mode():  # as the runner's attention pass leaves it
        passes = run_ablations(Removing())
    assert passes == 2
    assert seen[0] == (False, False) and seen[2] == (False, False)
    for k, got in enumerate(seen[1::2]):
        np.testing.assert_allclose(got, _zeroed(model, enc, 0, k)[:, 1, 0].numpy(), rtol=1e-5, atol=1e-6)
