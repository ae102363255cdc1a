"""Head importance (issue 25): a tiny classifier built from a config in which one head carries every input-dependent
signal to [CLS] is found, and only it, by ablation and by Michel et al.'s gradient; the gradient equals a float64
central difference; mean and zero ablation part on a head whose output is constant; batched ablations equal one
head at a time; a model without a task head gets the task-free measure and a note."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import build_tiny_bert

from headstats.analyses.importance.collect import ImportanceCollector, pruning_gates, single_head_gates, split_halves
from headstats.engine.runner import Job, Runner
from headstats.inputs.records import Record
from headstats.model.loading import load_model
from headstats.model.task_heads import HeadPatch
from headstats.stats.hypotheses import test_measures

KEEP = (1, 0)
WORDS = "the cat sat on the mat . a dog ran in the house . he saw a big red car".split()


def plant_classifier(base: Path, out: Path, texts, *, keep=KEEP, heads=2, hidden=16, constant=False) -> list[int]:
    """Save a BertForSequenceClassification in which every head but ``keep`` has a zero output projection, so
    that everything at [CLS] that depends on the input passes through ``keep``; the classifier reads the first
    principal direction of the pooled [CLS] vectors of ``texts``. Returns the model's predictions on ``texts``.
    ``constant``: the head's values are a constant (zero value weights, a non-zero value bias)."""
    from transformers import BertForSequenceClassification, BertTokenizerFast

    torch.manual_seed(0)
    m = BertForSequenceClassification.from_pretrained(base, num_labels=2, id2label={0: "0", 1: "1"},
                                                      label2id={"0": 0, "1": 1})
    dh = hidden // heads
    with torch.no_grad():
        for l, layer in enumerate(m.bert.encoder.layer):
            W = layer.attention.output.dense.weight
            for h in range(heads):
                if (l, h) != keep:
                    W[:, h * dh:(h + 1) * dh] = 0
                else:
                    W[:, h * dh:(h + 1) * dh] *= 20
                    if constant:
                        layer.attention.self.value.weight[h * dh:(h + 1) * dh] = 0
                        layer.attention.self.value.bias[h * dh:(h + 1) * dh] = torch.linspace(-1, 1, dh)
        m.bert.pooler.dense.weight.copy_(torch.eye(hidden))
        m.bert.pooler.dense.bias.zero_()
        m.eval()
        enc = BertTokenizerFast.from_pretrained(base)(list(texts), padding=True, return_tensors="pt")
        pooled = m.bert(**enc).pooler_output.double()
        centred = pooled - pooled.mean(0)
        pc = torch.linalg.svd(centred, full_matrices=False).Vh[0]
        spread = (centred @ pc).std()
        scale = 8.0 / spread if spread > 1e-6 else torch.tensor(1.0, dtype=torch.float64)
        m.classifier.weight.zero_()
        m.classifier.bias.zero_()
        m.classifier.weight[1] = (scale * pc).float()
        m.classifier.bias[1] = float(-(scale * pc) @ pooled.mean(0))
        pred = m(**enc).logits.argmax(-1).tolist()
    m.save_pretrained(out)
    for f in base.iterdir():
        if "token" in f.name or f.name == "vocab.txt":
            shutil.copy(f, out)
    return pred


def texts(n: int = 40, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 10)))) for _ in range(n)]


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_base"))


@pytest.fixture(scope="module")
def planted(base_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("planted")
    sentences = texts()
    pred = plant_classifier(base_dir, out, sentences)
    records = [Record(str(i), t, label=str(p)) for i, (t, p) in enumerate(zip(sentences, pred))]
    return out, records, pred


def collect(folder: Path, records, **options) -> ImportanceCollector:
    job = Job(ImportanceCollector, ("m",), "d", {"options": options}, name="importance")

    def load(name):
        loaded = load_model(str(folder))
        loaded.name = name
        return loaded

    Runner(batch_size=16).run(load, {"d": records}, [job])
    return job.collector


@pytest.mark.parametrize("ablation", ["mean", "zero"])
def test_planted_head_and_only_it_matters(planted, ablation):
    folder, records, pred = planted
    assert 0 < sum(pred) < len(pred)  # the planted classifier's predictions (the gold labels) vary
    collector = collect(folder, records, ablation=ablation)
    heads = collector.tables()["importance"].set_index(["layer", "head"])
    assert (heads["ablation"] == ablation).all() and (heads["task"] == "classifier").all()
    assert heads.loc[KEEP, "base_accuracy"] == 1.0
    others = heads.drop(index=[KEEP])
    # a head whose output projection is zero changes nothing: effect and gradient are 0 (float32 noise)
    assert others["mean_delta_loss"].abs().max() < 1e-5
    assert others["mean_gradient"].abs().max() < 1e-6
    assert heads.loc[KEEP, "mean_delta_loss"] > 0.3
    assert heads.loc[KEEP, "mean_gradient"] > 1e-3
    assert heads.loc[KEEP, "mean_delta_correct"] < 0
    tests = test_measures(collector.result(), collector.hypotheses(), test="t", correction="holm")
    assert tests.loc[tests["reject"].astype(bool), ["layer", "head"]].apply(tuple, axis=1).tolist() == [KEEP]


def test_gradient_equals_central_difference(planted):
    folder, records, _ = planted
    collector = collect(folder, records[:4])
    grad = collector.result().values[..., list(collector.result().measures).index("gradient")]
    task = load_model(str(folder), head="task")
    model = task.model.double()
    try:
        enc = task.tokenizer([r.text_a for r in records[:4]], padding=True, return_tensors="pt")
        target = torch.tensor([int(r.label) for r in records[:4]])
        eps = 1e-5

        def loss(l, h, value):
            gates = torch.ones((4, 2, 2), dtype=torch.float64)
            gates[:, l, h] = value
            with torch.no_grad(), HeadPatch(model, 2, gates=gates):
                logits = model(**enc).logits
            return torch.nn.functional.cross_entropy(logits, target, reduction="none").numpy()

        for l, h in [(0, 0), (1, 0), (1, 1)]:
            numeric = np.abs((loss(l, h, 1 + eps) - loss(l, h, 1 - eps)) / (2 * eps))
            order = np.argsort([int(r.sentence_id) for r in records[:4]])
            np.testing.assert_allclose(grad[:, l, h], numeric[order], rtol=2e-3, atol=1e-5)  # float32 pass: ~1e-6 of the largest gradient (~10)
    finally:
        task.model.float()


def test_mean_and_zero_ablation_part_on_a_constant_head(base_dir, tmp_path):
    sentences = texts(12, seed=1)
    pred = plant_classifier(base_dir, tmp_path / "constant", sentences, constant=True)
    records = [Record(str(i), t, label=str(p)) for i, (t, p) in enumerate(zip(sentences, pred))]
    mean = collect(tmp_path / "constant", records, ablation="mean").tables()["importance"].set_index(["layer", "head"])
    zero = collect(tmp_path / "constant", records, ablation="zero").tables()["importance"].set_index(["layer", "head"])
    # the head's output is its value bias at every position: its mean is itself, so mean ablation changes nothing
    assert abs(mean.loc[KEEP, "mean_delta_loss"]) < 1e-5
    # zero ablation of a constant head is the model with that head's value bias set to 0: computed directly
    from transformers import BertForSequenceClassification, BertTokenizerFast

    model = BertForSequenceClassification.from_pretrained(tmp_path / "constant").eval()
    enc = BertTokenizerFast.from_pretrained(tmp_path / "constant")(sentences, padding=True, return_tensors="pt")
    target = torch.tensor(pred)
    with torch.no_grad():
        before = torch.nn.functional.cross_entropy(model(**enc).logits, target, reduction="none")
        model.bert.encoder.layer[KEEP[0]].attention.self.value.bias[:8] = 0
        after = torch.nn.functional.cross_entropy(model(**enc).logits, target, reduction="none")
    expected = float((after - before).double().mean())
    assert abs(expected) > 1e-3
    assert zero.loc[KEEP, "mean_delta_loss"] == pytest.approx(expected, rel=1e-3, abs=1e-6)


def test_batched_ablation_equals_one_head_at_a_time(planted):
    folder, records, _ = planted
    some = records[:5]
    collector = collect(folder, some, ablation="zero")
    values = collector.result().values
    task = load_model(str(folder), head="task")
    target = torch.tensor([int(r.label) for r in some])
    order = np.argsort([int(r.sentence_id) for r in some])
    for l in range(2):
        for h in range(2):
            for b, record in enumerate(some):
                enc = task.tokenizer([record.text_a], return_tensors="pt")
                gates = torch.ones((1, 2, 2))
                with torch.no_grad():
                    base = torch.nn.functional.cross_entropy(task.model(**enc).logits, target[b:b + 1])
                    gates[0, l, h] = 0
                    with HeadPatch(task.model, 2, gates=gates):
                        ablated = torch.nn.functional.cross_entropy(task.model(**enc).logits, target[b:b + 1])
                row = int(np.flatnonzero(order == b)[0])
                assert values[row, l, h, 0] == pytest.approx(float(ablated - base), abs=2e-4)


def test_model_without_task_head_gets_the_task_free_measure(base_dir):
    records = [Record(str(i), t) for i, t in enumerate(texts(6))]
    with pytest.warns(UserWarning, match="task-free"):
        collector = collect(base_dir, records)
    tables = collector.tables()
    notes = tables["importance_notes"]
    assert notes["status"].tolist() == ["task-free"] and "cosine distance" in notes["reason"].iat[0]
    heads = tables["importance"]
    assert (heads["importance_measure"] == "cosine_distance").all() and heads["mean_delta_loss"].isna().all()
    assert (heads["importance"] > 0).all() and (heads["importance"] <= 2).all()
    assert "importance_pruning_inputs" not in tables


def test_pruning_gates_and_halves_by_hand():
    gates = pruning_gates(np.array([3, 0, 2, 1]), [0.0, 0.25, 0.5, 0.75], 2, 2)
    assert gates.reshape(4, 4).tolist() == [[1, 1, 1, 1], [1, 1, 1, 0], [0, 1, 1, 0], [0, 1, 0, 0]]
    assert single_head_gates(1, 2).tolist() == [[[0, 1]], [[1, 0]]]
    half = split_halves(np.array([7, 3, 5, 1, 9]), 0)
    assert sorted(half.tolist()) == [0, 0, 0, 1, 1]
    assert half.tolist() == split_halves(np.array([7, 3, 5, 1, 9]), 0).tolist()


def test_pruning_removes_the_planted_head_last(planted):
    folder, records, _ = planted
    rows = collect(folder, records).tables()["importance_pruning_inputs"]
    acc = rows.groupby("share")["correct"].mean()
    # 4 heads: shares up to 0.6 remove at most round(0.6 * 4) = 2 of the three idle heads; 0.9 removes all but one
    assert (acc[acc.index <= 0.6] == 1.0).all()


def test_validate_refuses_a_model_whose_heads_cannot_be_ablated(tmp_path):
    import json

    from headstats.config.protocol import Protocol
    from headstats.errors import ProtocolError
    from headstats.study.preflight import check_ablation

    (tmp_path / "albert").mkdir()
    (tmp_path / "albert" / "config.json").write_text(json.dumps({"model_type": "albert"}))
    data = tmp_path / "d.txt"
    data.write_text("a sentence\n")
    protocol = Protocol.model_validate({"models": [{"name": "a", "path": str(tmp_path / "albert")}],
                                        "datasets": [{"name": "d", "path": str(data)}], "analyses": ["importance"]})
    with pytest.raises(ProtocolError, match="cannot ablate the heads of model 'a': ALBERT shares"):
        check_ablation(protocol)
    check_ablation(protocol.model_copy(update={"analyses": []}))  # without the analysis: nothing to refuse
