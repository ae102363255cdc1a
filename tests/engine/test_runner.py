"""The runner: models grouped by pair collectors, each loaded once, each batch through each model once."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from conftest import build_tiny_bert
from headstats.analyses.finetune_comparison.collect import AttentionSimilarity, SpecialMass
from headstats.analyses.pande_roles.collect import RoleScores
from headstats.engine.collector import Collector
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
    for name in ("forward_attentions", "forward_fused"):  # transformers' eager path, or the fused one
        def forward(*args, real=getattr(extraction, name), **kwargs):
            forwards[args[0].name] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(extraction, name, forward)
    return forwards


def comparison_jobs():
    jobs = [Job(RoleScores, (m,), "d", {"roles": ROLES}, name="pande_roles") for m in ("base", "other")]
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
    # the engine's scores are those of scoring each model alone, on the same batches: the same bytes (the role
    # scores take the same map-free path beside the pair collector, whose maps the same fused pass makes)
    for job in jobs[:2]:
        alone = score_records(two_models[job.models[0]], RECORDS, dataset="d", roles=ROLES, batch_size=5).array
        got = job.collector.result()
        assert list(got.sentence_ids) == [r.sentence_id for r in RECORDS]
        assert got.provenance["model"]["vocab_sha256"] == two_models[job.models[0]].provenance["vocab_sha256"]
        assert got.provenance["roles"] == ROLES and got.provenance["settings"]["window"] == 2
        assert got.values.tobytes() == alone.values.tobytes()


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



def test_a_model_alone_is_not_fingerprinted_for_each_run(two_models, monkeypatch):
    """The tokenizer check compares models that share batches; a model alone has nothing to be compared with, so
    a run (each ``hs.score`` call) does not pay for hashing its vocabulary (about 60 ms for BERT's)."""
    import headstats.model.tokenizers as tokenizers

    fingerprinted = []
    real = tokenizers.tokenizer_fingerprint
    monkeypatch.setattr(tokenizers, "tokenizer_fingerprint", lambda t: fingerprinted.append(t) or real(t))
    Runner().run(two_models.get, {"d": RECORDS}, [Job(RoleScores, ("base",), "d", {"roles": ["local"]})])
    assert fingerprinted == []
    Runner().run(two_models.get, {"d": RECORDS}, [Job(AttentionSimilarity, ("base", "other"), "d")])
    assert len(fingerprinted) == 2  # two models sharing batches: both checked

def test_jobs_are_checked(two_models):
    with pytest.raises(ValueError, match="not among"):
        Runner().run(two_models.get, {"d": RECORDS}, [Job(SpecialMass, ("base",), "nope")])
    with pytest.raises(ValueError, match="one or two models"):
        Job(SpecialMass, ("a", "b", "c"), "d")
    with pytest.raises(ValueError, match="pair collector"):
        build_collector(Job(AttentionSimilarity, ("base",), "d"), two_models)


# ------------------------------------------------------------------------------------------ the memory budget
#: Word counts of inputs of the word "the" (one piece each): pieces = words + [CLS] + [SEP].
PLANTED_WORDS = [5, 10, 1, 8, 5, 9, 4, 2]  # 7, 12, 3, 10, 7, 11, 6, 4 pieces
PLANTED = [Record(f"t{i}", " ".join(["the"] * k)) for i, k in enumerate(PLANTED_WORDS)]


def batch_shapes(monkeypatch):
    """Record the (B, T) of every forward pass, per model."""
    from headstats.engine import forward as extraction

    shapes: dict[str, list[tuple[int, int]]] = {}
    for name in ("forward_attentions", "forward_fused"):  # transformers' eager path, or the fused one
        def forward(*args, real=getattr(extraction, name), **kwargs):
            shapes.setdefault(args[0].name, []).append(tuple(args[1].input_ids.shape))
            return real(*args, **kwargs)

        monkeypatch.setattr(extraction, name, forward)
    return shapes


def test_every_batch_fits_the_memory_budget(two_models, monkeypatch):
    assert (two_models["base"].n_layers, two_models["base"].n_heads) == (2, 2)
    per_cell = 4 * 4 * 2 * 2  # copies x float32 bytes x layers x heads
    shapes = batch_shapes(monkeypatch)
    job = Job(RoleScores, ("base",), "d", {"roles": ROLES})
    # 300 cells per head: T=12 -> 2 inputs, T=10 -> 3, T=6 -> 8, capped by batch_size 4 (3 left)
    Runner(batch_size=4, memory_budget=300 * per_cell).run(two_models.get, {"d": PLANTED}, [job])
    assert shapes.pop("base") == [(2, 12), (3, 10), (3, 6)]
    assert all(b * t * t <= 300 for b, t in [(2, 12), (3, 10), (3, 6)])
    # the default budget holds these short inputs in batches of batch_size, as before
    Runner(batch_size=4).run(two_models.get, {"d": PLANTED}, [job])
    assert shapes.pop("base") == [(4, 12), (4, 7)]
    # auto: as many inputs as the budget allows (1,000 cells: T=12 -> 6, T=4 -> 62)
    Runner(batch_size="auto", memory_budget=1000 * per_cell).run(two_models.get, {"d": PLANTED}, [job])
    assert shapes.pop("base") == [(6, 12), (2, 4)]
    # a comparison group holds both models' views of a batch: half the cells each (150: T=7 -> 3, T=4 -> 9)
    pair = Job(AttentionSimilarity, ("base", "other"), "d")
    Runner(batch_size=4, memory_budget=300 * per_cell).run(two_models.get, {"d": PLANTED}, [pair])
    longest_first = [(1, 12), (1, 11), (1, 10), (3, 7), (2, 4)]  # run in progress_order: the median second
    assert shapes == {m: [longest_first[i] for i in (0, 2, 1, 3, 4)] for m in ("base", "other")}


def test_scores_do_not_depend_on_the_batching(two_models):
    runs = {}
    for name, budget in (("default", None), ("one_by_one", 64)):  # 64 bytes: one cell, one input a batch
        jobs = [Job(RoleScores, ("base",), "d", {"roles": ROLES}), Job(SpecialMass, ("base",), "d")]
        runner = Runner(batch_size=32, **({} if budget is None else {"memory_budget": budget}))
        runner.run(two_models.get, {"d": RECORDS + PLANTED}, jobs)
        runs[name] = (jobs[0].collector.result(), jobs[1].collector.tables()["special_mass"], runner.forward_passes)
    (a, mass_a, passes_a), (b, mass_b, passes_b) = runs["default"], runs["one_by_one"]
    assert (passes_a, passes_b) == (1, 20)
    assert list(a.sentence_ids) == list(b.sentence_ids)
    # padding and batch composition change float rounding only
    np.testing.assert_allclose(a.values, b.values, rtol=1e-5, atol=1e-7, equal_nan=True)
    np.testing.assert_allclose(mass_a["mass_mean"], mass_b["mass_mean"], rtol=1e-5)


def test_the_default_budget_keeps_batches_of_32_for_short_inputs():
    from headstats.config.protocol import ExecutionOptions
    from headstats.engine.forward import inputs_per_batch
    from headstats.engine.runner import AUTO_BATCH_CAP, DEFAULT_MEMORY_BUDGET, attention_cells

    def auto_batch_size(layers, heads, length, budget):
        return inputs_per_batch(length, AUTO_BATCH_CAP, attention_cells(layers, heads, budget))

    assert ExecutionOptions().memory_budget_mb << 20 == DEFAULT_MEMORY_BUDGET == Runner().memory_budget
    # 256 MiB / (4 copies x 4 bytes x 6 x 12 heads) = 233,016 cells: 32 x 85^2 = 231,200 fits, 32 x 86^2 does not
    assert attention_cells(6, 12, DEFAULT_MEMORY_BUDGET) == 233_016
    assert auto_batch_size(6, 12, 85, DEFAULT_MEMORY_BUDGET) == 32 > auto_batch_size(6, 12, 86, DEFAULT_MEMORY_BUDGET) == 31
    # bert-base (12 x 12): 116,508 cells, batches of 32 up to 60 pieces, 7 inputs of 128
    assert auto_batch_size(12, 12, 60, DEFAULT_MEMORY_BUDGET) == 32 and auto_batch_size(12, 12, 128, DEFAULT_MEMORY_BUDGET) == 7
    with pytest.raises(ValueError, match="memory_budget"):
        Runner(memory_budget=0)


def test_with_a_cache_a_pass_holds_no_chunk_state_and_merges_them_back_from_the_cache(two_models, tmp_path,
                                                                                   monkeypatch):
    from headstats.engine.cache import StateCache
    from headstats.engine.runner import StoredState

    merged_from = []
    real_merge = RoleScores.merge.__func__

    def merge(cls, states):
        merged_from.append(list(states))
        return real_merge(cls, states)

    monkeypatch.setattr(RoleScores, "merge", classmethod(merge))
    held = []
    real_state = Runner._state

    def state(self, s):
        held.append(s)
        return real_state(self, s)

    monkeypatch.setattr(Runner, "_state", state)
    plain = Job(RoleScores, ("base",), "d", {"roles": ROLES})
    Runner(batch_size=4, chunk_size=3).run(two_models.get, {"d": RECORDS}, [plain])
    cached = Job(RoleScores, ("base",), "d", {"roles": ROLES})
    Runner(batch_size=4, chunk_size=3, cache=StateCache(tmp_path / "c")).run(two_models.get, {"d": RECORDS}, [cached])
    # 12 records in chunks of 3: the cached pass kept only keys, and merged the 4 states read back
    assert [type(s) for s in held[-4:]] == [StoredState] * 4
    assert len(merged_from[-1]) == 4 and not any(isinstance(s, StoredState) for s in merged_from[-1])
    np.testing.assert_array_equal(cached.collector.result().values, plain.collector.result().values)


def test_a_chunk_state_pruned_during_the_pass_is_a_clear_error(two_models, tmp_path, monkeypatch):
    from headstats.engine.cache import StateCache
    from headstats.errors import HeadstatsError

    cache = StateCache(tmp_path / "c")
    monkeypatch.setattr(StateCache, "get", lambda self, key: None)  # every entry gone when read back
    job = Job(RoleScores, ("base",), "d", {"roles": ROLES})
    with pytest.raises(HeadstatsError, match=r"cache damaged: .* cannot be read back .*--no-cache.*cache prune"):
        Runner(batch_size=4, chunk_size=3, cache=cache).run(two_models.get, {"d": RECORDS}, [job])


def test_a_job_key_holds_the_seed_only_for_a_collector_whose_state_depends_on_it():
    from headstats.engine.runner import job_key

    class Seeded(RoleScores):
        seeded = True

    identity = [{"weights_sha256": "w"}]
    encoding = {"max_length": 128, "too_long": "skip"}

    def key(factory, seed, **options):
        return job_key(Job(factory, ("m",), "d", {"roles": ["local"], **options}, seed=seed), identity, encoding,
                       "fused-sdpa/2")

    assert key(RoleScores, 0) == key(RoleScores, 7)  # the role scores do not read the seed
    assert key(Seeded, 0) != key(Seeded, 7)
    assert key(RoleScores, 0) != key(RoleScores, 0, window=1)  # its own options are in it
    assert key(RoleScores, 0) != job_key(Job(RoleScores, ("m",), "other", {"roles": ["local"]}), identity, encoding,
                                         "fused-sdpa/2")
    # the attention path: the fused one and transformers' eager one differ in the last float32 digits
    assert key(RoleScores, 0) != job_key(Job(RoleScores, ("m",), "d", {"roles": ["local"]}), identity, encoding,
                                         "eager")


class TaskProbe(Collector):
    """A collector that needs its model with a task head and gradients: it records, per batch, the mode it was
    called in and which task model it was handed, and differentiates through that model."""

    needs_task_model = True
    needs_gradients = True

    def __init__(self, context):
        super().__init__(context)
        self._state = []

    def update(self, view):
        import torch

        task = self.context.task_model("float32")
        ids = torch.as_tensor([list(item.input_ids) for item in view.inputs[:1]])
        out = task.model(input_ids=ids)
        (grad,) = torch.autograd.grad(out.last_hidden_state.sum(), task.model.get_input_embeddings().weight)
        self._state.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled(), id(task),
                            bool(torch.isfinite(grad).all())))

    @classmethod
    def merge(cls, states):
        return [s for state in states for s in state]

    def tables(self):
        return {}


class InferenceProbe(TaskProbe):
    needs_task_model = False
    needs_gradients = False

    def update(self, view):
        import torch

        self._state.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))


def test_the_runner_loads_a_task_model_once_per_group_and_runs_grad_enabled_batches(two_models, monkeypatch):
    """A collector declares that it needs its model with a task head and gradients; the runner loads that model
    once per group (not per chunk or data set), frees it with the group, and calls the collector's update with
    gradients on, the others' in inference mode."""
    from headstats.model import loading

    task_loads: Counter = Counter()
    real = loading.load_model

    def load_model(spec, **kwargs):
        task_loads[(spec, kwargs.get("head"))] += 1
        return real(spec, **kwargs)

    monkeypatch.setattr(loading, "load_model", load_model)
    data = {"d": RECORDS, "e": RECORDS[:7]}
    jobs = [Job(TaskProbe, (m,), ds, name="probe") for m in ("base", "other") for ds in data]
    jobs += [Job(InferenceProbe, ("base",), "d", name="plain")]
    runner = Runner(batch_size=5, chunk_size=4)
    runner.run(lambda name: two_models[name], data, jobs)
    sources = {str(two_models[m].provenance["path"]) for m in ("base", "other")}
    assert task_loads == {(s, "task"): 1 for s in sources}  # 2 data sets, 3 and 2 chunks: one load per group
    assert runner.loads == 2 + 2  # the two models, and each once more with its task head
    assert runner._task_models.loads == 1 and not runner._task_models._loaded  # freed with the last group
    for job in jobs[:4]:
        state = job.collector.state()
        assert state and all(grad and not inference and finite for grad, inference, _, finite in state)
        assert len({task for _, _, task, _ in state}) == 1
    assert jobs[-1].collector.state() and all(not g and i for g, i in jobs[-1].collector.state())


def test_a_collector_built_outside_the_runner_cannot_reach_a_task_model():
    from headstats.engine.collector import Context

    with pytest.raises(RuntimeError, match="needs_task_model"):
        Context(("m",), "d", 2, 2).task_model()


def test_jobs_of_two_measures_share_one_forward_pass(tiny_model):
    """A job reads the measure of its options (``measure``): weights and norm of one model, one pass per batch."""
    from headstats.engine.batch import forward_views, view_of
    from headstats.model.encoding import encode_records

    inputs = encode_records(RECORDS[:5], tiny_model.tokenizer).inputs
    jobs = [Job(RoleScores, (tiny_model.name,), "d", {"roles": ROLES, "measure": m}) for m in ("weights", "norm")]
    for job in jobs:
        job.collector = build_collector(job, {tiny_model.name: tiny_model})
    passes = feed({tiny_model.name: tiny_model}, inputs, jobs, dataset="d", batch_size=2)
    assert passes == 3  # 5 inputs in batches of 2: one pass per batch, not per measure
    import torch

    for job, measure in zip(jobs, ("weights", "norm")):
        alone = build_collector(Job(RoleScores, (tiny_model.name,), "d", {"roles": ROLES}), {tiny_model.name: tiny_model})
        for start in range(0, 5, 2):
            with torch.inference_mode():
                view = forward_views(tiny_model, inputs[start:start + 2], dataset="d", measures=(measure,))[measure]
            alone.update(view_of(view.attention, view.inputs, dataset="d"))
        np.testing.assert_allclose(job.collector.state().values, alone.state().values, rtol=1e-5)  # other padding
    assert not np.allclose(jobs[0].collector.state().values, jobs[1].collector.state().values, equal_nan=True)


class EmbeddingReader(Collector):
    """A collector that reads its model's input embeddings after the pass, unless its options give vectors of its
    own; its state counts the inputs it saw."""

    def __init__(self, context):
        super().__init__(context)
        self._state = 0

    @property
    def needs_input_embeddings(self):
        return not self.context.options.get("own_vectors", False)

    def update(self, view):
        self._state += len(view.inputs)

    @classmethod
    def merge(cls, states):
        return sum(states)

    def tables(self):
        return {}


def test_a_collector_that_needs_input_embeddings_gets_its_models_matrix_after_the_pass(two_models, tmp_path):
    """The runner hands the collector whose states it merged the input embeddings of the model it loaded for the
    pass (one float32 copy per model), loading the model for them when every chunk came from the cache, and
    never for a shard (whose states are merged elsewhere) or a collector that needs none."""
    from headstats.engine.cache import StateCache
    from headstats.engine.runner import ModelInfo

    loads: Counter = Counter()

    def load(name):
        loads[name] += 1
        return two_models[name]

    def describe(name):  # as the study does: no load to describe a model
        return ModelInfo(dict(two_models[name].provenance), two_models[name].max_input_length)

    data = {"d": RECORDS, "e": RECORDS[:7]}

    def jobs():
        return ([Job(EmbeddingReader, (m,), ds) for m in ("base", "other") for ds in data]
                + [Job(EmbeddingReader, ("base",), "d", {"own_vectors": True})])

    for expected_loads in ({"base": 1, "other": 1}, {"base": 2, "other": 2}):  # the passes, then all from the cache
        run = jobs()
        Runner(batch_size=5, chunk_size=4, cache=StateCache(tmp_path / "c")).run(load, data, run, describe=describe)
        assert loads == expected_loads
        for job in run[:4]:
            weight = two_models[job.models[0]].model.get_input_embeddings().weight.detach().numpy()
            got = job.collector.context.input_embeddings
            np.testing.assert_array_equal(got, weight)
            assert got.dtype == np.float32 and not np.shares_memory(got, weight)
            assert job.collector.state() == len(data[job.dataset])
        assert run[0].collector.context.input_embeddings is run[1].collector.context.input_embeddings
        assert run[-1].collector.context.input_embeddings is None
    shard = jobs()
    Runner(batch_size=5, chunk_size=4, cache=StateCache(tmp_path / "c"), shard=(1, 1)).run(load, data, shard,
                                                                                         describe=describe)
    assert loads == {"base": 2, "other": 2} and shard[0].collector.context.input_embeddings is None


def test_a_run_fixes_the_allocators_thresholds_and_trims_after_each_data_set(two_models, monkeypatch):
    # glibc's settings (mallopt): a fixed 32 MiB mmap threshold and a 64 MiB trim threshold, set when the run
    # starts; the heap trimmed after each data set's pass
    from headstats.engine import runner as engine_runner

    calls = []
    monkeypatch.setattr(engine_runner, "_mallopt", lambda *settings, trim=False: calls.append((settings, trim)))
    policy = ((-3, 32 << 20), (-1, 64 << 20))
    jobs = [Job(RoleScores, ("base",), d, {"roles": ROLES}) for d in ("d", "e")]
    Runner(batch_size=5).run(two_models.get, {"d": RECORDS, "e": RECORDS[:3]}, jobs)
    assert calls == [(policy, False), (policy, True), (policy, True)]
