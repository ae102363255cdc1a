"""Role scores without attention maps (headstats.engine.mapfree, analyses/sieve_gather.py): the gathered weights
and every role's score equal the eager maps' on every family headstats loads, padded batches and pairs
included; the traps of a custom attention name (no padding mask unless one is registered, a boolean mask that
the CPU kernel refuses) are tested; a job takes its path whatever shares its pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from conftest import space_words
from headstats.analyses.pande_roles.collect import RoleScores
from headstats.analyses.sieve_gather import map_free_scores
from headstats.analyses.sieves import DEFAULT_ROLES, ScoreSettings, score_and_ceilings
from headstats.engine.batch import MapFreeView, forward_map_free, forward_views
from headstats.engine.collector import Context
from headstats.engine.mapfree import MAP_FREE, Gather, gathering, map_free_attention, register
from headstats.engine.runner import Job, Runner, runs_map_free
from headstats.inputs.records import Record
from headstats.model.encoding import encode_records
from headstats.model.loading import LoadedModel

SIZES = dict(hidden_size=16, num_attention_heads=4, num_hidden_layers=3, intermediate_size=32,
             max_position_embeddings=80, pad_token_id=0)
FAMILIES = {
    "bert": (transformers.BertConfig, transformers.BertModel, SIZES),
    "roberta": (transformers.RobertaConfig, transformers.RobertaModel, SIZES),
    "xlm-roberta": (transformers.XLMRobertaConfig, transformers.XLMRobertaModel, SIZES),
    "electra": (transformers.ElectraConfig, transformers.ElectraModel, {**SIZES, "embedding_size": 8}),
    "albert": (transformers.AlbertConfig, transformers.AlbertModel, {**SIZES, "embedding_size": 8}),
    "distilbert": (transformers.DistilBertConfig, transformers.DistilBertModel,
                   dict(dim=16, n_heads=4, n_layers=3, hidden_dim=32, max_position_embeddings=80, pad_token_id=0)),
}


def _loaded(family: str, tokenizer) -> LoadedModel:
    config_class, model_class, sizes = FAMILIES[family]
    torch.manual_seed(0)
    model = model_class(config_class(vocab_size=len(tokenizer), **sizes, attn_implementation="eager")).eval()
    for parameter in model.parameters():  # sharper attention than the default init's near-uniform rows
        torch.nn.init.normal_(parameter, std=0.5)
    layers = model.config.num_hidden_layers if family != "distilbert" else model.config.n_layers
    heads = model.config.num_attention_heads if family != "distilbert" else model.config.n_heads
    return LoadedModel(family, model, tokenizer, {"n_layers": layers, "n_heads": heads, "model_type": family,
                                                  "max_position_embeddings": 80})


def _records() -> list[Record]:
    """Sentences and pairs of different lengths (padded batches), with arcs of the four relations."""
    a = "the cat sat on the mat"
    b = "the big dog chased a small red bird quickly"
    c = "he ran"
    return [
        Record("s1", a, words_a=space_words(a, [1, 2, -1, 5, 5, 2], ["det", "nsubj", "root", "case", "det", "obl"])),
        Record("s2", b, words_a=space_words(b, [2, 2, 3, -1, 7, 7, 7, 3, 3],
                                            ["det", "amod", "nsubj", "root", "det", "amod", "amod", "dobj", "advmod"])),
        Record("s3", c, words_a=space_words(c, [1, -1], ["nsubj", "root"])),
        Record("p1", a, b), Record("p2", c, a), Record("p3", "unhappy yesterday", "she read a book"),
    ]


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    return tiny_model.tokenizer


def _views(loaded: LoadedModel, roles, settings: ScoreSettings):
    items = encode_records(_records(), loaded.tokenizer, max_length=64).inputs
    with torch.inference_mode():
        eager = forward_views(loaded, items)["weights"]
        collector = RoleScores(Context((loaded.name,), "d", loaded.n_layers, loaded.n_heads,
                                       {"roles": list(roles), "settings": settings}))
        free = forward_map_free(loaded, items, collector.gather)
    return eager, free


def _same_scores(loaded, roles, settings):
    eager, free = _views(loaded, roles, settings)
    assert free.attention is None and isinstance(free, MapFreeView)
    with torch.inference_mode():
        expected, expected_ceilings = score_and_ceilings(eager, roles, settings)
        scores, ceilings = map_free_scores(free, roles, settings)
    assert torch.isfinite(expected).any(0).any(0).any(0).all()  # every role scored on some input
    np.testing.assert_allclose(scores.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.isnan(scores.numpy()), np.isnan(expected.numpy()))
    np.testing.assert_allclose(ceilings.numpy(), expected_ceilings.numpy(), rtol=1e-6)
    return expected


ROLES = [*DEFAULT_ROLES, "syntactic:det"]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_role_equals_the_eager_maps_on_every_family(family, tokenizer):
    _same_scores(_loaded(family, tokenizer), ROLES, ScoreSettings())


@pytest.fixture(params=["sparse", "weights", "widened"])
def path(request, monkeypatch):
    """Every way a key column is read: from its keys' scores (sparse), from the layer's (B, H, T, T) weights, or
    as extra value columns of the fused call (wide batches; the entropy too)."""
    from headstats.engine import mapfree

    if request.param != "sparse":
        monkeypatch.setattr(mapfree, "MAX_SPARSE_KEYS", 0)
    if request.param == "widened":
        monkeypatch.setattr(mapfree, "SCORES_MAX_WIDTH", 0)
    return request.param


@pytest.mark.parametrize("settings", [
    ScoreSettings(scale={"default": "mass", "local": "ceiling"}),
    ScoreSettings(block_entropy=True, first_sep_segment="B", local_edges="published", window=3),
    ScoreSettings(arc_direction="both", count_special_queries=False, window=0),
], ids=["scales", "published", "both-directions"])
def test_scales_and_the_published_variants_equal_the_eager_maps(settings, tokenizer, path):
    _same_scores(_loaded("bert", tokenizer), ROLES, settings)


@pytest.mark.parametrize("family", ["roberta", "distilbert"])
def test_wide_batches_widen_the_fused_call(family, tokenizer, monkeypatch):
    from headstats.engine import mapfree

    monkeypatch.setattr(mapfree, "SCORES_MAX_WIDTH", 0)
    monkeypatch.setattr(mapfree, "MAX_SPARSE_KEYS", 0)
    _same_scores(_loaded(family, tokenizer), ROLES, ScoreSettings(block_entropy=True))


def test_published_arc_lengths_equal_the_eager_maps(tokenizer):
    loaded = _loaded("roberta", tokenizer)
    items = encode_records(_records(), loaded.tokenizer, max_length=64).inputs
    for item in items:
        item.arc_length = max(3, item.length - 2)  # the published code's n (METHODS 1.6 (c))
    settings = ScoreSettings()
    roles = ["syntactic", "syntactic:amod"]
    with torch.inference_mode():
        eager = forward_views(loaded, items)["weights"]
        collector = RoleScores(Context((loaded.name,), "d", loaded.n_layers, loaded.n_heads,
                                       {"roles": roles, "settings": settings}))
        free = forward_map_free(loaded, items, collector.gather)
        expected, _ = score_and_ceilings(eager, roles, settings)
        scores, _ = map_free_scores(free, roles, settings)
    np.testing.assert_allclose(scores.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)


def test_gathered_weights_equal_the_maps(tokenizer, path):
    loaded = _loaded("albert", tokenizer)  # one attention module shared by the layers: one record per call
    items = encode_records(_records(), loaded.tokenizer, max_length=64).inputs
    with torch.inference_mode():
        A = forward_views(loaded, items)["weights"].attention
    B, L, H, N, _ = A.shape
    weights = torch.rand(B, 2, N)
    b, i, j = torch.tensor([0, 3, 5, 5]), torch.tensor([1, 0, 2, 2]), torch.tensor([3, 4, 0, 1])
    view = MapFreeView("m", "d", items, None, torch.zeros(B, N, dtype=torch.int64), shape=(B, L, H, N))
    gather = Gather(columns={"w": weights}, diagonals={-2, 0, 1}, pairs={"p": (b, i, j)}, entropy=True)
    with torch.inference_mode():
        free = forward_map_free(loaded, items, lambda v: gather)
    got = free.gathered
    real = view.real
    np.testing.assert_allclose(got.columns["w"], torch.einsum("blhij,bcj->blhic", A, weights), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(free.row_means, A.sum(-1) / real.sum(-1)[:, None, None, None], rtol=1e-5)
    for d in (-2, 0, 1):
        expected = torch.zeros(B, L, H, N)
        expected[..., max(0, -d): N - max(0, d)] = A.diagonal(d, -2, -1)
        np.testing.assert_allclose(got.diagonal(d), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.pairs["p"], A[b, :, :, i, j], rtol=1e-5, atol=1e-6)
    entropy = -(torch.special.xlogy(A, A) * real[:, None, None, None, :]).sum(-1)
    np.testing.assert_allclose(got.entropy, entropy, atol=2e-5)


@pytest.mark.parametrize("family", ["bert", "albert", "distilbert"])
def test_maps_are_written_into_one_tensor_with_the_layers_own_numbers(family, tokenizer):
    # with maps, the layers write softmax(scale Q K^T + mask) into the slices of one (B, L, H, T, T) tensor that
    # the pass returns as it is: the same bytes as stacking each layer's own maps, padded batch and pairs included
    from headstats.engine import forward as extraction
    from headstats.engine import mapfree
    from headstats.engine.batch import _padded

    loaded = _loaded(family, tokenizer)
    batch = _padded(loaded, encode_records(_records(), loaded.tokenizer, max_length=64).inputs, "cpu")
    own, scaled = [], []
    original = mapfree._maps

    def spy(query, key, mask, scale, **kwargs):
        scores = torch.matmul(query, key.transpose(-1, -2)) * scale  # the formula, out of place
        own.append(torch.softmax(scores + mask if mask is not None else scores, -1, dtype=torch.float32))
        scaled.append(bool(kwargs))
        return original(query, key, mask, scale, **kwargs)

    mapfree._maps = spy
    try:
        with torch.inference_mode():
            _, attention = extraction.forward_fused(loaded, batch, [], maps=True)
    finally:
        mapfree._maps = original
    assert scaled == [True] * loaded.n_layers  # every layer wrote into the pass' tensor
    assert attention.shape == (len(batch.inputs), loaded.n_layers, loaded.n_heads, *own[0].shape[-2:])
    assert attention.is_contiguous() and attention.dtype == torch.float32
    assert attention.numpy().tobytes() == torch.stack(own, dim=1).numpy().tobytes()


def test_maps_of_layers_of_another_shape_are_stacked():
    # a layer the pass' tensor was not made for (more layers than declared, or another width) gets its own maps,
    # and the pass then holds no tensor, so the caller stacks what the layers returned
    from headstats.engine.mapfree import _Pass

    torch.manual_seed(0)
    query, key = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 5, 4)
    active = _Pass([], maps=True, n_layers=1)
    returned = []
    for layer in range(2):
        active.calls += 1
        returned.append(active.layer_maps(query, key, None, 0.5))
    expected = torch.softmax(torch.matmul(query, key.transpose(-1, -2)) * 0.5, -1)
    assert torch.equal(returned[0], expected) and torch.equal(returned[1], expected)
    assert active.stacked is None and not active.holds(returned)


def test_padding_is_masked_in_a_padded_batch(tokenizer, path):
    # the trap: a custom attention name gets attention_mask=None unless a mask function is registered too, and
    # padded keys are then attended; an input's scores must not depend on the inputs padded beside it
    loaded = _loaded("bert", tokenizer)
    records = _records()
    settings = ScoreSettings()

    def scores_of(recs):
        items = encode_records(recs, loaded.tokenizer, max_length=64).inputs
        collector = RoleScores(Context(("m",), "d", loaded.n_layers, loaded.n_heads,
                                       {"roles": ROLES, "settings": settings}))
        with torch.inference_mode():
            return map_free_scores(forward_map_free(loaded, items, collector.gather), ROLES, settings)[0]

    alone = scores_of([records[2]])  # "he ran": the shortest, padded to the longest in the batch
    together = scores_of(records)
    short = [k for k, item in enumerate(encode_records(records, loaded.tokenizer, max_length=64).inputs)
             if item.sentence_id == "s3"][0]
    np.testing.assert_allclose(together[short], alone[0], rtol=1e-5, atol=1e-6)


def test_the_mask_is_registered_and_additive_float(tokenizer, monkeypatch, path):
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    from headstats.engine import mapfree

    register()
    assert MAP_FREE in ALL_ATTENTION_FUNCTIONS and MAP_FREE in ALL_MASK_ATTENTION_FUNCTIONS._global_mapping
    loaded = _loaded("bert", tokenizer)
    seen = []

    def spy(module, query, key, value, attention_mask, **kwargs):
        seen.append(attention_mask)
        return map_free_attention(module, query, key, value, attention_mask, **kwargs)

    monkeypatch.setattr(mapfree, "map_free_attention", spy)
    try:
        mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
        with torch.inference_mode(), gathering(loaded.model, Gather(diagonals={0})) as active:
            loaded.model(input_ids=torch.tensor([[2, 7, 8, 3], [2, 9, 3, 0]]), attention_mask=mask)
    finally:
        monkeypatch.undo()
        register()
    assert len(seen) == loaded.n_layers
    assert seen[0] is not None and seen[0].dtype == torch.float32  # additive, as the CPU kernel wants it
    assert seen[0][1, 0, 0, 2] < -1e30 and seen[0][1, 0, 0, 1] == 0
    assert active.recorders[0].result().diagonal(0)[1, :, :, 2:].abs().max() < 1  # a row, not a padded key's weight 1
    assert loaded.model.config._attn_implementation == "eager"  # restored


def test_a_boolean_mask_is_made_additive(tokenizer):
    query, key, value = (torch.randn(2, 3, 5, 4) for _ in range(3))
    mask = torch.ones(2, 1, 5, 5, dtype=torch.bool)
    mask[1, ..., 3:] = False
    from headstats.engine.mapfree import _ACTIVE, _Pass

    token = _ACTIVE.set(_Pass([Gather(diagonals={1})], maps=False))
    try:
        out, _ = map_free_attention(None, query, key, value, mask, scaling=0.5)
    finally:
        _ACTIVE.reset(token)
    expected = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=0.5)
    np.testing.assert_allclose(out, expected.transpose(1, 2), atol=1e-6)


def _count(monkeypatch):
    """Forward passes: transformers' eager attention (``eager``), the fused path with maps (``maps``) or without."""
    from headstats.engine import forward as extraction

    calls = {"eager": 0, "maps": 0, "free": 0}
    eager, fused = extraction.forward_attentions, extraction.forward_fused

    def count_eager(*args, **kwargs):
        calls["eager"] += 1
        return eager(*args, **kwargs)

    def count_fused(*args, maps=False, **kwargs):
        calls["maps" if maps else "free"] += 1
        return fused(*args, maps=maps, **kwargs)

    monkeypatch.setattr(extraction, "forward_attentions", count_eager)
    monkeypatch.setattr(extraction, "forward_fused", count_fused)
    return calls


def test_the_runner_runs_the_role_scores_without_maps_whatever_shares_their_pass(tiny_model, monkeypatch):
    """Alone, the role scores' pass makes no map; beside an analysis that reads the maps, one fused pass makes them
    for it, and the role scores are still computed without them: the same bytes. Transformers' eager path
    (``map_free=False``) gives them to float32 rounding."""
    from headstats.analyses.entropy.collect import AttentionEntropy

    records = _records()
    settings = ScoreSettings()
    options = {"roles": list(DEFAULT_ROLES), "settings": settings}
    results = {}
    for path, jobs in (("free", [Job(RoleScores, ("m",), "d", options)]),
                       ("maps", [Job(RoleScores, ("m",), "d", options), Job(AttentionEntropy, ("m",), "d")])):
        calls = _count(monkeypatch)
        runner = Runner(batch_size=4)
        runner.run(lambda name: tiny_model, {"d": records}, jobs)
        results[path] = jobs[0].collector.result().values
        assert calls == {"eager": 0, "maps": 0, "free": 2} if path == "free" else {"eager": 0, "maps": 2, "free": 0}
        assert runner.attention == {"m": "fused-sdpa/2"}
    assert results["free"].tobytes() == results["maps"].tobytes()
    calls = _count(monkeypatch)
    jobs = [Job(RoleScores, ("m",), "d", options)]
    runner = Runner(batch_size=4, map_free=False)
    runner.run(lambda name: tiny_model, {"d": records}, jobs)
    assert calls == {"eager": 2, "maps": 0, "free": 0} and runner.attention == {"m": "eager"}
    np.testing.assert_allclose(jobs[0].collector.result().values, results["free"], rtol=1e-5, atol=1e-6)


def test_whether_a_job_reads_a_map_free_view_is_a_property_of_the_job():
    # norm-weighted attention (METHODS 6.1) reweights every key by its value norm: its collector reads the maps
    context = Context(("m",), "d", 2, 2, {"roles": ["local"]})
    weights, norm = (Job(RoleScores, ("m",), "d", {"roles": ["local"], "measure": m}) for m in ("weights", "norm"))
    weights.collector, norm.collector = RoleScores(context), RoleScores(context)
    assert runs_map_free(weights) and not runs_map_free(norm)
    from headstats.analyses.entropy.collect import AttentionEntropy

    entropy = Job(AttentionEntropy, ("m",), "d")
    entropy.collector = AttentionEntropy(Context(("m",), "d", 2, 2, {}))
    assert not runs_map_free(entropy)


def test_non_finite_attention_stops_the_map_free_pass_naming_where(tokenizer):
    from headstats.errors import ModelError

    loaded = _loaded("bert", tokenizer)
    with torch.no_grad():
        loaded.model.encoder.layer[1].attention.self.query.weight[0, 0] = float("nan")  # head 0 of layer 1
    items = encode_records(_records(), loaded.tokenizer, max_length=64).inputs
    with torch.inference_mode(), pytest.raises(ModelError) as raised:  # the row's log-sum-exp is NaN: located
        forward_map_free(loaded, items, lambda view: Gather(diagonals={0}))  # on the maps, as the eager path does
    assert "gave non-finite attention (NaN or inf)" in str(raised.value)
    assert "(layer 1, head 0, counted from 0" in str(raised.value)


def test_the_cuda_bias_is_aligned_and_equal_to_the_mask():
    # the CUDA memory-efficient kernel refuses a bias whose strides are not multiples of 16 elements (a (B, 1, T, T)
    # mask of odd T: "attn_bias is not correctly aligned"), and the code then falls back to the per-layer product
    from headstats.engine.mapfree import BIAS_ALIGNMENT, _aligned_bias

    mask = torch.randn(2, 1, 37, 37)
    bias = _aligned_bias(mask, 3)
    assert bias.shape == (2, 3, 37, 37)
    assert bias.stride()[-1] == 1 and all(stride % BIAS_ALIGNMENT == 0 for stride in bias.stride()[:-1])
    np.testing.assert_array_equal(bias, mask.expand(2, 3, 37, 37))
