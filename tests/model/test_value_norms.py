"""Norms of what each head passes on (METHODS 6.1), checked per family against the formula computed by hand from
the model's own weights and hidden states with plain torch."""

from __future__ import annotations

import pytest
import torch
import transformers

from headstats.errors import ModelError
from headstats.model.value_norms import (
    ATTENTION_PARTS, capture_value_norms, norm_weighted, value_projections,
)

HIDDEN, HEADS, LAYERS = 16, 4, 3
SIZES = dict(vocab_size=60, hidden_size=HIDDEN, num_attention_heads=HEADS, num_hidden_layers=LAYERS,
             intermediate_size=32, max_position_embeddings=64)

FAMILIES = {
    "bert": (transformers.BertConfig, transformers.BertModel, SIZES),
    "roberta": (transformers.RobertaConfig, transformers.RobertaModel, SIZES),
    "xlm-roberta": (transformers.XLMRobertaConfig, transformers.XLMRobertaModel, SIZES),
    "camembert": (transformers.CamembertConfig, transformers.CamembertModel, SIZES),
    "electra": (transformers.ElectraConfig, transformers.ElectraModel, {**SIZES, "embedding_size": 8}),
    "albert": (transformers.AlbertConfig, transformers.AlbertModel, {**SIZES, "embedding_size": 8}),
    "distilbert": (transformers.DistilBertConfig, transformers.DistilBertModel,
                   dict(vocab_size=60, dim=HIDDEN, n_heads=HEADS, n_layers=LAYERS, hidden_dim=32,
                        max_position_embeddings=64)),
}


def _model(family: str):
    config_class, model_class, sizes = FAMILIES[family]
    torch.manual_seed(0)
    config = config_class(**sizes, attn_implementation="eager")
    model = model_class(config).eval()
    for parameter in model.parameters():  # biases too: the value bias must count, the output bias must not
        torch.nn.init.normal_(parameter, std=0.3)
    return model


def _by_hand(model, hidden_states, family: str) -> torch.Tensor:
    """``||(x_j W_V^h + b_V^h) W_O^h||`` for every layer, head and position: (B, L, H, N)."""
    layers = []
    modules = [m for n, m in model.named_modules() if n.rpartition(".")[2] == ATTENTION_PARTS[family][0]]
    for layer in range(LAYERS):
        attention = modules[0] if family == "albert" else modules[layer]  # ALBERT: one module, shared
        _, value_path, output_path = ATTENTION_PARTS[family]
        value, output = attention.get_submodule(value_path), attention.get_submodule(output_path)
        x = hidden_states[layer]
        v = x @ value.weight.T + value.bias  # (B, N, H d)
        d = HIDDEN // HEADS
        per_head = []
        for h in range(HEADS):
            f = v[..., h * d:(h + 1) * d] @ output.weight[:, h * d:(h + 1) * d].T  # (B, N, d_model)
            per_head.append(f.norm(dim=-1))
        layers.append(torch.stack(per_head, dim=1))
    return torch.stack(layers, dim=1)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_norms_equal_the_formula_from_the_weights(family):
    model = _model(family)
    ids = torch.randint(5, 60, (2, 7))
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0  # a padded input
    with torch.no_grad(), capture_value_norms(model, HEADS) as norms:
        out = model(input_ids=ids, attention_mask=mask, output_attentions=True, output_hidden_states=True)
    assert len(norms) == LAYERS
    captured = torch.stack(norms, dim=1)
    expected = _by_hand(model, out.hidden_states, family)
    torch.testing.assert_close(captured, expected, rtol=1e-5, atol=1e-6)
    assert not any(value._forward_hooks for value, _ in value_projections(model))  # ours are gone


def test_norm_weighted_rows_renormalise_to_one_and_follow_the_formula():
    attention = torch.tensor([[0.5, 0.25, 0.25, 0.0], [0.1, 0.2, 0.3, 0.4]])[None, None, None]
    norms = torch.tensor([2.0, 1.0, 4.0, 3.0])[None, None, None]
    got = norm_weighted(attention, norms)
    # row 1: 0.5*2, 0.25*1, 0.25*4, 0 = 1, 0.25, 1, 0 over 2.25
    torch.testing.assert_close(got[0, 0, 0, 0], torch.tensor([1 / 2.25, 0.25 / 2.25, 1 / 2.25, 0.0]))
    torch.testing.assert_close(got[0, 0, 0, 1], torch.tensor([0.2, 0.2, 1.2, 1.2]) / 2.8)
    zero = norm_weighted(torch.zeros(1, 1, 1, 2, 2), torch.ones(1, 1, 1, 2))
    assert torch.equal(zero, torch.zeros(1, 1, 1, 2, 2))


def test_a_family_without_known_projections_is_one_clear_error():
    model = _model("bert")
    model.config.model_type = "gpt2"
    with pytest.raises(ModelError, match="use measure 'weights'"):
        value_projections(model)
