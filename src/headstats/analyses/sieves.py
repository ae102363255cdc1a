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

__all__ = ["ARC_DIRECTIONS", "BatchLayout", "ScoreSettings", "arc_bias", "row_means", "score_batch", "sieve_bias_of_columns",
           "sieve_bias_of_diagonals",
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


def sieve_bias_of_columns(attn: torch.Tensor, columns: torch.Tensor, queries: torch.Tensor, real: torch.Tensor,
                          means: torch.Tensor) -> torch.Tensor:
    """:func:`sieve_bias_of_keys` for sieves whose keys are the same for every query (the delimiter roles).

    ``columns`` (B, R, N) holds the keys of each role as 0/1 weights of real keys, in attn's dtype. The sums
    inside the sieves are one batched product ``attn @ columns`` over all layers, heads and queries (the
    per-query form would copy the attention to put the query axis first).
    """
    B, L, H, N, _ = attn.shape
    size = columns.sum(-1)  # (B, R)
    inside = torch.bmm(attn.reshape(B, L * H * N, N), columns.transpose(1, 2)).reshape(B, L, H, N, -1)
    bias = inside.transpose(-1, -2) / size[:, None, None, :, None] / means[:, :, :, None, :]
    counted = (queries & real[:, None, :] & (size > 0)[:, :, None]).to(attn.dtype)
    total = (torch.nan_to_num(bias, nan=0.0, posinf=0.0) * counted[:, None, None]).sum(-1)
    return total / counted.sum(-1)[:, None, None]


#: A sieve the same for every input whose keys lie on at most this many diagonals is summed diagonal by diagonal.
MAX_DIAGONALS = 16


def _few_diagonals(mask: torch.Tensor) -> bool:
    """Whether ``mask`` (1, N, N) is the same for every input and non-zero on at most :data:`MAX_DIAGONALS`
    diagonals."""
    if mask.dim() != 3 or mask.shape[0] != 1 or mask.shape[1] != mask.shape[2]:
        return False
    rows, cols = mask[0].nonzero(as_tuple=True)
    return int(torch.unique(cols - rows).numel()) <= MAX_DIAGONALS


def sieve_bias_of_diagonals(attn: torch.Tensor, mask: torch.Tensor, queries: torch.Tensor, real: torch.Tensor,
                            means: torch.Tensor) -> torch.Tensor:
    """:func:`sieve_bias_of_keys` for one sieve that is the same for every input and lies on a few diagonals.

    ``mask`` (N, N) bool: key j is in the sieve of query i; ``queries`` (B, N) the counted queries. The sum
    inside the sieve of query i is ``sum_d A[i, i + d] mask[i, i + d] real[i + d]`` over the mask's diagonal
    offsets d, read from strided views of the attention (no product over all keys). Returns (B, L, H).
    """
    n = mask.shape[-1]
    realf = real.to(attn.dtype)
    maskf = mask.to(attn.dtype)
    size = realf @ maskf.T  # (B, N): real keys in the sieve of each query
    inside = torch.zeros(means.shape, dtype=attn.dtype, device=attn.device)
    rows, cols = mask.nonzero(as_tuple=True)
    for d in torch.unique(cols - rows).tolist():
        q = slice(max(0, -d), n - max(0, d))  # queries i with key i + d inside the map
        k = slice(max(0, d), n - max(0, -d))
        weight = maskf.diagonal(d)[None] * realf[:, k]  # (B, n - |d|)
        inside[..., q] += attn.diagonal(d, -2, -1) * weight[:, None, None]
    bias = inside / size[:, None, None] / means
    counted = (queries & real & (size > 0)).to(attn.dtype)
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
    B, L, H, N, _ = attn.shape
    # the query end's weighted rows of every map (one batched product with K rows), then their key end
    rows = torch.matmul(query_weights[:, None], attn.reshape(B, L * H, N, N))  # (B, L*H, K, N)
    numerator = (rows * key_weights[:, None]).sum(-1).reshape(B, L, H, -1)
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
    wanted = set(settings.relations) if any(w is None for _, w in arc_roles) else set()
    wanted |= {w for _, w in arc_roles if w is not None}
    rows = []
    for item in inputs:
        arcs = []
        for arc in item.arcs:
            if arc.relation not in wanted:  # an arc no role counts costs a column of the product below
                continue
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
    # sieves that give every query the same keys (shape (B, 1, N): the delimiters) take one product with the
    # attention; the others (local, block, user roles) one per query row
    same_keys = [r for r, mask in enumerate(sieve_masks) if mask.dim() == 3 and mask.shape[1] == 1]
    diagonal = [r for r, mask in enumerate(sieve_masks) if r not in same_keys and _few_diagonals(mask)]
    for r in diagonal:  # local, previous/next token...: a few diagonals of every map, summed in place
        scores = sieve_bias_of_diagonals(attn, sieve_masks[r][0], query_masks[r], layout.real, view.row_means)
        _put(out, [sieve_cols[r]], scores[..., None])
    per_query = [r for r in range(len(sieve_masks)) if r not in same_keys and r not in diagonal]
    if same_keys:
        columns = torch.cat([sieve_masks[r].expand(B, 1, N) for r in same_keys], 1) & layout.real[:, None, :]
        scores = sieve_bias_of_columns(attn, columns.to(attn.dtype), torch.stack([query_masks[r] for r in same_keys], 1),
                                       layout.real, view.row_means)
        _put(out, [sieve_cols[r] for r in same_keys], scores)
    if per_query:
        keys = torch.zeros((B, len(per_query), N, N), dtype=attn.dtype, device=device)
        for k, r in enumerate(per_query):
            keys[:, k] = sieve_masks[r]
        keys *= layout.real[:, None, None, :]
        scores = sieve_bias_of_keys(attn, keys, torch.stack([query_masks[r] for r in per_query], 1), layout.real,
                                    view.row_means)
        _put(out, [sieve_cols[r] for r in per_query], scores)
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
