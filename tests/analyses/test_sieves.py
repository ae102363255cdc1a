"""Sieve bias scores on planted attention maps whose scores were computed by hand (METHODS 1.2-1.3)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from headstats.model.encoding import Arc, EncodedInput
from headstats.analyses.roles import register_role, unregister_role
from headstats.analyses.sieves import ScoreSettings, score_and_ceilings
from headstats.engine.batch import view_of


def make_input(special, cls, sep, segment, *, is_pair=False, arcs=(), index=0):
    n = len(special)
    return EncodedInput(
        index=index,
        sentence_id=str(index),
        input_ids=np.arange(n),
        token_type_ids=np.asarray(segment),
        special=np.asarray(special, bool),
        cls=np.asarray(cls, bool),
        sep=np.asarray(sep, bool),
        segment=np.asarray(segment),
        is_pair=is_pair,
        arcs=list(arcs),
    )


# [CLS] a b [SEP]; arc a -> b (dependent a at piece 1, head b at piece 2), relation nsubj
SINGLE = make_input([1, 0, 0, 1], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0], arcs=[Arc((1,), (2,), "nsubj")])
A_SINGLE = torch.tensor(
    [
        [0.1, 0.2, 0.3, 0.4],
        [0.5, 0.25, 0.25, 0.0],
        [0.0, 0.0, 0.0, 1.0],
        [0.25, 0.25, 0.25, 0.25],
    ]
)


def score_batch(attn, inputs, roles, settings=ScoreSettings()):
    """Scores (B, L, H, R) and ceilings (B, R) of a batch's attention through the collectors' one path, float64."""
    scores, ceilings = score_and_ceilings(view_of(attn, inputs), roles, settings)
    return scores.detach().double().numpy(), ceilings.detach().double().numpy()


def scores_of(attn, item, roles, **settings):
    out, _ = score_batch(attn[None, None, None], [item], roles, ScoreSettings(**settings))
    return dict(zip(roles, out[0, 0, 0]))


def test_planted_single_sentence_by_hand():
    s = scores_of(A_SINGLE, SINGLE, ["delimiter_cls", "delimiter_sep", "delimiter", "local", "syntactic:nsubj"], window=1)
    # every row sums to 1 over n = 4 keys, so b(i) = 4 * mean of A in the sieve
    assert s["delimiter_cls"] == pytest.approx((0.4 + 2.0 + 0.0 + 1.0) / 4)  # 0.85
    assert s["delimiter_sep"] == pytest.approx((1.6 + 0.0 + 4.0 + 1.0) / 4)  # 1.65
    assert s["delimiter"] == pytest.approx((1.0 + 1.0 + 2.0 + 1.0) / 4)  # 1.25
    # local, w = 1, clipped: row0 {0,1}, row1 {0,1,2}, row2 {1,2,3}, row3 {2,3}
    assert s["local"] == pytest.approx((0.6 + 4 / 3 + 4 / 3 + 1.0) / 4)
    assert s["syntactic:nsubj"] == pytest.approx(0.25 / 0.25)


def test_special_queries_option_and_arc_directions():
    s = scores_of(A_SINGLE, SINGLE, ["local", "delimiter_cls"], window=1, count_special_queries=False)
    assert s["local"] == pytest.approx(4 / 3)
    assert s["delimiter_cls"] == pytest.approx((2.0 + 0.0) / 2)
    rev = scores_of(A_SINGLE, SINGLE, ["syntactic:nsubj"], arc_direction="head_to_dependent")
    assert rev["syntactic:nsubj"] == pytest.approx(0.0)  # A[2, 1] = 0
    both = scores_of(A_SINGLE, SINGLE, ["syntactic:nsubj"], arc_direction="both")
    assert both["syntactic:nsubj"] == pytest.approx(0.5)


def test_multi_piece_words_and_relation_union():
    item = make_input(
        [1, 0, 0, 1], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0],
        arcs=[Arc((1, 2), (3,), "amod"), Arc((2,), (1,), "det")],
    )
    s = scores_of(A_SINGLE, item, ["syntactic:amod", "syntactic", "syntactic:nsubj", "syntactic:det"])
    # mean_a in {1,2} of A[a, 3] = (0 + 1) / 2, over the mean row mean 1/4
    assert s["syntactic:amod"] == pytest.approx(2.0)
    assert s["syntactic"] == pytest.approx(2.0)  # det is not among the default relations
    assert np.isnan(s["syntactic:nsubj"])  # no nsubj arc: the input does not take part
    assert s["syntactic:det"] == pytest.approx(0.0)


def test_block_on_a_pair_and_nan_on_a_single():
    # [CLS] a [SEP] b [SEP]: segments A A A B B
    pair = make_input([1, 0, 1, 0, 1], [1, 0, 0, 0, 0], [0, 0, 1, 0, 1], [0, 0, 0, 1, 1], is_pair=True)
    attn = torch.full((5, 5), 0.2)
    attn[1] = torch.tensor([0.0, 0.5, 0.0, 0.5, 0.0])
    s = scores_of(attn, pair, ["block", "delimiter_sep"])
    # block sieve: {1} for queries of A ([CLS], a, first [SEP]), {3} for queries of B (b, last [SEP])
    assert s["block"] == pytest.approx((1 + 2.5 + 1 + 1 + 1) / 5)
    assert s["delimiter_sep"] == pytest.approx((1 + 0 + 1 + 1 + 1) / 5)
    assert np.isnan(scores_of(A_SINGLE, SINGLE, ["block"])["block"])


def test_uniform_attention_scores_one_for_every_role():
    attn = torch.full((4, 4), 0.25)
    s = scores_of(attn, SINGLE, ["local", "delimiter", "delimiter_cls", "delimiter_sep", "syntactic"])
    assert all(v == pytest.approx(1.0) for v in s.values())


def test_padding_does_not_change_scores():
    roles = ["local", "delimiter", "delimiter_cls", "delimiter_sep", "syntactic"]
    alone, _ = score_batch(A_SINGLE[None, None, None], [SINGLE], roles)
    padded = torch.zeros(1, 1, 1, 7, 7)
    padded[..., :4, :4] = A_SINGLE
    padded[..., 4:, :] = 1 / 7  # garbage rows of padded queries
    assert np.allclose(score_batch(padded, [SINGLE], roles)[0], alone)


def test_user_registered_role():
    def previous(layout, options):
        return np.eye(layout.length, k=-1, dtype=bool)

    register_role("previous_test", previous)
    try:
        s = scores_of(A_SINGLE, SINGLE, ["previous_test"])
        # rows 1..3 have sieve {i-1}: 4*A[1,0]=2, 4*A[2,1]=0, 4*A[3,2]=1; row 0 has an empty sieve
        assert s["previous_test"] == pytest.approx((2 + 0 + 1) / 3)
    finally:
        unregister_role("previous_test")


def test_a_user_role_with_a_batched_sieve_scores_like_its_per_sequence_sieve():
    def previous(layout, options):
        return np.eye(layout.length, k=-1, dtype=bool)

    def previous_batched(layout, window):
        n = layout.real.shape[1]
        idx = torch.arange(n)
        return (idx[:, None] - idx[None, :] == 1)[None]

    register_role("previous_batched_test", lambda layout, options: np.zeros((1, 1), bool), batched=previous_batched)
    try:
        s = scores_of(A_SINGLE, SINGLE, ["previous_batched_test"])
        assert s["previous_batched_test"] == pytest.approx((2 + 0 + 1) / 3)  # the per-sequence sieve was not used
    finally:
        unregister_role("previous_batched_test")


def reference_scores(attn: np.ndarray, item: EncodedInput, window: int) -> dict:
    """Straight loops over METHODS 1.2 for one head (no vectorisation), for the comparison test."""
    n = item.length
    out = {}
    sieves = {
        "local": lambda i: [j for j in range(n) if abs(i - j) <= window],
        "delimiter": lambda i: list(np.flatnonzero(item.special)),
        "delimiter_cls": lambda i: list(np.flatnonzero(item.cls)),
        "delimiter_sep": lambda i: list(np.flatnonzero(item.sep)),
    }
    for role, sieve in sieves.items():
        vals = [np.mean(attn[i, sieve(i)]) / np.mean(attn[i, :n]) for i in range(n) if sieve(i)]
        out[role] = np.mean(vals)
    arcs = [a for a in item.arcs if a.relation in ("nsubj", "dobj", "amod", "advmod")]
    if arcs:
        vals = []
        for arc in arcs:
            num = np.mean([np.mean(attn[a, list(arc.head)]) for a in arc.dependent])
            den = np.mean([np.mean(attn[a, :n]) for a in arc.dependent])
            vals.append(num / den)
        out["syntactic"] = np.mean(vals)
    return out


def test_pipeline_matches_straight_computation_from_hf_attentions(tiny_model):
    from headstats.model.encoding import encode_records
    from headstats.engine.forward import forward_attentions, pad_batch
    from headstats.inputs.records import Record, Word

    words = (Word("the", 0, 3, 1, "det"), Word("cat", 4, 7, 2, "nsubj"), Word("sat", 8, 11, -1, "root"),
             Word("quickly", 12, 19, 2, "advmod"))
    records = [Record("0", "the cat sat quickly", words_a=words), Record("1", "a dog ran", "the bird sat")]
    enc = encode_records(records, tiny_model.tokenizer)
    roles = ["local", "delimiter", "delimiter_cls", "delimiter_sep", "syntactic"]
    for item in enc.inputs:
        batch = pad_batch([item], tiny_model.tokenizer.pad_token_id)
        attn = forward_attentions(tiny_model, batch)
        got, _ = score_batch(attn, [item], roles)
        for layer in range(tiny_model.n_layers):
            for head in range(tiny_model.n_heads):
                want = reference_scores(attn[0, layer, head].detach().numpy().astype(float), item, 2)
                for r, role in enumerate(roles):
                    if role in want:
                        assert got[0, layer, head, r] == pytest.approx(want[role], rel=1e-5)
                    else:
                        assert np.isnan(got[0, layer, head, r])
