"""Offset-matched control of the syntactic sieves (METHODS 6.2): is a head's bias toward an arc's other end
more than its bias toward any word at the same word offset?

Let an arc of relation r go from query word q to key word k (dependent to head under the paper's arc direction),
with word offset ``o = index(k) - index(q)`` inside one segment. With ``b(u -> w)`` the word-level bias of
METHODS 1.3,

    b(u -> w) = mean_{a in P_u} mean_{b in P_w} A[a, b]  /  mean_{a in P_u} mean_{j < n} A[a, j],

the arc's control is the head's mean bias toward the word at the same offset from the other words of the segment,
and its excess the difference:

    c(q, o) = mean_{u != q, u + o in the segment} b(u -> u + o)
    e(q -> k) = b(q -> k) - c(q, o).

An arc with no other word at offset o is left out (counted). Per input, the excess of a relation is the mean of
``e`` over its arcs (NaN without such an arc); per head, H0: mean excess <= 0 against H1: > 0. A head that
attends to the next word whatever it is has excess about 0 on ``amod``; a head that follows the arc has a
positive excess. This is Clark et al.'s (2019) fixed-offset baseline, per head and per sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from headstats.analyses import collector_options
from headstats.analyses.offset_control.options import OffsetControlOptions, control_hypotheses, control_roles
from headstats.analyses.offset_control.tables import OFFSET_CONTROL_INPUTS
from headstats.analyses.sieves import ARC_DIRECTIONS
from headstats.engine.batch import BatchView, row_means
from headstats.engine.collector import Context, PerInputCollector
from headstats.lazy import torch
from headstats.model.encoding import EncodedInput



@dataclass
class WordArcs:
    """The words and arcs of a batch, as word indices.

    Attributes
    ----------
    weights : Tensor (B, U, T)
        ``1 / |P_u|`` on the pieces of word u (zero rows for padded words).
    segment : ndarray (B, U) of int
        The segment of each word (-1 for padded words).
    arcs : list of list of (int, int, str)
        Per input, (query word, key word, relation) of every arc kept, in the arc direction asked for.
    """

    weights: torch.Tensor
    segment: np.ndarray
    arcs: list[list[tuple[int, int, str]]]


def word_arcs(inputs: Sequence[EncodedInput], width: int, relations: Sequence[str], direction: str,
              device: torch.device | str = "cpu") -> WordArcs:
    """The words of every input (with pieces) and its arcs of ``relations`` as word indices."""
    if direction not in ARC_DIRECTIONS:
        raise ValueError(f"arc direction must be one of {', '.join(ARC_DIRECTIONS)}, not {direction!r}")
    U = max([1] + [len(item.word_pieces) for item in inputs])
    weights = np.zeros((len(inputs), U, width), dtype=np.float32)
    segment = np.full((len(inputs), U), -1, dtype=np.int64)
    arcs: list[list[tuple[int, int, str]]] = []
    wanted = set(relations)
    for b, item in enumerate(inputs):
        index = {}
        for u, pieces in enumerate(item.word_pieces):
            if not pieces:
                continue
            weights[b, u, list(pieces)] = 1.0 / len(pieces)
            segment[b, u] = int(item.segment[pieces[0]])
            index.setdefault(tuple(pieces), u)
        kept = []
        for arc in item.arcs:
            d, g = index.get(tuple(arc.dependent)), index.get(tuple(arc.head))
            if arc.relation not in wanted or d is None or g is None or segment[b, d] != segment[b, g]:
                continue
            if direction in ("dependent_to_head", "both"):
                kept.append((d, g, arc.relation))
            if direction in ("head_to_dependent", "both"):
                kept.append((g, d, arc.relation))
        arcs.append(kept)
    return WordArcs(torch.from_numpy(weights).to(device), segment, arcs)


def word_bias(attn: torch.Tensor, weights: torch.Tensor, real: torch.Tensor, *,
              means: torch.Tensor | None = None) -> torch.Tensor:
    """``b(u -> w)`` of METHODS 1.3 for every pair of words: (B, L, H, U, U) from attention (B, L, H, T, T),
    word weights (B, U, T) and the real positions (B, T); ``means``: :func:`row_means` of ``attn`` when already
    computed (a view's :attr:`~headstats.engine.batch.BatchView.row_means`). Rows of padded words are NaN."""
    B, L, H, T, _ = attn.shape
    rows = torch.matmul(weights[:, None], attn.reshape(B, L * H, T, T))  # (B, LH, U, T)
    numerator = torch.matmul(rows, weights[:, None].transpose(-1, -2)).reshape(B, L, H, weights.shape[1], -1)
    means = row_means(attn, real) if means is None else means
    denominator = torch.einsum("blht,but->blhu", means, weights)
    return numerator / denominator[..., None]


def offset_excess(attn: torch.Tensor, words: WordArcs, real: torch.Tensor,
                  roles: Sequence[Sequence[str]], *, means: torch.Tensor | None = None) -> tuple[torch.Tensor, np.ndarray]:
    """Per input, the mean excess ``e`` over the arcs of each arc role: (B, L, H, R), NaN where an input has no
    arc of the role with a control; and the number of arcs left out for want of a control, per input and role.

    ``roles``: per role, the relations whose arcs it counts (one for ``syntactic:<rel>``, the protocol's relations
    for ``syntactic``).
    """
    B, L, H = attn.shape[:3]
    U = words.weights.shape[1]
    bias = word_bias(attn, words.weights, real, means=means)  # (B, L, H, U, U)
    K = max([1] + [len(a) for a in words.arcs])
    control = np.zeros((B, K, U, U), dtype=np.float32)  # weights of the words at the arc's offset
    at = np.zeros((B, K, U, U), dtype=np.float32)  # the arc itself
    relation = np.full((B, K), "", dtype=object)
    usable = np.zeros((B, K), dtype=bool)
    for b, arcs in enumerate(words.arcs):
        seg = words.segment[b]
        for a, (q, k, rel) in enumerate(arcs):
            o = k - q
            same = np.flatnonzero(seg == seg[q])
            members = set(same.tolist())
            others = [u for u in same if u != q and (u + o) in members]
            relation[b, a] = rel
            if not others:
                continue
            usable[b, a] = True
            at[b, a, q, k] = 1.0
            control[b, a, others, [u + o for u in others]] = 1.0 / len(others)
    as_t = lambda x: torch.from_numpy(x).to(attn.device)  # noqa: E731
    finite = torch.nan_to_num(bias, nan=0.0)  # NaN only on padded words, which no weight selects
    excess = torch.einsum("blhuv,bkuv->blhk", finite, as_t(at) - as_t(control))  # (B, L, H, K)
    out = torch.full((B, L, H, len(roles)), float("nan"), dtype=attn.dtype, device=attn.device)
    left_out = np.zeros((B, len(roles)), dtype=np.int64)
    for r, counted in enumerate(roles):
        member = np.isin(relation, list(counted))
        left_out[:, r] = (member & ~usable).sum(1)
        weights = as_t((member & usable).astype(np.float32))  # (B, K)
        count = weights.sum(1)
        mean = torch.einsum("blhk,bk->blh", excess, weights) / count[:, None, None]
        out[..., r] = torch.where(count[:, None, None] > 0, mean, float("nan"))
    return out, left_out


class OffsetControl(PerInputCollector):
    """Per input, layer and head, the mean offset-matched excess of every arc role (``syntactic`` over the
    relations, then ``syntactic:<rel>`` for each): a :class:`~headstats.measures.MeasureArray` whose declared
    hypotheses (H0: mean excess <= 0, one-sided, with the protocol's test and correction) give
    ``offset_control_tests``."""

    version = "1"

    def __init__(self, context: Context) -> None:
        self.options = collector_options(context, OffsetControlOptions)
        self.roles = control_roles(self.options.relations)
        super().__init__(context, [name for name, _ in self.roles])
        self._left_out = np.zeros(len(self.roles), dtype=np.int64)

    def update(self, view: BatchView) -> None:
        words = word_arcs(view.inputs, view.width, self.options.relations, self.options.arc_direction,
                          view.attention.device)
        excess, left_out = offset_excess(view.attention, words, view.real, [r for _, r in self.roles],
                                         means=view.row_means)  # shared with the role scores of the batch
        self._left_out += left_out.sum(0)
        self.keep(view, excess)

    def hypotheses(self) -> list[dict]:
        """One per arc role: the head's bias toward the arc's other end beats its bias at the same offset."""
        return control_hypotheses([name for name, _ in self.roles])

    def tables(self) -> dict[str, pd.DataFrame]:
        """``offset_control_inputs``: per arc role, the inputs with an arc of it that has a control."""
        values = self.state().values
        return {OFFSET_CONTROL_INPUTS.name: pd.DataFrame({
            "model": self.context.model, "dataset": self.context.dataset, "role": [n for n, _ in self.roles],
            "n_taking_part": [int(np.isfinite(values[:, 0, 0, r]).sum()) for r in range(len(self.roles))]})}
