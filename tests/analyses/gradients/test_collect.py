"""Gradient importance (METHODS 2.1): planted gradients with hand-computed means, the masked-LM loss of a tiny
random BertForMaskedLM checked against a straight autograd computation, and the skip of a model without a loss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from headstats.analyses.gradients.collect import mask_positions, mean_abs_by_target, target_masks
from headstats.model.encoding import EncodedInput

DEMO = Path(__file__).resolve().parents[3] / "data" / "demo"


def test_means_by_target_by_hand():
    # one input, 4 positions ([CLS] x . [SEP]) and a padded 5th; one layer, one head
    grad = torch.zeros(1, 1, 1, 5, 5, dtype=torch.float64)
    grad[0, 0, 0, :4, :4] = torch.tensor([[1.0, -2.0, 3.0, 4.0]] * 4) * torch.tensor([[1.0], [1.0], [2.0], [2.0]])
    grad[0, 0, 0, :, 4] = 99.0  # a padded key: never counted
    ids = torch.tensor([[101, 7, 9, 102, 0]])
    real = torch.tensor([[True, True, True, True, False]])
    cls = torch.tensor([[True, False, False, False, False]])
    sep = torch.tensor([[False, False, False, True, False]])
    masks = target_masks(ids, real, cls, sep, [9])
    out = mean_abs_by_target(grad, real, masks)
    # rows scale 1, 1, 2, 2 (mean 1.5): |g| on [CLS] 1 * 1.5, on x 2 * 1.5, on "." 3 * 1.5, on [SEP] 4 * 1.5
    assert float(out["cls"]) == pytest.approx(1.5)
    assert float(out["other"]) == pytest.approx(3.0)
    assert float(out["punct"]) == pytest.approx(4.5)
    assert float(out["sep"]) == pytest.approx(6.0)


def test_mask_positions_are_seeded_by_input_and_skip_specials():
    n = 22
    special = np.zeros(n, bool)
    special[[0, n - 1]] = True
    item = EncodedInput(3, "s", np.arange(n), np.zeros(n, int), special, special & (np.arange(n) == 0),
                        special & (np.arange(n) == n - 1), np.zeros(n, int), False)
    first = mask_positions(item, seed=0)
    assert len(first) == 3 and not special[first].any()          # round(0.15 * 20) = 3
    assert first.tolist() == mask_positions(item, seed=0).tolist()


def tiny_mlm(folder: Path) -> Path:
    from transformers import BertConfig, BertForMaskedLM

    from conftest import build_tiny_bert

    build_tiny_bert(folder)  # tokenizer files and a config; the weights are replaced by an MLM model's
    config = BertConfig.from_pretrained(folder)
    torch.manual_seed(1)
    model = BertForMaskedLM(config)
    model.save_pretrained(folder)
    return folder


def run(tmp_path, model_dir, name="g"):
    from headstats.config.protocol import load_protocol
    from headstats.report.builder import build_report
    from headstats.study.run import run_study

    protocol = {"name": name, "models": [{"name": "tiny", "path": str(model_dir)}],
                "datasets": [{"name": "demo", "path": str(DEMO / "sentences.txt"), "limit": 6}],
                "scoring": {"roles": ["local"]}, "statistics": {"tau": 1.0, "sensitivity": False},
                "report": {"figures": {"formats": ["png"], "dpi": 72}},
                "analyses": ["gradients"], "seed": 5}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(protocol))
    return run_study(load_protocol(path), tmp_path / name, report=build_report)


def test_masked_lm_gradients_match_autograd(tmp_path):
    from transformers import BertForMaskedLM

    from headstats.inputs.readers import read_records
    from headstats.model.encoding import encode_records
    from headstats.model.loading import load_model

    folder = tiny_mlm(tmp_path / "mlm")
    result = run(tmp_path, folder)
    table = pd.read_csv(result.out / "gradients.csv")
    assert set(table.target) == {"cls", "sep", "punct", "other"} and (table.n[table.target == "other"] == 6).all()
    # straight: each input alone, its own masks, the mean |dL/dA| of layer 1, head 0 on "other" keys
    model = BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    tokenizer = load_model(str(folder)).tokenizer
    items = encode_records(read_records(DEMO / "sentences.txt", limit=6), tokenizer).inputs
    values = []
    for item in items:
        ids = torch.from_numpy(item.input_ids)[None].clone()
        positions = mask_positions(item, seed=5)
        labels = torch.full_like(ids, -100)
        labels[0, positions] = ids[0, positions]
        ids[0, positions] = tokenizer.mask_token_id
        out = model(input_ids=ids, labels=labels, output_attentions=True)   # HF's own MLM loss
        grad = torch.autograd.grad(out.loss, out.attentions[1])[0][0, 0].abs()
        other = ~item.special & ~np.isin(item.input_ids, [tokenizer.convert_tokens_to_ids(p) for p in ".,"])
        values.append(float(grad[:, torch.from_numpy(other)].mean()))
    row = table[(table.layer == 1) & (table["head"] == 0) & (table.target == "other")].iloc[0]
    assert row.mean_abs_grad == pytest.approx(np.mean(values), rel=1e-4)
    assert "Gradient importance" in (result.out / "report.md").read_text()


def test_a_model_without_a_loss_is_skipped_with_the_reason(tmp_path, tiny_model_dir):
    with pytest.warns(UserWarning, match="gradients: skipped"):
        result = run(tmp_path, tiny_model_dir, name="skip")
    skipped = pd.read_csv(result.out / "gradients_skipped.csv")
    assert "neither a fine-tuned classifier head nor a masked-LM head" in skipped.reason[0]
    assert not (result.out / "gradients.csv").exists()
    report = (result.out / "report.md").read_text()
    # said once, at the top, with where, why and the fix; the section points there
    assert report.count("**gradients** did not run (tiny on demo): the model has neither") == 1
    assert "Not run for tiny on demo" in report


def test_non_finite_gradients_stop_the_run_naming_the_input_layer_and_head(tmp_path, monkeypatch):
    from headstats.analyses.gradients import collect as gradients
    from headstats.errors import ModelError

    real = gradients.attention_gradients

    def planted(model, kind, input_ids, attention_mask, *args):
        grad, loss = real(model, kind, input_ids, attention_mask, *args)
        grad[0, 0, 1, 1, 1] = float("nan")  # the first input of every batch, layer 0, head 1, a real position
        return grad, loss

    monkeypatch.setattr(gradients, "attention_gradients", planted)
    with pytest.raises(ModelError, match=r"model 'tiny' gave non-finite attention gradients \(NaN or inf\) on data "
                                         r"set 'demo', input '\d+' \(layer 0, head 1, counted from 0; 1 of the batch's "
                                         r"6 inputs\): its weights are finite"):
        run(tmp_path, tiny_mlm(tmp_path / "mlm"))
    assert not (tmp_path / "g").exists()
