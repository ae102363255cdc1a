"""Task heads and head patches: the loss a checkpoint offers, the models whose heads cannot be ablated, a patch with
every gate at 1 changes nothing, and the recorded sums are the heads' outputs summed by hand."""

from __future__ import annotations

import pytest
import torch

from headstats.model.task_heads import HeadPatch, ablation_support, output_projections, task_head


def test_task_head_from_architectures():
    assert task_head(["BertForSequenceClassification"])[0] == "classifier"
    assert task_head(["RobertaForMaskedLM"])[0] == "masked_lm"
    assert task_head(["BertForPreTraining"])[0] == "masked_lm"
    kind, reason = task_head(["BertModel"])
    assert kind is None and "headstats finetune" in reason


def test_ablation_support_refuses_albert_with_the_reason():
    assert ablation_support("bert") is None and ablation_support("distilbert") is None
    assert "shares one layer's attention module" in ablation_support("albert")
    assert "does not know" in ablation_support("gpt2")


@pytest.fixture(scope="module")
def tiny():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=16, attn_implementation="eager")
    return BertModel(config).eval()


def test_patch_with_open_gates_changes_nothing_and_records_head_outputs(tiny):
    ids = torch.tensor([[1, 5, 7, 2, 0], [1, 9, 2, 0, 0]])
    mask = (ids > 0).long()
    with torch.no_grad():
        plain = tiny(input_ids=ids, attention_mask=mask).last_hidden_state
        seen = {}
        handle = output_projections(tiny)[1].register_forward_pre_hook(lambda m, a: seen.setdefault("z", a[0]))
        with HeadPatch(tiny, 2, gates=torch.ones(2, 2, 2), record=mask.bool()) as patch:
            patched = tiny(input_ids=ids, attention_mask=mask).last_hidden_state
        handle.remove()
    torch.testing.assert_close(patched, plain)
    z = seen["z"].double().view(2, 5, 2, 4)
    by_hand = (z * mask.double()[..., None, None]).sum((0, 1))
    torch.testing.assert_close(patch.sums[1], by_hand)
    assert patch.count == int(mask.sum())


def test_patch_replaces_a_closed_head_by_its_replacement(tiny):
    ids = torch.tensor([[1, 5, 7, 2]])
    gates = torch.ones(1, 2, 2)
    gates[0, 0, 1] = 0
    replacement = torch.zeros(2, 2, 4)
    replacement[0, 1] = torch.arange(4.0)
    seen = {}
    with torch.no_grad(), HeadPatch(tiny, 2, gates=gates, replacement=replacement):
        handle = output_projections(tiny)[0].register_forward_hook(lambda m, a, o: seen.setdefault("x", a[0]))
        tiny(input_ids=ids)
        handle.remove()
    x = seen["x"].view(1, 4, 2, 4)
    torch.testing.assert_close(x[0, :, 1], torch.arange(4.0).expand(4, 4))
