"""Ceilings, length-free scales and the published code's variants on planted maps (METHODS 1.6).

Every expected value is computed by hand or by the published notebooks' formulas written out straight here,
with loops over queries as the notebooks do.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from headstats.analyses.sieves import ScoreSettings
from headstats.model.encoding import Arc

from analyses.test_sieves import A_SINGLE, SINGLE, make_input, score_batch


def run(attn, item, roles, **settings):
    scores, ceilings = score_batch(attn[None, None, None], [item], roles, ScoreSettings(**settings))
    return dict(zip(roles, scores[0, 0, 0])), dict(zip(roles, ceilings[0]))


ROLES = ["local", "delimiter", "delimiter_cls", "delimiter_sep", "syntactic:nsubj"]


def test_ceilings_of_a_single_sentence_by_hand():
    _, c = run(A_SINGLE, SINGLE, ROLES, window=1)
    # n = 4; local w = 1 windows of sizes 2, 3, 3, 2
    assert c["local"] == pytest.approx((4 / 2 + 4 / 3 + 4 / 3 + 4 / 2) / 4)
    assert c["delimiter"] == pytest.approx(4 / 2)
    assert c["delimiter_cls"] == pytest.approx(4.0)
    assert c["delimiter_sep"] == pytest.approx(4.0)
    assert c["syntactic:nsubj"] == pytest.approx(4.0)  # one key piece
    # w = 2 on n = 4: windows 3, 4, 4, 3
    _, c2 = run(A_SINGLE, SINGLE, ["local"], window=2)
    assert c2["local"] == pytest.approx((4 / 3 + 1 + 1 + 4 / 3) / 4)


def test_a_perfect_head_reaches_the_ceiling_and_no_map_exceeds_it():
    n, w = 7, 2
    item = make_input([1, 0, 0, 0, 0, 0, 1], [1] + [0] * 6, [0] * 6 + [1], [0] * 7)
    perfect = torch.zeros(n, n)
    for i in range(n):
        window = [j for j in range(n) if abs(i - j) <= w]
        perfect[i, window] = 1 / len(window)
    s, c = run(perfect, item, ["local"], window=w)
    assert s["local"] == pytest.approx(c["local"], rel=1e-6)
    assert c["local"] == pytest.approx(np.mean([n / len([j for j in range(n) if abs(i - j) <= w]) for i in range(n)]))
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = torch.from_numpy(rng.dirichlet(np.full(n, 0.3), size=n).astype(np.float32))
        s, c = run(a, item, ["local", "delimiter_cls"], window=w)
        assert s["local"] <= c["local"] + 1e-5 and s["delimiter_cls"] <= c["delimiter_cls"] + 1e-5


def test_mass_and_ceiling_scales_by_hand():
    s, c = run(A_SINGLE, SINGLE, ROLES, window=1, scale="mass")
    # local w = 1: rows {0,1} 0.3, {0,1,2} 1.0, {1,2,3} 1.0, {2,3} 0.5
    assert s["local"] == pytest.approx((0.3 + 1.0 + 1.0 + 0.5) / 4)
    assert s["delimiter_cls"] == pytest.approx((0.1 + 0.5 + 0.0 + 0.25) / 4)
    assert s["delimiter"] == pytest.approx((0.5 + 0.5 + 1.0 + 0.5) / 4)
    assert s["syntactic:nsubj"] == pytest.approx(0.25)  # A[1, 2]
    assert all(v == pytest.approx(1.0) for v in c.values())
    bias, ceiling = run(A_SINGLE, SINGLE, ROLES, window=1)
    s, c = run(A_SINGLE, SINGLE, ROLES, window=1, scale="ceiling")
    for role in ROLES:
        assert s[role] == pytest.approx(bias[role] / ceiling[role], rel=1e-6)
        assert c[role] == pytest.approx(1.0)
    # per role: only local in mass; the others keep the bias score
    s, c = run(A_SINGLE, SINGLE, ROLES, window=1, scale={"default": "bias", "local": "mass"})
    assert s["local"] == pytest.approx(0.7) and c["local"] == pytest.approx(1.0)
    assert s["delimiter_cls"] == pytest.approx(bias["delimiter_cls"]) and c["delimiter_cls"] == pytest.approx(4.0)


def test_mass_of_a_multi_piece_arc():
    item = make_input([1, 0, 0, 0, 1], [1, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0] * 5,
                      arcs=[Arc((1,), (2, 3), "amod")])
    attn = torch.full((5, 5), 0.2)
    attn[1] = torch.tensor([0.1, 0.1, 0.3, 0.4, 0.1])
    s, c = run(attn, item, ["syntactic:amod"], scale="mass")
    assert s["syntactic:amod"] == pytest.approx(0.7)
    b, cb = run(attn, item, ["syntactic:amod"])
    assert b["syntactic:amod"] == pytest.approx(0.35 / 0.2)
    assert cb["syntactic:amod"] == pytest.approx(5 / 2)


# --------------------------------------------------------------------------------- the published variants
def notebook_local(A: np.ndarray) -> float:
    """The notebooks' local score (w = 2), as they compute it: the window's upper clip is one past the end."""
    n = A.shape[0]
    total = 0.0
    for i in range(n):
        lo, hi = max(0, i - 2), min(i + 3, n)
        divisor = min(i + 3, n + 1) - lo
        total += (A[i, lo:hi].sum() / divisor) / (A[i, :].sum() / n)
    return total / n


def notebook_block(A: np.ndarray, segment_a_end: int) -> float:
    """The notebooks' block score: [CLS] a.. | [SEP] b.. [SEP]; the first [SEP] (at segment_a_end) in B, each
    ratio times the entropy (nats) of its row."""
    n = A.shape[0]
    a_tokens = list(range(1, segment_a_end))
    b_tokens = list(range(segment_a_end + 1, n - 1))
    total = 0.0
    for i in range(n):
        own = a_tokens if i < segment_a_end else b_tokens
        ratio = (A[i, own].sum() / len(own)) / (A[i, :].sum() / n)
        entropy = -sum(p * math.log(p) for p in A[i] if p > 0)
        total += ratio * entropy
    return total / n


def random_map(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(n, 0.5), size=n)


@pytest.mark.parametrize("n", [5, 6, 9])
def test_published_local_edges_match_the_notebook(n):
    item = make_input([1] + [0] * (n - 2) + [1], [1] + [0] * (n - 1), [0] * (n - 1) + [1], [0] * n)
    A = random_map(n, n)
    s, c = run(torch.tensor(A, dtype=torch.float32), item, ["local"], window=2, local_edges="published")
    assert s["local"] == pytest.approx(notebook_local(A), rel=1e-4)
    exact, _ = run(torch.tensor(A, dtype=torch.float32), item, ["local"], window=2)
    assert exact["local"] != pytest.approx(s["local"], rel=1e-4)
    sizes = [min(i + 3, n + 1) - max(0, i - 2) for i in range(n)]  # the notebook's divisors
    assert sizes[-2:] == [5, 4]
    assert c["local"] == pytest.approx(np.mean([n / d for d in sizes]), rel=1e-6)


@pytest.mark.parametrize("a_len,b_len", [(2, 3), (4, 1), (3, 3)])
def test_published_block_matches_the_notebook(a_len, b_len):
    # [CLS] a_1..a_k [SEP] b_1..b_m [SEP]
    n = a_len + b_len + 3
    sep_a = a_len + 1
    special = [1] + [0] * a_len + [1] + [0] * b_len + [1]
    sep = [0] * n
    sep[sep_a] = sep[-1] = 1
    segment = [0] * (sep_a + 1) + [1] * (n - sep_a - 1)
    item = make_input(special, [1] + [0] * (n - 1), sep, segment, is_pair=True)
    A = random_map(n, a_len * 10 + b_len)
    t = torch.tensor(A, dtype=torch.float32)
    s, c = run(t, item, ["block"], block_entropy=True, first_sep_segment="B")
    assert s["block"] == pytest.approx(notebook_block(A, sep_a), rel=1e-4)
    # each variant alone differs from the default
    default, _ = run(t, item, ["block"])
    only_sep, _ = run(t, item, ["block"], first_sep_segment="B")
    assert only_sep["block"] != pytest.approx(default["block"], rel=1e-6)
    # the first [SEP] queries B: its ratio uses the B tokens
    b_tokens = list(range(sep_a + 1, n - 1))
    a_tokens = list(range(1, sep_a))
    moved = (A[sep_a, b_tokens].mean() - A[sep_a, a_tokens].mean()) * n / n
    assert only_sep["block"] - default["block"] == pytest.approx(moved, rel=1e-4, abs=1e-6)
    # the ceiling of a perfect head (evenly over its sieve): n / |S| * ln |S|
    sizes = [a_len if i < sep_a else b_len for i in range(n)]
    assert c["block"] == pytest.approx(np.mean([n / k * math.log(k) for k in sizes]), rel=1e-6)
