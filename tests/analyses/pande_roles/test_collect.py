"""The role-score collector: per-batch scores kept in data-set order as a MeasureArray, merged across shards."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from headstats.analyses.pande_roles.collect import RoleScores, ScoreState
from headstats.model.encoding import Arc, EncodedInput
from headstats.engine.batch import view_of
from headstats.engine.collector import Context
from headstats.errors import IncompatibleResultsError
from headstats.analyses.sieves import ScoreSettings

ROLES = ["delimiter_cls", "local", "syntactic"]


def make(index, arcs=()):
    return EncodedInput(index, f"id{index}", np.arange(4), np.zeros(4, int), np.array([1, 0, 0, 1], bool),
                        np.array([1, 0, 0, 0], bool), np.array([0, 0, 0, 1], bool), np.zeros(4, int), False,
                        arcs=list(arcs))


A = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.25, 0.25, 0.0], [0.0, 0.0, 0.0, 1.0], [0.25, 0.25, 0.25, 0.25]])
U = torch.full((4, 4), 0.25)


def collector():
    return RoleScores(Context(("m",), "d", 1, 1, {"roles": ROLES, "settings": ScoreSettings(window=1)}))


def test_batches_come_back_in_data_set_order_with_hand_computed_scores():
    c = collector()
    # batch 1: inputs 2 and 0 (length-sorted batches are not in file order); batch 2: input 1
    c.update(view_of(torch.stack([U, A])[:, None, None], [make(2), make(0, [Arc((1,), (2,), "nsubj")])]))
    c.update(view_of(A[None, None, None], [make(1)]))
    result = c.result()
    assert (result.model, result.dataset, result.measures) == ("m", "d", tuple(ROLES))
    assert list(result.sentence_ids) == ["id0", "id1", "id2"] and result.values.dtype == np.float32
    # planted map A (see test_scores): delimiter_cls 0.85; local w=1 (0.6 + 4/3 + 4/3 + 1) / 4; arc 1
    np.testing.assert_allclose(result.values[0, 0, 0], [0.85, (0.6 + 8 / 3 + 1) / 4, 1.0], rtol=1e-6)
    np.testing.assert_allclose(result.values[1, 0, 0, :2], result.values[0, 0, 0, :2])
    assert np.isnan(result.values[1, 0, 0, 2]) and np.isnan(result.values[2, 0, 0, 2])  # no arc: no part
    np.testing.assert_allclose(result.values[2, 0, 0, :2], [1.0, 1.0])  # uniform attention scores 1
    assert c.participation() == {"delimiter_cls": 3, "local": 3, "syntactic": 1}
    assert c.tables() == {}  # no table of its own: the study's role tables are made from the scores


def test_merge_of_shards():
    one, two = collector(), collector()
    one.update(view_of(A[None, None, None], [make(1)]))
    two.update(view_of(torch.stack([U, A])[:, None, None], [make(2), make(0)]))
    merged = RoleScores.merge([one.state(), two.state()])
    assert merged.index.tolist() == [0, 1, 2] and list(merged.sentence_ids) == ["id0", "id1", "id2"]
    fresh = collector()
    fresh.load_state(merged)
    np.testing.assert_allclose(fresh.result().values[:, 0, 0, 0], [0.85, 0.85, 1.0], rtol=1e-6)
    with pytest.raises(IncompatibleResultsError, match="twice"):
        RoleScores.merge([merged, one.state()])
    other = ScoreState.empty(1, 1, ["local"])
    with pytest.raises(IncompatibleResultsError, match="same options"):
        RoleScores.merge([merged, other])


def test_empty_collector():
    result = collector().result()
    assert result.values.shape == (0, 1, 1, 3) and result.n_inputs == 0


def test_ceilings_travel_with_the_scores_in_data_set_order(tiny_model):
    from headstats.inputs.records import Record
    from headstats.study.scoring import score_records

    records = [Record("a", "the cat sat on the mat"), Record("b", "a dog ran"),
               Record("c", "the old man saw a big red car today")]
    run = score_records(tiny_model, records, dataset="d", roles=["local", "delimiter_cls"], batch_size=2)
    array = run.array
    assert array.ceilings.shape == (3, 2)
    for k, rec in enumerate(records):
        n = len(tiny_model.tokenizer(rec.text_a)["input_ids"])
        local = np.mean([n / len([j for j in range(n) if abs(i - j) <= 2]) for i in range(n)])
        assert array.ceilings[k, 0] == pytest.approx(local, rel=1e-6)
        assert array.ceilings[k, 1] == pytest.approx(n)  # one [CLS]: n / 1
    assert np.all(array.values[..., 0] <= array.ceilings[:, None, None, 0] + 1e-5)
    assert array.select(["delimiter_cls"]).ceilings.shape == (3, 1)


def test_the_plan_scores_the_applicable_roles_once_per_measure_then_the_gate_on_parsed_data():
    """``plan(scoring, context)``: per measure (the primary first), model and data set a role-score job with the
    roles that apply there (``block`` needs pairs, arc roles parses) and those left out with the reason; then the
    offset gate's control on the data sets that keep an arc role, only with statistics whose gate is on."""
    from headstats.analyses import PlanContext
    from headstats.analyses.pande_roles.collect import plan
    from headstats.config.protocol import StatisticsOptions

    scoring = ScoreSettings(roles=["local", "block", "syntactic"], measures=["weights", "norm"])
    facts = {"pairs": {"has_pairs": True, "has_parses": False}, "ud": {"has_pairs": False, "has_parses": True}}
    context = PlanContext(("a", "b"), ("pairs", "ud"), seed=3,
                          extra={"datasets": facts, "statistics": StatisticsOptions()})
    jobs = plan(scoring, context)
    scores = [j for j in jobs if j.name == "pande_roles"]
    assert [(j.options.get("measure"), j.models, j.dataset) for j in scores] == [
        (m, (model,), d) for m in (None, "norm") for model in ("a", "b") for d in ("pairs", "ud")]
    by_data = {j.dataset: j.options for j in scores}
    assert by_data["pairs"]["roles"] == ["local", "block"] and by_data["ud"]["roles"] == ["local", "syntactic"]
    assert by_data["pairs"]["not_applicable"] == {"syntactic": "the data set has no dependency parses"}
    assert by_data["ud"]["not_applicable"] == {"block": "the data set has no sentence pairs"}
    gate = [j for j in jobs if j.name != "pande_roles"]
    assert [(j.name, j.options.get("measure"), j.models, j.dataset, j.seed) for j in gate] == [
        ("offset_gate", m, (model,), "ud", 3) for m in (None, "norm") for model in ("a", "b")]
    alone = plan(scoring, PlanContext(("a",), ("ud",), extra={"datasets": facts, "statistics": None}))
    assert alone == [j for j in scores if j.models == ("a",) and j.dataset == "ud"]  # scores alone: no gate
    off = StatisticsOptions(offset_gate=False)
    assert all(j.name == "pande_roles" for j in plan(scoring, PlanContext(
        ("a",), ("ud",), extra={"datasets": facts, "statistics": off})))


def test_input_counts_are_the_roles_left_out_and_the_participation():
    c = RoleScores(Context(("m",), "d", 1, 1, {"roles": ["local"], "settings": ScoreSettings(window=1),
                                              "not_applicable": {"block": "the data set has no sentence pairs"}}))
    c.update(view_of(torch.stack([U, A])[:, None, None], [make(0), make(1)]))
    assert c.input_counts() == {"roles_not_applicable": {"block": "the data set has no sentence pairs"},
                                "participation": {"local": 2}}
