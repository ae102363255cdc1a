"""A job's numbers do not depend on which jobs share its pass, nor on the cache's history.

Every pass of the runner takes one attention path (engine/mapfree.py): the layers' outputs from the fused SDPA
kernel, the role scores gathered without maps, the maps made from the same queries and keys only for the
collectors that read them. So the role scores of a chunk are the same bytes whether they run alone or beside an
analysis that reads whole maps (clustering here), from an empty cache or a cache warmed by either, in either
order; and so is clustering's state. The path is in every cache key: states of transformers' eager path
(``Runner(map_free=False)``), which differ in the last float32 digits, are never served to a fused run, nor the
reverse.
"""

from __future__ import annotations

import numpy as np
import pytest

from headstats.analyses.clustering.collect import HeadClustering
from headstats.analyses.pande_roles.collect import RoleScores
from headstats.engine.cache import StateCache
from headstats.engine.mapfree import ATTENTION_PATH, EAGER_PATH
from headstats.engine.runner import Job, ModelInfo, Runner
from headstats.inputs.records import Record

TEXTS = ["the cat sat", "a dog ran in the house", "the cat", "the old man saw a big red car", "it was",
         "she likes the book", "he read it yesterday", "big red car", "the mouse ran", "we saw it"]
#: Sentences and pairs (``block`` gathers its dense key columns on pairs), in padded batches of 3.
RECORDS = [Record(f"s{i}", t) for i, t in enumerate(TEXTS)] + [Record("p0", "the cat sat", "a dog ran"),
                                                                  Record("p1", "it was", "we saw it")]
ROLES = ["local", "delimiter", "delimiter_cls", "block"]


def roles():
    return Job(RoleScores, ("m",), "d", {"roles": ROLES}, name="pande_roles")


def clustering():
    return Job(HeadClustering, ("m",), "d", {"punct_ids": [], "max_inputs": None}, name="clustering")


def run(tiny_model, jobs, cache=None, **kwargs):
    """Run ``jobs`` (in chunks of 4 records, batches of 3) and return them and the runner."""
    tiny_model.name = "m"
    info = ModelInfo(dict(tiny_model.provenance), tiny_model.max_input_length)
    runner = Runner(**{"batch_size": 3, "chunk_size": 4, "cache": cache, **kwargs})
    runner.run(lambda name: tiny_model, {"d": RECORDS}, jobs, describe=lambda name: info)
    return jobs, runner


def scores(jobs) -> bytes:
    return next(j for j in jobs if j.name == "pande_roles").collector.result().values.tobytes()


def js(jobs) -> bytes:
    return next(j for j in jobs if j.name == "clustering").collector.state().js.tobytes()


def test_role_scores_and_clustering_are_the_same_bytes_alone_together_and_from_a_cache_warmed_either_way(
        tiny_model, tmp_path):
    alone, _ = run(tiny_model, [roles()])
    clustered, _ = run(tiny_model, [clustering()])
    together, runner = run(tiny_model, [roles(), clustering()])
    assert runner.attention == {"m": ATTENTION_PATH}
    assert scores(alone) == scores(together) and js(clustered) == js(together)

    # role scores cached alone, then both: the role scores come from the cache, clustering runs alone
    cache = StateCache(tmp_path / "roles-first")
    run(tiny_model, [roles()], cache)
    served, runner = run(tiny_model, [roles(), clustering()], StateCache(cache.root))
    assert runner.pass_counts[("m", "d")].chunks_run == 3 and runner.forward_passes > 0
    assert scores(served) == scores(together) and js(served) == js(together)

    # clustering cached alone, then both: the role scores run alone (map-free), beside nothing
    cache = StateCache(tmp_path / "clustering-first")
    run(tiny_model, [clustering()], cache)
    served, _ = run(tiny_model, [roles(), clustering()], StateCache(cache.root))
    assert scores(served) == scores(together) and js(served) == js(together)

    # both cached together, then each alone: everything from the cache, no pass
    cache = StateCache(tmp_path / "together-first")
    run(tiny_model, [roles(), clustering()], cache)
    for job, same in ((roles, scores), (clustering, js)):
        served, runner = run(tiny_model, [job()], StateCache(cache.root))
        assert runner.forward_passes == 0 and runner.attention == {"m": ATTENTION_PATH}  # read from the entries
        assert same(served) == same(together)

    # one chunk of the role scores lost from a cache filled together: recomputed alone, the same bytes
    victim = next(p for p in sorted(cache.folder.rglob("*.hsc"))
                  if type(StateCache(cache.root).get(p.stem)["state"]).__name__ == "ScoreState")
    victim.unlink()
    served, runner = run(tiny_model, [roles(), clustering()], StateCache(cache.root))
    assert runner.pass_counts[("m", "d")].chunks_run == 1
    assert scores(served) == scores(together) and js(served) == js(together)


@pytest.mark.parametrize("first", [True, False], ids=["fused-first", "eager-first"])
def test_states_of_the_two_paths_have_different_keys_and_are_never_served_across(tiny_model, tmp_path, first):
    cache = StateCache(tmp_path)
    fused, _ = run(tiny_model, [roles(), clustering()])
    eager, runner = run(tiny_model, [roles(), clustering()], map_free=False)
    assert runner.attention == {"m": EAGER_PATH}
    assert scores(fused) != scores(eager)  # the paths differ in the last float32 digits ...
    np.testing.assert_allclose(np.frombuffer(scores(fused), np.float32), np.frombuffer(scores(eager), np.float32),
                               rtol=1e-5, atol=1e-6, equal_nan=True)  # ... and only there
    for map_free in (first, not first):
        served, runner = run(tiny_model, [roles(), clustering()], StateCache(cache.root), map_free=map_free)
        assert runner.pass_counts[("m", "d")].chunks_cached == 0  # the other path's states: another key
        assert scores(served) == scores(fused if map_free else eager)
    assert StateCache(cache.root).info().entries == 2 * 2 * 3  # two paths x two jobs x three chunks
    for map_free in (True, False):
        served, runner = run(tiny_model, [roles(), clustering()], StateCache(cache.root), map_free=map_free)
        assert runner.forward_passes == 0 and scores(served) == scores(fused if map_free else eager)


def test_a_model_that_does_not_dispatch_through_the_attention_interface_runs_eager_for_every_job(
        tiny_model, tmp_path, monkeypatch):
    """Its layers never call the fused function (here: the registered name runs transformers' eager attention, as a
    model with an attention of its own would): the runner says so and runs transformers' eager path for every job,
    the same bytes as ``Runner(map_free=False)``, and records ``eager`` as the path of its states."""
    from transformers.models.bert.modeling_bert import eager_attention_forward

    from headstats.engine import mapfree

    eager, _ = run(tiny_model, [roles(), clustering()], map_free=False)
    monkeypatch.setattr(mapfree, "map_free_attention", eager_attention_forward)
    try:
        cache, lines = StateCache(tmp_path), []
        own, runner = run(tiny_model, [roles(), clustering()], cache, log=lines.append)
        assert runner.attention == {"m": EAGER_PATH} and scores(own) == scores(eager) and js(own) == js(eager)
        assert [line for line in lines if "eager" in line] == [  # said once, not once per chunk
            "model 'm': its attention does not go through transformers' attention functions; its passes run "
            "transformers' eager attention (scores the same to float32 rounding)"]
        again, runner = run(tiny_model, [roles(), clustering()], StateCache(cache.root))
        assert runner.forward_passes == 0 and runner.attention == {"m": EAGER_PATH}  # as its entries say
    finally:
        monkeypatch.undo()
        mapfree.register()
