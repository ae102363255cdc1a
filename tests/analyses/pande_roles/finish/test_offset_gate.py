"""The offset gate of the role assignment (METHODS 6.2) on planted attention over parsed sentences.

Head 0 attends to the next word whatever it is (pure position); head 1 follows the dependency arcs. Both beat
tau = 3 on ``syntactic:amod`` and ``syntactic:advmod`` (their arcs run to the next word), the gate removes head 0
and keeps head 1; with the gate off both are assigned. The control's columns are checked against a hand
computation of METHODS 6.2 (loops over arcs and words), scipy's t-test and statsmodels' Holm.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats
from statsmodels.stats.multitest import multipletests

from headstats.analyses.offset_control.collect import offset_excess, word_arcs
from headstats.analyses.offset_control.options import control_roles
from headstats.analyses.sieves import ScoreSettings, score_and_ceilings
from headstats.analyses.pande_roles.finish.offset_gate import OFFSET_COLUMNS
from headstats.tables.study_tables import gate_summary
from headstats.analyses.pande_roles.finish.tables import analyse
from headstats.config.protocol import StatisticsOptions
from headstats.engine.batch import view_of
from headstats.measures import MeasureArray
from headstats.model.encoding import Arc, EncodedInput

W = 6  # words per sentence: [CLS] w0 .. w5 [SEP], word u is piece u + 1
N = W + 2
RELATIONS = ["amod", "advmod"]
ROLES = ["syntactic", "syntactic:amod", "syntactic:advmod"]


def sentence(i: int, arcs: list[tuple[int, int, str]]) -> EncodedInput:
    special = np.zeros(N, bool)
    special[[0, N - 1]] = True
    return EncodedInput(i, f"s{i}", np.arange(N), np.zeros(N, int), special, special & (np.arange(N) == 0),
                        special & (np.arange(N) == N - 1), np.zeros(N, int), False,
                        word_pieces=[(u + 1,) for u in range(W)],
                        arcs=[Arc((d + 1,), (g + 1,), rel) for d, g, rel in arcs])


def corpus(n: int, rng: np.random.Generator) -> tuple[list[EncodedInput], torch.Tensor]:
    """``n`` sentences, each with an amod and an advmod arc to the next word (an adjective before its noun, an
    adverb before its verb), and planted maps (1 layer, 2 heads): 0.7 of each row on the planted key, 0.3 spread
    at random (a Dirichlet row)."""
    inputs, maps = [], np.zeros((n, 1, 2, N, N))
    for i in range(n):
        d_amod, d_adv = rng.choice(W - 1, size=2, replace=False)
        arcs = [(int(d_amod), int(d_amod) + 1, "amod"), (int(d_adv), int(d_adv) + 1, "advmod")]
        inputs.append(sentence(i, arcs))
        heads_of = {d + 1: g + 1 for d, g, _ in arcs}
        for h in range(2):
            for q in range(N):
                if h == 0:  # the next piece, whatever it is ([SEP] attends to [CLS])
                    key = q + 1 if q < N - 1 else 0
                else:  # the arc's head word from a dependent, [CLS] from every other piece
                    key = heads_of.get(q, 0)
                maps[i, 0, h, q] = 0.3 * rng.dirichlet(np.ones(N))
                maps[i, 0, h, q, key] += 0.7
    return inputs, torch.tensor(maps, dtype=torch.float32)


def hand_excess(A: np.ndarray, item: EncodedInput, relations: list[str]) -> float:
    """METHODS 6.2 by loops: per arc (d -> g) of the relations, b(d -> g) minus the mean of b(u -> u + o) over
    the other words u with a word at offset o; the input's excess is the mean over its arcs (single-piece words,
    so b(u -> w) = A[p_u, p_w] / mean_j A[p_u, j])."""
    def b(u: int, w: int) -> float:
        return A[u + 1, w + 1] / A[u + 1].mean()

    values = []
    for arc in item.arcs:
        if arc.relation not in relations:
            continue
        d, g = arc.dependent[0] - 1, arc.head[0] - 1
        o = g - d
        others = [u for u in range(W) if u != d and 0 <= u + o < W]
        if others:
            values.append(b(d, g) - np.mean([b(u, u + o) for u in others]))
    return float(np.mean(values)) if values else np.nan


@pytest.fixture(scope="module")
def planted():
    inputs, attn = corpus(40, np.random.default_rng(7))
    view = view_of(attn, inputs, model="planted", dataset="parsed")
    scores, ceilings = score_and_ceilings(view, ROLES, ScoreSettings(roles=ROLES, relations=RELATIONS))
    words = word_arcs(inputs, N, RELATIONS, "dependent_to_head")
    roles = control_roles(RELATIONS)
    excess, _ = offset_excess(attn, words, view.real, [r for _, r in roles])
    ids = [x.sentence_id for x in inputs]
    role_scores = MeasureArray("planted", "parsed", np.array(ids), tuple(ROLES), scores.numpy(),
                               ceilings=ceilings.numpy())
    control = MeasureArray("planted", "parsed", np.array(ids), tuple(n for n, _ in roles), excess.numpy())
    return inputs, attn.numpy(), role_scores, control


def _analysed(planted, gate: bool):
    _, _, role_scores, control = planted
    statistics = StatisticsOptions(tau=3.0, test="t", correction="holm", sensitivity=False, offset_gate=gate)
    return analyse([role_scores], statistics, offset_control=[control])


def _held(roles: pd.DataFrame, head: int, role: str) -> bool:
    return bool(roles.loc[roles["head"] == head, role].iloc[0])


def test_the_gate_removes_the_next_word_head_and_keeps_the_arc_head(planted):
    on, off = _analysed(planted, True), _analysed(planted, False)
    for role in ("syntactic:amod", "syntactic:advmod", "syntactic"):
        tests = on.tests[on.tests["role"] == role].set_index("head")
        # both heads pass tau on their scores (the next word is the arc's head), by a wide margin
        assert (tests["mean"] > 5).all() and (tests["p_corr"] < 1e-10).all()
        assert not _held(on.roles, 0, role) and _held(on.roles, 1, role)  # the gate: position removed
        assert _held(off.roles, 0, role) and _held(off.roles, 1, role)  # no gate: both, as Pande et al.
        assert tests.loc[0, "gate_removed"] == True and tests.loc[1, "gate_removed"] == False  # noqa: E712
    summary = gate_summary(on.tests)
    assert summary["n_removed"].tolist() == [1, 1, 1] and summary["n_assigned"].tolist() == [1, 1, 1]
    # off: the control's columns are still filled (it was computed), nothing is gated
    assert off.tests["gate_removed"].isna().all()
    pd.testing.assert_series_equal(on.tests["offset_p_corr"], off.tests["offset_p_corr"])


def test_the_control_columns_are_methods_6_2_by_hand_with_scipy_and_holm(planted):
    inputs, A, _, _ = planted
    tests = _analysed(planted, True).tests
    assert list(tests.columns[-len(OFFSET_COLUMNS):]) == list(OFFSET_COLUMNS)
    expected = {}
    for role, relations in control_roles(RELATIONS):
        for head in range(2):
            e = np.array([hand_excess(A[i, 0, head], item, list(relations)) for i, item in enumerate(inputs)])
            e = e[np.isfinite(e)]
            t = stats.ttest_1samp(e, 0.0, alternative="greater")
            expected[(role, head)] = (len(e), e.mean(), t.confidence_interval(0.95).low, t.pvalue)
    keys = list(expected)
    p_holm = multipletests([expected[k][3] for k in keys], method="holm")[1]  # family: the model on the data set
    for k, p_corr in zip(keys, p_holm):
        row = tests[(tests["role"] == k[0]) & (tests["head"] == k[1])].iloc[0]
        n, mean, low, p = expected[k]
        assert row["offset_n"] == n == 40
        assert row["offset_excess"] == pytest.approx(mean, rel=1e-5, abs=1e-5)  # float32 maps
        assert row["offset_ci_low"] == pytest.approx(low, rel=1e-5, abs=1e-5)
        assert row["offset_ci_high"] == np.inf
        assert row["offset_p_unc"] == pytest.approx(p, rel=1e-4, abs=1e-12)
        assert row["offset_p_corr"] == pytest.approx(p_corr, rel=1e-4, abs=1e-12)
        assert bool(row["offset_reject"]) == (p_corr <= 0.05)
    # the next-word head's excess is about 0 (its mean within a few standard errors), the arc head's about 4.4
    next_word = expected[("syntactic:amod", 0)]
    assert abs(next_word[1]) < 0.5 and expected[("syntactic:amod", 1)][1] > 3


def test_roles_the_control_does_not_cover_are_not_gated(planted):
    _, _, role_scores, control = planted
    # a control of amod only: syntactic:advmod has no control row, so its NaN columns leave it as the score test says
    only_amod = MeasureArray(control.model, control.dataset, control.sentence_ids, ("syntactic:amod",),
                             control.values[..., [1]])
    statistics = StatisticsOptions(tau=3.0, test="t", correction="holm", sensitivity=False)
    tests = analyse([role_scores], statistics, offset_control=[only_amod]).tests
    advmod = tests[tests["role"] == "syntactic:advmod"]
    assert advmod["offset_p_corr"].isna().all() and advmod["gate_removed"].isna().all() and advmod["reject"].all()
    # no control at all: every offset column NaN, nothing gated
    tests = analyse([role_scores], statistics).tests
    assert tests[list(OFFSET_COLUMNS)].isna().all().all() and tests["reject"].all()
