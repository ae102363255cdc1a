"""The role scores of a map-free pass (analyses/sieve_gather.py): each sieve gathered in the form its mask allows
(key columns, rows, diagonals, weight by weight, nothing), every form giving the eager maps' scores; a map-free
view is refused by the maps' scorer. The families and the engine's side are tests/engine/test_mapfree.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import space_words
from headstats.analyses.pande_roles.collect import RoleScores
from headstats.analyses.roles import register_role, unregister_role
from headstats.analyses.sieve_gather import _plans, map_free_scores, role_scores_of
from headstats.analyses.sieves import DEFAULT_ROLES, ScoreSettings, score_and_ceilings
from headstats.engine.batch import forward_map_free, forward_views
from headstats.engine.collector import Context
from headstats.inputs.records import Record
from headstats.model.encoding import encode_records


@pytest.fixture
def user_roles():
    def previous(layout, options):  # one diagonal, but a per-input mask: gathered weight by weight
        return np.eye(layout.length, k=-1, dtype=bool)

    def halves(layout, options):  # two distinct rows: gathered as two key columns
        n = layout.length
        mask = np.zeros((n, n), dtype=bool)
        mask[: n // 2, : n // 2] = True
        mask[n // 2:, n // 2:] = True
        return mask

    def scattered(layout, options):  # many distinct rows off few diagonals: gathered weight by weight
        return np.random.default_rng(layout.length).random((layout.length, layout.length)) < 0.3

    names = ["t_previous", "t_halves", "t_scattered"]
    for name, sieve in zip(names, (previous, halves, scattered)):
        register_role(name, sieve)
    yield names
    for name in names:
        unregister_role(name)


def _views(loaded, records, roles, settings):
    items = encode_records(records, loaded.tokenizer, max_length=64).inputs
    collector = RoleScores(Context((loaded.name,), "d", loaded.n_layers, loaded.n_heads,
                                   {"roles": list(roles), "settings": settings}))
    with torch.inference_mode():
        return forward_views(loaded, items)["weights"], forward_map_free(loaded, items, collector.gather)


def _records(pairs: bool = True):
    a, b = "the cat sat on the mat with a big red dog", "she read a book today"
    singles = [Record("s1", a, words_a=space_words(a, [1, 2, -1, 5, 5, 2, 10, 10, 10, 10, 2],
                                                   ["det", "nsubj", "root", "case", "det", "obl", "case", "det",
                                                    "amod", "amod", "obl"])),
               Record("s2", b)]
    return singles + ([Record("p1", a, b), Record("p2", b, "he ran")] if pairs else [])


def test_every_form_of_gather_gives_the_eager_scores(user_roles, tiny_model):
    roles = [*user_roles, *DEFAULT_ROLES]
    for settings in (ScoreSettings(), ScoreSettings(scale="mass")):
        eager, free = _views(tiny_model, _records(), roles, settings)
        kinds = [plan.kind for plan in _plans(free, roles, settings)[0]]
        # a user sieve is per input; local (the same mask for every input) is read by its diagonals
        assert kinds == ["pairs", "rows", "pairs", "diagonals", "columns", "columns", "columns", "rows"]
        with torch.inference_mode():
            expected, expected_ceilings = score_and_ceilings(eager, roles, settings)
            scores, ceilings = role_scores_of(free, roles, settings)
        assert torch.isfinite(expected).any(0).any(0).any(0)[:10].all()  # no dobj or advmod arc in these inputs
        np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ceilings, expected_ceilings, rtol=1e-6)


def test_block_on_single_sentences_gathers_nothing(tiny_model):
    eager, free = _views(tiny_model, _records(pairs=False), ["block", "local"], ScoreSettings())
    plans = _plans(free, ["block", "local"], ScoreSettings())[0]
    assert [plan.kind for plan in plans] == ["none", "diagonals"]
    assert not plans[0].gather.columns and not plans[0].gather.pairs
    with torch.inference_mode():
        scores, ceilings = map_free_scores(free, ["block", "local"], ScoreSettings())
    assert torch.isnan(scores[..., 0]).all() and torch.isnan(ceilings[:, 0]).all()  # no pair: block takes no part
    np.testing.assert_allclose(scores[..., 1], score_and_ceilings(eager, ["local"], ScoreSettings())[0][..., 0],
                               rtol=1e-5)


def test_the_maps_scorer_refuses_a_map_free_view(tiny_model):
    _, free = _views(tiny_model, _records(), ["local"], ScoreSettings())
    with pytest.raises(ValueError, match="map-free view holds no attention maps.*role_scores_of"):
        score_and_ceilings(free, ["local"], ScoreSettings())
