"""The runner: models grouped by pair collectors, each loaded once, each batch through each model once."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from conftest import build_tiny_bert
from headstats.analyses.role_scores import RoleScores
from headstats.analyses.similarity import AttentionSimilarity
from headstats.analyses.special_mass import SpecialMass
from headstats.errors import IncompatibleResultsError
from headstats.inputs.records import Record
from headstats.engine.runner import Job, Runner, build_collector, feed, plan_groups
from headstats.study.scoring import score_records

TEXTS = ["the cat sat", "a dog ran in the house", "the cat", "the old man saw a big red car", "it was",
         "she likes the book", "he read it yesterday", "big red car", "the mouse ran", "we saw it", "you read"]
RECORDS = [Record(f"s{i}", t) for i, t in enumerate(TEXTS)] + [Record("p0", "the cat sat", "a dog ran")]
ROLES = ["local", "delimiter", "delimiter_cls", "block"]


def test_plan_groups():
    assert plan_groups(["a", "b", "c", "d"], [("a", "c"), ("c", "d")]) == [("a", "c", "d"), ("b",)]
    assert plan_groups(["a", "b"], []) == [("a",), ("b",)]
    assert plan_groups(["a", "b", "c"], [("c", "b")]) == [("a",), ("b", "c")]
    with pytest.raises(ValueError, match="'x'"):
        plan_groups(["a"], [("a", "x")])


@pytest.fixture(scope="module")
def two_models(tiny_model, tmp_path_factory):
    from headstats.model.loading import load_model

    other = load_model(str(build_tiny_bert(tmp_path_factory.mktemp("other"), seed=1)))
    tiny_model.name, other.name = "base", "other"
    yield {"base": tiny_model, "other": other}
    tiny_model.name = str(tiny_model.provenance["model"])


def counting(monkeypatch):
    from headstats.engine import forward as extraction

    forwards: Counter = Counter()
    real = extraction.forward_attentions

    def forward(loaded, batch):
        forwards[loaded.name] += 1
        return real(loaded, batch)

    monkeypatch.setattr(extraction, "forward_attentions", forward)
    return forwards


def comparison_jobs():
    jobs = [Job(RoleScores, (m,), "d", {"roles": ROLES}, name="role_scores") for m in ("base", "other")]
    jobs += [Job(SpecialMass, (m,), "d", name="special_mass") for m in ("base", "other")]
    jobs.append(Job(AttentionSimilarity, ("base", "other"), "d", name="similarity"))
    return jobs


def test_one_load_per_model_and_one_forward_per_model_and_batch(two_models, monkeypatch):
    forwards = counting(monkeypatch)
    loads: Counter = Counter()

    def load(name):
        loads[name] += 1
        return two_models[name]

    jobs = comparison_jobs()
    counts = Runner(batch_size=5).run(load, {"d": RECORDS}, jobs)
    assert loads == {"base": 1, "other": 1}
    assert forwards == {"base": 3, "other": 3}  # 12 inputs in batches of 5
    assert counts[("base", "d")]["n_scored"] == counts[("other", "d")]["n_scored"] == 12
    similarity = jobs[-1].collector.tables()["similarity"]
    assert (similarity["n"] == 12).all() and len(similarity) == 4
    # the engine's scores are those of scoring each model alone, on the same batches
    for job in jobs[:2]:
        alone = score_records(two_models[job.models[0]], RECORDS, dataset="d", roles=ROLES, batch_size=5).array
        got = job.collector.result()
        assert list(got.sentence_ids) == [r.sentence_id for r in RECORDS]
        assert got.provenance["model"]["vocab_sha256"] == two_models[job.models[0]].provenance["vocab_sha256"]
        assert got.provenance["roles"] == ROLES and got.provenance["settings"]["window"] == 2
        np.testing.assert_array_equal(got.values, alone.values)


def test_chunks_give_the_same_scores(two_models):
    runs = {}
    for chunk in (3, 100):
        job = Job(RoleScores, ("base",), "d", {"roles": ROLES})
        counts = Runner(batch_size=4, chunk_size=chunk).run(two_models.get, {"d": RECORDS + [Record("e", "")]}, [job])
        runs[chunk] = (job.collector.result(), counts[("base", "d")])
    (a, ca), (b, cb) = runs[3], runs[100]
    assert list(a.sentence_ids) == list(b.sentence_ids) == [r.sentence_id for r in RECORDS]
    np.testing.assert_allclose(a.values, b.values, rtol=1e-5, equal_nan=True)
    assert ca == cb and ca["skipped"] == {"empty": 1} and ca["n_records"] == 13


def test_shards_merge_into_the_whole(two_models):
    from headstats.model.encoding import encode_records

    inputs = encode_records(RECORDS, two_models["base"].tokenizer).inputs
    jobs = [Job(RoleScores, ("base",), "d", {"roles": ROLES}) for _ in range(3)]
    mass = [Job(SpecialMass, ("base",), "d") for _ in range(3)]
    for job in jobs + mass:
        job.collector = build_collector(job, two_models)
    feed(two_models, inputs, [jobs[0], mass[0]], dataset="d", batch_size=4)
    feed(two_models, inputs[7:], [jobs[1], mass[1]], dataset="d", batch_size=4)
    feed(two_models, inputs[:7], [jobs[2], mass[2]], dataset="d", batch_size=4)
    merged = RoleScores.merge([jobs[1].collector.state(), jobs[2].collector.state()])
    fresh = RoleScores(jobs[0].collector.context)
    fresh.load_state(merged)
    np.testing.assert_allclose(fresh.result().values, jobs[0].collector.result().values, rtol=1e-5, equal_nan=True)
    assert list(fresh.result().sentence_ids) == list(jobs[0].collector.result().sentence_ids)
    whole = mass[0].collector.tables()["special_mass"]
    joined = SpecialMass(mass[0].collector.context)
    joined.load_state(SpecialMass.merge([mass[1].collector.state(), mass[2].collector.state()]))
    np.testing.assert_allclose(joined.tables()["special_mass"]["mass_mean"], whole["mass_mean"], rtol=1e-6)
    np.testing.assert_allclose(joined.tables()["special_mass"]["mass_sd"], whole["mass_sd"], rtol=1e-5)
    with pytest.raises(IncompatibleResultsError, match="twice"):
        RoleScores.merge([jobs[0].collector.state(), jobs[1].collector.state()])


def test_models_of_a_group_must_share_a_tokenizer(two_models, tmp_path):
    from headstats.model.loading import load_model

    odd = build_tiny_bert(tmp_path / "odd", seed=2)
    vocab = (odd / "vocab.txt").read_text().splitlines()
    vocab[vocab.index("book")] = "zebra"  # same size as the model's embeddings, one word different
    (odd / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (odd / "tokenizer.json").unlink()
    models = {**two_models, "odd": load_model(str(odd))}
    models["odd"].name = "odd"
    job = Job(AttentionSimilarity, ("base", "odd"), "d")
    with pytest.raises(IncompatibleResultsError, match="different tokenizers"):
        Runner().run(models.get, {"d": RECORDS}, [job])


def test_jobs_are_checked(two_models):
    with pytest.raises(ValueError, match="not among"):
        Runner().run(two_models.get, {"d": RECORDS}, [Job(SpecialMass, ("base",), "nope")])
    with pytest.raises(ValueError, match="one or two models"):
        Job(SpecialMass, ("a", "b", "c"), "d")
    with pytest.raises(ValueError, match="pair collector"):
        build_collector(Job(AttentionSimilarity, ("base",), "d"), two_models)
