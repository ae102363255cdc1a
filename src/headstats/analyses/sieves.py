"""Sieve bias scores (Pande et al., AAAI 2021; METHODS 1.2-1.3), vectorised over batch, layers and heads.

For a head's attention matrix ``A`` over the n real positions of an input, a role f with sieve ``S_f(i)``
has the token-level bias

    b_f(i) = mean_{j in S_f(i)} A[i, j]  /  mean_{j < n} A[i, j]

(uniform attention gives exactly 1) and the per-input score is the mean of ``b_f(i)`` over the counted
queries with a non-empty sieve. For a dependency arc from dependent word d to head word g with piece sets
``P_d`` and ``P_g``:

    b(d -> g) = mean_{a in P_d} [ mean_{b in P_g} A[a, b] ]  /  mean_{a in P_d} [ mean_{j < n} A[a, j] ]

and the per-input score of a relation is the mean of ``b`` over that relation's arcs (NaN when the input
has none). All functions take attention of shape (B, L, H, N, N) and return scores of shape (B, L, H, R).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from headstats.model.encoding import EncodedInput
from headstats.engine.batch import BatchLayout, BatchView, row_means, view_of
from headstats.analyses.roles import SequenceLayout, get_role, role_relation

__all__ = ["ARC_DIRECTIONS", "BatchLayout", "ScoreSettings", "arc_bias", "row_means", "score_batch",
           "score_view", "sieve_bias", "sieve_bias_of_keys"]

ARC_DIRECTIONS = ("dependent_to_head", "head_to_dependent", "both")


@dataclass(frozen=True)
class ScoreSettings:
    """The options of the scores (METHODS 1.1).

    Attributes
    ----------
    window : int
        w of the ``local`` sieve, ``|i - j| <= w``.
    count_special_queries : bool
        Whether [CLS]/[SEP] rows count as queries of sieve roles (the paper counts them).
    arc_direction : {"dependent_to_head", "head_to_dependent", "both"}
        Which end of an arc is the query; ``both`` scores each arc in both directions, as two arcs.
    relations : tuple of str
        Relations whose union forms the ``syntactic`` role (canonical labels).
    """

    window: int = 2
    count_special_queries: bool = True
    arc_direction: str = "dependent_to_head"
    relations: tuple[str, ...] = ("nsubj", "dobj", "amod", "advmod")

    def __post_init__(self):
        if self.window < 0:
            raise ValueError(f"window must be >= 0, not {self.window}")
        if self.arc_direction not in ARC_DIRECTIONS:
            raise ValueError(f"arc_direction must be one of {ARC_DIRECTIONS}, not {self.arc_direction!r}")

    @classmethod
    def from_options(cls, options) -> "ScoreSettings":
        """Build from any object with the same attributes (e.g. the protocol's ``ScoringOptions``)."""
        return cls(
            window=options.window,
            count_special_queries=options.count_special_queries,
            arc_direction=options.arc_direction,
            relations=tuple(options.relations),
        )


def sieve_bias(
    attn: torch.Tensor, sieves: torch.Tensor, queries: torch.Tensor, real: torch.Tensor,
    *, means: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-input sieve bias scores for R sieves at once.

    Parameters
    ----------
    attn : Tensor (B, L, H, N, N)
    sieves : bool Tensor (B, R, N, N)
        ``sieves[b, r, i, j]``: key j is in the sieve of query i for role r (padded keys are ignored).
    queries : bool Tensor (B, R, N)
        Queries that count for role r (padded queries are ignored).
    real : bool Tensor (B, N)
    means : Tensor (B, L, H, N), optional
        :func:`row_means` of ``attn`` when already computed.

    Returns
    -------
    Tensor (B, L, H, R)
        Mean over counted queries with a non-empty sieve of ``b_f(i)``; NaN when there is none.
    """
    keys = (sieves & real[:, None, None, :]).to(attn.dtype)
    return sieve_bias_of_keys(attn, keys, queries, real, row_means(attn, real) if means is None else means)


def sieve_bias_of_keys(attn: torch.Tensor, keys: torch.Tensor, queries: torch.Tensor, real: torch.Tensor,
                       means: torch.Tensor) -> torch.Tensor:
    """:func:`sieve_bias` from the sieves as 0/1 weights of real keys, ``keys`` (B, R, N, N) in attn's dtype."""
    size = keys.sum(-1)
    inside = torch.einsum("blhij,brij->blhri", attn, keys) / size[:, None, None]
    bias = inside / means[:, :, :, None, :]
    counted = (queries & real[:, None, :] & (size > 0)).to(attn.dtype)
    total = (torch.nan_to_num(bias, nan=0.0, posinf=0.0) * counted[:, None, None]).sum(-1)
    return total / counted.sum(-1)[:, None, None]


def arc_bias(
    attn: torch.Tensor,
    query_weights: torch.Tensor,
    key_weights: torch.Tensor,
    membership: torch.Tensor,
    real: torch.Tensor,
    *,
    means: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-input arc scores for R arc roles at once.

    Parameters
    ----------
    attn : Tensor (B, L, H, N, N)
    query_weights, key_weights : Tensor (B, K, N)
        ``1 / |P|`` on the pieces of each arc's query end and key end (zero rows for padding arcs).
    membership : bool Tensor (B, K, R)
        Whether arc k counts for role r.
    real : bool Tensor (B, N)
    means : Tensor (B, L, H, N), optional
        :func:`row_means` of ``attn`` when already computed.

    Returns
    -------
    Tensor (B, L, H, R)
        Mean of ``b(d -> g)`` over the arcs of each role; NaN for an input without such an arc.
    """
    to_keys = torch.einsum("blhac,bkc->blhak", attn, key_weights)
    numerator = torch.einsum("blhak,bka->blhk", to_keys, query_weights)
    means = row_means(attn, real) if means is None else means
    denominator = torch.einsum("blha,bka->blhk", means, query_weights)
    bias = torch.nan_to_num(numerator / denominator, nan=0.0, posinf=0.0)
    member = membership.to(attn.dtype)
    return torch.einsum("blhk,bkr->blhr", bias, member) / member.sum(1)[:, None, None]


def _user_sieve(spec, inputs: Sequence[EncodedInput], width: int, options: ScoreSettings, device) -> torch.Tensor:
    out = np.zeros((len(inputs), width, width), dtype=bool)
    for row, item in enumerate(inputs):
        layout = SequenceLayout(item.length, item.special, item.cls, item.sep, item.segment, item.is_pair)
        mask = np.asarray(spec.sieve(layout, options), dtype=bool)
        if mask.shape != (item.length, item.length):
            raise ValueError(
                f"sieve of role {spec.name!r} returned shape {mask.shape}; expected {(item.length, item.length)}"
            )
        out[row, : item.length, : item.length] = mask
    return torch.from_numpy(out).to(device)


def _arc_tensors(
    inputs: Sequence[EncodedInput], width: int, arc_roles: list[tuple[int, str | None]], settings: ScoreSettings, device
):
    """Query/key piece weights of every arc, and which arc roles each arc counts for."""
    rows = []
    for item in inputs:
        arcs = []
        for arc in item.arcs:
            if settings.arc_direction in ("dependent_to_head", "both"):
                arcs.append((arc.dependent, arc.head, arc.relation))
            if settings.arc_direction in ("head_to_dependent", "both"):
                arcs.append((arc.head, arc.dependent, arc.relation))
        rows.append(arcs)
    K = max(1, max(len(r) for r in rows))
    q = np.zeros((len(inputs), K, width), dtype=np.float32)
    k = np.zeros((len(inputs), K, width), dtype=np.float32)
    relation = np.full((len(inputs), K), "", dtype=object)
    for weights, end in ((q, 0), (k, 1)):
        cells = [(b, a, piece, 1.0 / len(arc[end])) for b, arcs in enumerate(rows)
                 for a, arc in enumerate(arcs) for piece in arc[end]]
        if cells:
            b, a, p, w = (list(x) for x in zip(*cells))
            weights[b, a, p] = np.asarray(w, dtype=np.float32)
    for b, arcs in enumerate(rows):
        relation[b, : len(arcs)] = [arc[2] for arc in arcs]
    member = np.zeros((len(inputs), K, len(arc_roles)), dtype=bool)
    for r, (_, wanted) in enumerate(arc_roles):
        member[:, :, r] = np.isin(relation, list(settings.relations)) if wanted is None else relation == wanted
    as_t = lambda x: torch.from_numpy(x).to(device)  # noqa: E731
    return as_t(q), as_t(k), as_t(member)


def score_view(view: BatchView, roles: Sequence[str], settings: ScoreSettings = ScoreSettings()) -> torch.Tensor:
    """Scores of every role for every input, layer and head of one batch view.

    The view's masks and row means are shared with every other collector of the batch.

    Parameters
    ----------
    view : BatchView
        One model's attention over one right-padded batch.
    roles : sequence of str
        Registered role names or ``syntactic:<rel>``.
    settings : ScoreSettings

    Returns
    -------
    Tensor (B, L, H, R), the attention's dtype (float32); NaN where the input does not take part in a role.
    """
    attn = view.attention
    B, L, H, N, _ = attn.shape
    device = attn.device
    layout = view.layout
    out = torch.full((B, L, H, len(roles)), float("nan"), dtype=attn.dtype, device=device)

    sieve_cols, sieve_masks, query_masks = [], [], []
    arc_cols, arc_roles = [], []
    base_queries = layout.real if settings.count_special_queries else layout.real & ~layout.special
    for col, name in enumerate(roles):
        spec = get_role(name)
        if spec.kind == "arc":
            arc_cols.append(col)
            arc_roles.append((col, role_relation(name)))
            continue
        if spec.batched is not None:
            mask = spec.batched(layout, settings.window)
        else:
            mask = _user_sieve(spec, view.inputs, N, settings, device)
        queries = base_queries & layout.is_pair[:, None] if spec.pairs_only else base_queries
        sieve_cols.append(col)
        sieve_masks.append(mask)
        query_masks.append(queries)
    if sieve_cols:
        keys = torch.zeros((B, len(sieve_masks), N, N), dtype=attn.dtype, device=device)
        for r, mask in enumerate(sieve_masks):
            keys[:, r] = mask
        keys *= layout.real[:, None, None, :]
        scores = sieve_bias_of_keys(attn, keys, torch.stack(query_masks, 1), layout.real, view.row_means)
        _put(out, sieve_cols, scores)
    if arc_cols:
        q, k, member = _arc_tensors(view.inputs, N, arc_roles, settings, device)
        _put(out, arc_cols, arc_bias(attn, q, k, member, layout.real, means=view.row_means))
    return out


def _put(out: torch.Tensor, cols: list[int], values: torch.Tensor) -> None:
    """``out[..., cols] = values`` with slices (cheaper than an index_put)."""
    if cols == list(range(cols[0], cols[0] + len(cols))):
        out[..., cols[0]: cols[0] + len(cols)] = values
    else:
        for i, col in enumerate(cols):
            out[..., col] = values[..., i]


def score_batch(
    attn: torch.Tensor,
    inputs: Sequence[EncodedInput],
    roles: Sequence[str],
    settings: ScoreSettings = ScoreSettings(),
) -> np.ndarray:
    """Scores of every role for every input, layer and head of a batch (see :func:`score_view`).

    Parameters
    ----------
    attn : Tensor (B, L, H, N, N)
        Attention of a right-padded batch (``N`` = the longest input of the batch).
    inputs : sequence of EncodedInput
        The batch's inputs, in the order of ``attn``.
    roles : sequence of str
    settings : ScoreSettings

    Returns
    -------
    ndarray (B, L, H, R), float64; NaN where the input does not take part in a role.
    """
    return score_view(view_of(attn, inputs), roles, settings).detach().double().cpu().numpy()
