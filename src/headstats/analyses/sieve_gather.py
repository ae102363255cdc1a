"""The role scores of a map-free pass (:mod:`headstats.engine.mapfree`): what to gather, and the scores from it.

A role's score needs, per query, only the attention mass inside its sieve (and the row means, arcs' weights,
row entropies for the published ``block``). Each sieve is gathered in the cheapest form its mask allows:

``columns``
    the same keys for every query of an input (the delimiter roles): one key column;
``diagonals``
    the same mask for every input on at most :data:`~headstats.analyses.sieves.MAX_DIAGONALS` diagonals
    (``local``): ``A[i, i + d]`` per offset;
``rows``
    at most :data:`MAX_ROW_PATTERNS` distinct rows in each input (``block``: one per segment): one key column
    per distinct row, each query reading its own;
``pairs``
    anything else (a user's sieve): every (query, key) weight of the mask, one by one;
``none``
    no query of the batch counts (``block`` on single sentences): nothing.

Arcs are gathered weight by weight (the pieces of their two ends). The masses then go through the same
formulas as the maps' (:func:`~headstats.analyses.sieves.bias_of_mass`,
:func:`~headstats.analyses.sieves.sieve_scores_of_mass`, :func:`~headstats.analyses.sieves.arc_scores_of`), so
the two paths agree to float32 rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from headstats.lazy import torch

from headstats.engine.batch import MapFreeView
from headstats.engine.mapfree import Gather
from headstats.analyses.sieves import (ScoreSettings, _arc_tensors, _divisors, _few_diagonals, _general, _put,
                                       _sieve_ceiling, _sieves_of, arc_scores_of, bias_of_mass, diagonal_offsets,
                                       mass_of_diagonals, score_and_ceilings, sieve_scores_of_mass)

#: A sieve whose mask has at most this many distinct rows in every input is gathered as key columns.
MAX_ROW_PATTERNS = 16


@dataclass
class SievePlan:
    """How one sieve's mass is gathered (``kind``: columns, diagonals, rows or pairs; module docstring)."""

    kind: str
    name: str
    gather: Gather
    data: Any = None

    def mass(self, view: MapFreeView) -> torch.Tensor:
        """``sum_{j in S(i)} A[i, j]`` over the real keys, (B, L, H, N), from the view's gathered weights."""
        gathered = view.gathered
        B, L, H, N = view.shape
        if self.kind == "none":
            return torch.zeros((B, L, H, N), dtype=torch.float32, device=view.device)
        if self.kind == "columns":
            return gathered.columns[self.name][..., 0]
        if self.kind == "rows":
            return torch.take_along_dim(gathered.columns[self.name], self.data[:, None, None, :, None], -1)[..., 0]
        if self.kind == "diagonals":
            def diagonal(d: int) -> torch.Tensor:
                return gathered.diagonal(d)[..., max(0, -d): N - max(0, d)]
            return mass_of_diagonals(diagonal, self.data, view.real, (B, L, H, N))[0]
        b, i = self.data
        mass = torch.zeros((B, N, L, H), dtype=torch.float32, device=view.device)
        mass.index_put_((b, i), gathered.pairs[self.name], accumulate=True)
        return mass.permute(0, 2, 3, 1)


def plan_sieve(name: str, mask: torch.Tensor, queries: torch.Tensor, real: torch.Tensor) -> SievePlan:
    """The cheapest gather of a sieve ``mask`` (bool, broadcasting to (B, N, N)) over the real keys."""
    B, N = real.shape
    if not bool((queries & real).any()):  # no query counts (block on single sentences): nothing to gather
        return SievePlan("none", name, Gather())
    keys = mask & real[:, None, :]
    if mask.shape[1] == 1:
        return SievePlan("columns", name, Gather(columns={name: keys.expand(B, 1, N).to(torch.float32)}))
    if _few_diagonals(mask):
        return SievePlan("diagonals", name, Gather(diagonals=set(diagonal_offsets(mask[0]))), mask[0])
    keys = keys.expand(B, N, N) & (queries & real)[:, :, None]  # rows of queries that do not count: empty
    patterns = [torch.unique(keys[b], dim=0, return_inverse=True) for b in range(B)]
    if max(len(rows) for rows, _ in patterns) <= MAX_ROW_PATTERNS:
        U = max(len(rows) for rows, _ in patterns)
        weights = torch.zeros((B, U, N), dtype=torch.float32, device=real.device)
        for b, (rows, _) in enumerate(patterns):
            weights[b, : len(rows)] = rows.to(torch.float32)
        index = torch.stack([inverse for _, inverse in patterns])
        return SievePlan("rows", name, Gather(columns={name: weights}), index)
    b, i, j = keys.nonzero(as_tuple=True)
    return SievePlan("pairs", name, Gather(pairs={name: (b, i, j)}), (b, i))


def _plans(view: MapFreeView, roles: Sequence[str], settings: ScoreSettings) -> tuple[list[SievePlan], Any]:
    """The plan of every sieve role and the arc tensors (and their gather) of one view, computed once."""
    key = f"sieve_plans/{','.join(roles)}/{sorted(vars(settings).items())!r}"

    def compute():
        sieve_cols, masks, queries, arc_cols, arc_roles = _sieves_of(view, roles, settings)
        plans = [plan_sieve(f"role/{roles[c]}", mask, q, view.real)
                 for c, mask, q in zip(sieve_cols, masks, queries)]
        arcs = None
        if arc_cols:
            arcs = _arc_gather(view, arc_roles, settings)
        return plans, arcs
    return view.cached(key, compute)


def _arc_gather(view: MapFreeView, arc_roles, settings: ScoreSettings) -> dict:
    """Every (query piece, key piece) weight of every arc, with its weight ``1 / (|P_d| |P_g|)``, and the key
    column of the first n keys where the published n is asked for (METHODS 1.6 (c))."""
    q, k, member = _arc_tensors(view.inputs, view.width, arc_roles, settings, view.device)
    both = (q > 0)[:, :, :, None] & (k > 0)[:, :, None, :]  # (B, K, N, N): the arcs' pairs of pieces
    b, arc, i, j = both.nonzero(as_tuple=True)
    weight = q[b, arc, i] * k[b, arc, j]
    gather = Gather(pairs={"arcs": (b, i, j)})
    lengths = None
    if any(item.arc_length is not None for item in view.inputs):
        lengths = torch.tensor([item.length if item.arc_length is None else item.arc_length
                                for item in view.inputs], device=view.device)
        cut = (torch.arange(view.width, device=view.device)[None, :] < lengths[:, None]) & view.real
        gather.columns["arcs/cut"] = cut[:, None, :].to(torch.float32)
    return {"q": q, "k": k, "member": member, "b": b, "arc": arc, "weight": weight, "lengths": lengths,
            "gather": gather}


def gather_for_scores(view: MapFreeView, roles: Sequence[str], settings: ScoreSettings) -> Gather:
    """What a map-free pass must gather for :func:`~headstats.analyses.sieves.score_and_ceilings` of ``roles``."""
    plans, arcs = _plans(view, roles, settings)
    gather = Gather(entropy="block" in roles and settings.block_entropy)
    for plan in plans:
        gather.update(plan.gather)
    if arcs is not None:
        gather.update(arcs["gather"])
    return gather


def role_scores_of(view, roles: Sequence[str], settings: ScoreSettings) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores and ceilings of every role for one batch view: from its maps
    (:func:`~headstats.analyses.sieves.score_and_ceilings`), or from what a map-free pass gathered
    (:func:`map_free_scores`)."""
    if view.attention is None:
        return map_free_scores(view, roles, settings)
    return score_and_ceilings(view, roles, settings)


def map_free_scores(view: MapFreeView, roles: Sequence[str],
                    settings: ScoreSettings) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`~headstats.analyses.sieves.score_and_ceilings` of a map-free view: the same scores and ceilings from
    the gathered masses (module docstring)."""
    B, L, H, N = view.shape
    device = view.device
    layout = view.layout
    out = torch.full((B, L, H, len(roles)), float("nan"), dtype=torch.float32, device=device)
    ceilings = torch.full((B, len(roles)), float("nan"), dtype=torch.float32, device=device)
    sieve_cols, masks, queries, arc_cols, _ = _sieves_of(view, roles, settings)
    plans, arcs = _plans(view, roles, settings)
    means = view.row_means
    names = [roles[c] for c in sieve_cols]
    sizes = [(mask & layout.real[:, None, :]).sum(-1).to(torch.float32).expand(B, N) for mask in masks]
    general = [r for r, name in enumerate(names) if _general(name, settings)]
    plain = [r for r in range(len(names)) if r not in general]
    for group in (plain, general):
        if not group:
            continue
        mass = torch.stack([plans[r].mass(view) for r in group], 3)
        size = torch.stack([sizes[r] for r in group], 1)
        counted = torch.stack([queries[r] for r in group], 1)
        cols = [sieve_cols[r] for r in group]
        if group is plain:
            _put(out, cols, bias_of_mass(mass, size, counted, layout.real, means))
            for r in group:
                ceilings[:, sieve_cols[r]] = _sieve_ceiling(masks[r], queries[r], layout.real)
            continue
        gnames = [names[r] for r in group]
        entropy_roles = [k for k, name in enumerate(gnames) if name == "block" and settings.block_entropy]
        scores, ceiling = sieve_scores_of_mass(
            mass, size, counted, layout.real, means, divisor=_divisors(size, gnames, layout, settings),
            entropy=view.gathered.entropy if entropy_roles else None, entropy_roles=entropy_roles,
            scales=[settings.scale_of(name) for name in gnames])
        _put(out, cols, scores)
        ceilings[:, cols] = ceiling
    if arc_cols:
        q, member, lengths = arcs["q"], arcs["member"], arcs["lengths"]
        numerator = torch.zeros((B, q.shape[1], L, H), dtype=torch.float32, device=device)
        numerator.index_put_((arcs["b"], arcs["arc"]), view.gathered.pairs["arcs"] * arcs["weight"][:, None, None],
                             accumulate=True)
        if lengths is None:
            denominator = torch.einsum("blha,bka->blhk", means, q)
        else:
            cut = view.gathered.columns["arcs/cut"][..., 0]
            denominator = torch.einsum("blha,bka->blhk", cut, q) / lengths.to(torch.float32)[:, None, None, None]
        scores, ceiling = arc_scores_of(numerator.permute(0, 2, 3, 1), denominator, q, arcs["k"], member,
                                        layout.real, scales=[settings.scale_of(roles[c]) for c in arc_cols],
                                        lengths=lengths)
        _put(out, arc_cols, scores)
        ceilings[:, arc_cols] = ceiling
    return out, ceilings
