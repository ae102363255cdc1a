"""Attention measures without attention maps: the fused SDPA kernel, and only the weights a collector needs.

The eager path asks the model for every attention map, ``L x H x T x T`` weights per input, and derives the
measures from them. Most role scores need far less: the mass of each query's row over a few keys. This
module runs the model with an attention function registered through transformers' ``AttentionInterface``
(:data:`MAP_FREE`) that calls the fused scaled-dot-product kernel, keeps each query row's log-sum-exp
``lse_i = log sum_j exp(s_ij)`` (``s_ij = scale q_i . k_j + mask_ij``), and computes, layer by layer, what a
:class:`Gather` asks for, each weight as ``A[i, j] = exp(s_ij - lse_i)``:

``columns``
    ``sum_j A[i, j] w_cj`` for key weights ``w_c`` that are the same for every query of an input. *Sparse* ones
    (at most :data:`MAX_SPARSE_KEYS` keys per input: [CLS], [SEP], the delimiter sieves) from the scores of their
    keys alone; *dense* ones (one column per segment for ``block`` on pairs) need every weight of the row (below);
``diagonals``
    ``A[i, i + d]`` per offset d (the ``local`` sieve): one dot product per query and offset;
``pairs``
    ``A[i, j]`` at listed (input, query, key) positions (dependency arcs), the same way;
``entropy``
    ``-sum_j A[i, j] ln A[i, j] = lse_i - sum_j A[i, j] s_ij``, which needs every weight of the row.

What needs every weight of a row (dense columns, entropy) is read, up to :data:`SCORES_MAX_WIDTH` pieces, from
the layer's weights ``exp(s - lse)`` (B, H, T, T), formed from one product ``Q K^T`` and dropped within the
layer; in wider batches, as extra value columns of a second fused call (``[V | K | W]``; the kernel wants
queries and keys as wide as the values, so they get zero columns, which add nothing to ``s_ij``). So no
``layers x heads x T x T`` tensor is ever made, and the model's own attention output is the kernel's.

One attention path for every pass of the runner. The layer's output is always the one plain fused call's,
whatever the pass computes beside it: each job that gathers has its own recorder (:class:`_Pass`), fed the same
queries, keys and log-sum-exp, and a pass whose other collectors read whole maps gets them from the same layer
(``softmax(scale Q K^T + mask)``, transformers' eager formula on the fused pass's queries and keys). So a job's
numbers are a function of the job, its batch and its model alone: the role scores of a chunk are the same
bytes whether they run alone or beside clustering, and so are clustering's whether the role scores share the
pass or not (``tests/engine/test_attention_path.py``). The path is named in the cache keys
(:data:`ATTENTION_PATH`) and the run's manifest (``execution.attention``).

The mask is registered with the function: transformers builds none for an attention name it does not know
(padded keys would then be attended). It is the eager one, additive float, which the CPU kernel needs (it
refuses a boolean mask for this call; one that arrives anyway is made additive). The kernel that returns the
log-sum-exp is the CPU flash kernel (``aten._scaled_dot_product_flash_attention_for_cpu``) or, on CUDA, the
memory-efficient one (``aten._scaled_dot_product_efficient_attention``); on other devices, or where that kernel
refuses the shapes, the layer's rows are computed in plain torch (``B x H x T x T`` at a time).

Not served by a gather: the norm-weighted measure (METHODS 6.1, which reweights every key by its value norm),
and every analysis that reads whole maps (clustering, pictures, dependency, ...): their collectors get the maps of
the same pass (:attr:`~headstats.engine.collector.Collector.map_free`,
:func:`~headstats.engine.runner.runs_map_free`). A model whose attention does not dispatch through transformers'
``AttentionInterface`` runs transformers' eager attention for every job instead (``attention: eager`` in the
manifest).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from headstats.lazy import torch

#: The attention name registered in transformers' ``AttentionInterface`` and ``AttentionMaskInterface``.
MAP_FREE = "headstats_map_free"
#: The attention path of the runner's passes, as cache keys and manifests name it: every layer's output from the
#: fused SDPA kernel, gathers and maps from its queries and keys (this module); bump the number when what this
#: path computes changes. :data:`EAGER_PATH`: transformers' eager attention with its maps (``Runner(map_free=False)``,
#: or a model that does not dispatch through ``AttentionInterface``).
ATTENTION_PATH = "fused-sdpa/2"
EAGER_PATH = "eager"


@dataclass
class Gather:
    """What a map-free pass computes of every layer's attention ``A`` (B, H, T, T) of one padded batch.

    Attributes
    ----------
    columns : dict of str to Tensor (B, C, T)
        Key weights, the same for every query of an input; the pass gives ``sum_j A[i, j] w[b, c, j]``.
    diagonals : set of int
        Offsets d; the pass gives ``A[i, i + d]`` (0 where ``i + d`` is outside the batch's width).
    pairs : dict of str to (Tensor, Tensor, Tensor)
        (input, query, key) positions, int64 (P,); the pass gives ``A[b, :, i, j]``.
    entropy : bool
        Whether the pass gives each row's entropy in nats, ``-sum_j A[i, j] ln A[i, j]``.
    """

    columns: dict[str, Any] = field(default_factory=dict)
    diagonals: set[int] = field(default_factory=set)
    pairs: dict[str, tuple[Any, Any, Any]] = field(default_factory=dict)
    entropy: bool = False

    def update(self, other: "Gather") -> "Gather":
        """Add what ``other`` asks for (a name asked twice must mean the same weights)."""
        self.columns.update(other.columns)
        self.diagonals |= set(other.diagonals)
        self.pairs.update(other.pairs)
        self.entropy = self.entropy or other.entropy
        return self


@dataclass
class Gathered:
    """What a :class:`Gather` asked for, over every layer: ``columns[name]`` (B, L, H, T, C), ``diagonals[d]``
    (B, L, H, T), ``pairs[name]`` (P, L, H), ``entropy`` (B, L, H, T) or None; float32."""

    columns: dict[str, Any]
    diagonals: dict[int, Any]
    pairs: dict[str, Any]
    entropy: Any = None
    #: Whether every row's log-sum-exp was finite (else the model gave NaN or inf attention somewhere).
    finite: bool = True

    def diagonal(self, d: int) -> torch.Tensor:
        return self.diagonals[d]


#: Key columns with at most this many non-zero keys in every input are computed from their keys' scores alone
#: (``exp(s_ij - lse_i)``); denser ones (``block``'s segments) as extra value columns of the fused call.
MAX_SPARSE_KEYS = 32


class _Recorder:
    """The per-layer results of one map-free forward pass (the attention function appends one per call).

    Key columns are split in two groups: *sparse* ones (every input has at most :data:`MAX_SPARSE_KEYS` keys with
    a non-zero weight: [CLS], [SEP]) are read from the scores of those keys, gathered once per batch as ``index``
    (B, K) with their weights (B, C, K); *dense* ones become extra value columns of the fused call.
    """

    def __init__(self, gather: Gather) -> None:
        self.gather = gather
        self.sparse_names, self.dense_names = [], []
        for name, weights in gather.columns.items():
            keys = int((weights != 0).any(1).sum(-1).max()) if weights.numel() else 0
            (self.sparse_names if keys <= MAX_SPARSE_KEYS else self.dense_names).append(name)
        self.dense = self._joined(self.dense_names)
        self.index = self.sparse = None
        joined = self._joined(self.sparse_names)
        if joined is not None:
            B, C, T = joined.shape
            support = (joined != 0).any(1)  # (B, T)
            K = max(1, int(support.sum(-1).max()))
            # each input's keys with a weight first (stable: in position order), then position 0 with weight 0
            self.index = torch.argsort((~support).to(torch.int8), dim=-1, stable=True)[:, :K]
            kept = support.gather(1, self.index).to(torch.float32)
            self.sparse = joined.gather(2, self.index[:, None, :].expand(B, C, K)) * kept[:, None, :]
        self.layers: list[dict[str, Any]] = []

    def _joined(self, names: list[str]) -> torch.Tensor | None:
        return torch.cat([self.gather.columns[n] for n in names], 1).float() if names else None

    def result(self) -> Gathered:
        if not self.layers:
            raise RuntimeError("the model called no attention function: it does not dispatch through "
                               "transformers' AttentionInterface, so it cannot run map-free")

        def stack(key: str) -> torch.Tensor:
            return torch.stack([layer[key] for layer in self.layers], 1)

        columns = {}
        for group, names in (("sparse", self.sparse_names), ("dense", self.dense_names)):
            if not names:
                continue
            every = stack(group)  # (B, L, H, T, C)
            start = 0
            for name in names:
                size = int(self.gather.columns[name].shape[1])
                columns[name] = every[..., start:start + size]
                start += size
        diagonals = {d: torch.stack([layer["diagonals"][d] for layer in self.layers], 1)
                     for d in sorted(self.gather.diagonals)}
        pairs = {name: torch.stack([layer["pairs"][name] for layer in self.layers], 1) for name in self.gather.pairs}
        entropy = stack("row_entropy") if self.gather.entropy else None
        finite = bool(torch.stack([layer["finite"] for layer in self.layers]).all())
        return Gathered(columns, diagonals, pairs, entropy, finite)


class _Pass:
    """One forward pass through :data:`MAP_FREE`: a :class:`_Recorder` per job that gathers (each computes what its
    own :class:`Gather` asks, whatever the others ask), and whether the layers also return their attention maps
    (``maps``: for the collectors of the pass that read whole maps). ``calls`` counts the layers that called it.

    With ``n_layers``, the layers' maps are written into one (B, L, H, T, T) float32 tensor, :attr:`stacked` (layer
    ``l`` returns its slice ``[:, l]``), and each layer's scores into one buffer of the pass: the same numbers as
    stacking the layers' own maps, without a second copy of them or a fresh buffer per layer."""

    def __init__(self, gathers: Sequence[Gather], maps: bool, n_layers: int | None = None) -> None:
        self.recorders = [_Recorder(gather) for gather in gathers]
        self.maps = maps
        self.calls = 0
        self.n_layers = n_layers
        #: (B, L, H, T, T): every layer's maps, when the pass asks for maps of ``n_layers`` layers.
        self.stacked: torch.Tensor | None = None
        self._scores: torch.Tensor | None = None

    def layer_maps(self, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None,
                   scale: float) -> torch.Tensor:
        """The calling layer's maps (:func:`_maps`), in :attr:`stacked` where the layers' shapes allow."""
        layer = self.calls - 1
        B, H, T, _ = query.shape
        shape = (B, self.n_layers or 0, H, T, key.shape[2])
        if self.n_layers is None or layer >= self.n_layers or (layer > 0 and (
                self.stacked is None or self.stacked.shape != shape)):
            self.stacked = None  # a layer the tensor was not made for: stack the layers' own maps
            return _maps(query, key, mask, scale)
        if layer == 0:
            self.stacked = torch.empty(shape, dtype=torch.float32, device=query.device)
        scores = self._scores
        if scores is None or scores.shape != (B, H, T, shape[-1]) or scores.dtype != query.dtype:
            scores = self._scores = torch.empty((B, H, T, shape[-1]), dtype=query.dtype, device=query.device)
        return _maps(query, key, mask, scale, out=self.stacked[:, layer], scores=scores)

    def holds(self, attentions: Sequence[torch.Tensor]) -> bool:
        """Whether ``attentions`` (the model's, one per layer) are the slices of :attr:`stacked`, untouched."""
        stacked = self.stacked
        return (stacked is not None and len(attentions) == stacked.shape[1]
                and all(a.data_ptr() == stacked[:, k].data_ptr() and a.shape == stacked[:, k].shape
                        and a.stride() == stacked[:, k].stride() for k, a in enumerate(attentions)))


_ACTIVE: ContextVar[_Pass | None] = ContextVar("headstats_map_free_pass", default=None)


def _attend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None,
            scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(scale Q K^T + mask) V`` and each row's log-sum-exp (B, H, T), float32, from a fused kernel."""
    if query.device.type == "cpu":
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(query, key, value, attn_mask=mask,
                                                                               scale=scale)
        return out, lse.float()
    if query.device.type == "cuda":
        try:
            bias = None if mask is None else _aligned_bias(mask.to(query.dtype), query.shape[1])
            out, lse, *_ = torch.ops.aten._scaled_dot_product_efficient_attention(query, key, value, bias, True,
                                                                                  scale=scale)
            return out, lse[..., : query.shape[2]].float()
        except RuntimeError:  # a head size or alignment the kernel does not take: the per-layer form below
            pass
    scores = torch.matmul(query.float(), key.float().transpose(-1, -2)) * scale
    if mask is not None:
        scores = scores + mask.float()
    lse = torch.logsumexp(scores, -1)
    return torch.matmul(torch.exp(scores - lse[..., None]), value.float()).to(value.dtype), lse


#: The CUDA memory-efficient kernel takes an additive bias only with strides that are multiples of this
#: (elements); a (B, 1, T, T) mask of odd T is refused ("attn_bias is not correctly aligned"), as
#: ``F.scaled_dot_product_attention`` knows and pads for.
BIAS_ALIGNMENT = 16


def _aligned_bias(mask: torch.Tensor, heads: int) -> torch.Tensor:
    """``mask`` (B, 1, T, S) as a (B, heads, T, S) view of a tensor whose last dimension is padded to a multiple of
    :data:`BIAS_ALIGNMENT`, so that the kernel's stride checks pass (the head dimension is broadcast, stride 0)."""
    B, _, T, S = mask.shape
    padded = torch.zeros(B, 1, T, S + (-S) % BIAS_ALIGNMENT, dtype=mask.dtype, device=mask.device)
    padded[..., :S] = mask
    return padded[..., :S].expand(B, heads, T, S)


#: Dense key columns and the entropy need every weight of a row. Up to this width (pieces) they are read from
#: the layer's (B, H, T, T) weights, formed from one product ``Q K^T`` and dropped in the layer; wider batches
#: get them as extra value columns of a second fused call (no (T, T) matrix at all).
SCORES_MAX_WIDTH = 160


def map_free_attention(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                       attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                       **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The attention function of :data:`MAP_FREE` (transformers' signature: query, key, value (B, H, T, d),
    an additive float mask (B, 1, T, T) or None; returns the output (B, T, H, d) and the weights or None).

    Outside :func:`gathering` it is plain SDPA. Inside, the layer's output is always the one fused call's
    (:func:`_attend`), whatever the pass gathers or returns, so the hidden states of a pass, and with them every
    number of every job, do not depend on which other jobs share it; each recorder then computes what its own
    :class:`Gather` asks from the same queries, keys and log-sum-exp; and, when the pass asks for maps, the layer
    returns its weights ``softmax(scale Q K^T + mask)`` (float32, :func:`_maps`) for the collectors that read them.
    """
    active = _ACTIVE.get()
    if active is None or dropout:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    active.calls += 1
    mask = attention_mask
    if mask is not None and mask.dtype == torch.bool:  # the CPU kernel wants it additive
        mask = torch.zeros(mask.shape, dtype=query.dtype, device=query.device).masked_fill(
            ~mask, torch.finfo(query.dtype).min)
    B, H, T, d = query.shape
    scale = float(scaling) if scaling is not None else d ** -0.5
    out, lse = _attend(query, key, value, mask, scale)
    finite = torch.isfinite(lse).all() if active.recorders else None
    for recorder in active.recorders:
        layer: dict[str, Any] = {"finite": finite}
        if recorder.dense is not None or recorder.gather.entropy:  # every weight of a row
            if T > SCORES_MAX_WIDTH:
                _widened(recorder, query, key, value, mask, scale, layer)
            else:
                _from_weights(recorder, query, key, mask, scale, lse, layer)
        _gathered(recorder, query, key, mask, scale, lse, layer)
        recorder.layers.append(layer)
    weights = active.layer_maps(query, key, mask, scale) if active.maps else None
    return out.transpose(1, 2).contiguous(), weights


def _maps(query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None, scale: float, *,
          out: torch.Tensor | None = None, scores: torch.Tensor | None = None) -> torch.Tensor:
    """The layer's attention weights ``softmax(scale Q K^T + mask)`` (B, H, T, T), float32: transformers' eager
    formula on the queries and keys of the fused pass (a padded key's weight is exactly 0). ``out``: where to write
    them; ``scores``: a (B, H, T, T) buffer of the queries' dtype for ``Q K^T`` (scaled and masked in place: the
    same numbers)."""
    scores = torch.matmul(query, key.transpose(-1, -2), out=scores)
    scores.mul_(scale)
    if mask is not None:
        if mask.dtype == scores.dtype:
            scores.add_(mask)
        else:  # the sum's promoted dtype, as ``scores + mask`` gives
            scores = scores + mask
    return torch.softmax(scores, -1, dtype=torch.float32, out=out)


def _from_weights(recorder: _Recorder, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None,
                  scale: float, lse: torch.Tensor, layer: dict[str, Any]) -> None:
    """Dense key columns and the entropy from the layer's weights ``exp(s - lse)`` (B, H, T, T), formed here and
    dropped on return (``s = scale Q K^T + mask``; a padded key's weight is exactly 0)."""
    scores = torch.matmul(query.float(), key.float().transpose(-1, -2)).mul_(scale)
    if mask is not None:
        scores += mask.float()
    weights = torch.exp(scores - lse[..., None])
    if recorder.dense is not None:
        layer["dense"] = torch.matmul(weights, recorder.dense.transpose(1, 2)[:, None])
    if recorder.gather.entropy:  # -sum_j A ln A = lse - sum_j A s_ij
        layer["row_entropy"] = lse - (weights * scores).sum(-1)


def _widened(recorder: _Recorder, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
             mask: torch.Tensor | None, scale: float, layer: dict[str, Any]) -> None:
    """Dense key columns and the entropy from a second fused call, with them (and ``V = K`` for the entropy) as
    extra value columns; the kernel wants queries and keys as wide as the values: zeros, which add nothing to
    ``s_ij``. Only its extra columns are kept: the layer's output is the plain call's, the same in every pass."""
    B, H, T, d = query.shape
    extra = [key] if recorder.gather.entropy else []
    if recorder.dense is not None:
        extra.append(recorder.dense.transpose(1, 2)[:, None].to(value.dtype).expand(B, H, T, -1))
    extra_values = torch.cat(extra, -1)
    zeros = query.new_zeros(B, H, T, extra_values.shape[-1])
    out, lse = _attend(torch.cat([query, zeros], -1), torch.cat([key, zeros], -1),
                       torch.cat([value, extra_values], -1), mask, scale)
    rest = out[..., d:].float()
    if recorder.gather.entropy:
        layer["row_entropy"] = lse - scale * (query.float() * rest[..., :d]).sum(-1)
        rest = rest[..., d:]
    if recorder.dense is not None:
        layer["dense"] = rest


def _gathered(recorder: _Recorder, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None,
              scale: float, lse: torch.Tensor, layer: dict[str, Any]) -> None:
    """The weights asked for one by one, ``A[i, j] = exp(scale q_i . k_j + mask_ij - lse_i)``: the keys of the
    sparse columns, the diagonals, the pairs. Queries and keys are read in (B, T, H, d) order, how the model's
    projections lay them out."""
    gather = recorder.gather
    B, H, T, d = query.shape
    qt, kt, lse_t = query.float().transpose(1, 2), key.float().transpose(1, 2), lse.transpose(1, 2)
    if recorder.sparse is not None:
        index = recorder.index  # (B, K): the keys of the sparse columns
        K = index.shape[1]
        keys = kt.gather(1, index[:, :, None, None].expand(B, K, H, d))  # (B, K, H, d)
        if K <= 4:  # a few keys ([CLS], [SEP]): one dot product per key, cheaper than a batched product
            score = torch.stack([torch.linalg.vecdot(qt, keys[:, k:k + 1]) for k in range(K)], -1)
            score = score.transpose(1, 2).mul_(scale)  # (B, H, T, K)
        else:
            score = torch.einsum("bthd,bkhd->bhtk", qt, keys).mul_(scale)
        if mask is not None:
            score += mask[:, 0].float().gather(-1, index[:, None, :].expand(B, T, -1))[:, None]
        layer["sparse"] = torch.matmul(torch.exp(score - lse[..., None]), recorder.sparse.transpose(1, 2)[:, None])
    offsets = sorted(gather.diagonals)
    if offsets:
        band = qt.new_full((B, T, H, len(offsets)), float("-inf"))  # A[i, i + o] for every offset o
        for k, offset in enumerate(offsets):
            rows = slice(max(0, -offset), T - max(0, offset))  # queries i with key i + offset inside the width
            keys = slice(max(0, offset), T - max(0, -offset))
            band[:, rows, :, k] = torch.linalg.vecdot(qt[:, rows], kt[:, keys])
        band.mul_(scale)
        if mask is not None:
            at = torch.arange(T, device=band.device)[:, None] + torch.tensor(offsets, device=band.device)[None, :]
            band += mask[:, 0].float().gather(-1, at.clamp(0, T - 1).expand(B, T, -1))[:, :, None, :]
        band.sub_(lse_t[..., None]).exp_()
        layer["diagonals"] = {offset: band[..., k].transpose(1, 2) for k, offset in enumerate(offsets)}
    else:
        layer["diagonals"] = {}
    layer["pairs"] = {}
    if gather.pairs:
        flat_q, flat_k, flat_lse = qt.reshape(B * T, H, d), kt.reshape(B * T, H, d), lse_t.reshape(B * T, H)
    for name, (b, i, j) in gather.pairs.items():
        rows, cols = b * T + i, b * T + j
        score = torch.linalg.vecdot(flat_q.index_select(0, rows), flat_k.index_select(0, cols)).mul_(scale)  # (P, H)
        if mask is not None:
            score += mask[b, 0, i, j].float()[:, None]
        layer["pairs"][name] = torch.exp(score - flat_lse.index_select(0, rows))


def register() -> None:
    """Register :data:`MAP_FREE` with transformers (idempotent): the attention function, and the eager
    (additive float) mask under the same name, without which the model would build no padding mask."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(MAP_FREE, map_free_attention)
    AttentionMaskInterface.register(MAP_FREE, eager_mask)


@contextmanager
def gathering(model: Any, *gathers: Gather, maps: bool = False, n_layers: int | None = None) -> Iterator[_Pass]:
    """Run ``model`` through :data:`MAP_FREE` inside the block: every layer's output is the fused kernel's, each
    of ``gathers`` is computed by its own recorder (``active.recorders[k].result()`` after the forward pass),
    and with ``maps`` every layer also returns its attention weights (ask the model for ``output_attentions``),
    written into one (B, L, H, T, T) tensor (``active.stacked``) when the model's ``n_layers`` are given.
    The model's attention implementation is restored on the way out."""
    register()
    config = model.config
    before = config._attn_implementation
    active = _Pass(gathers, maps, n_layers)
    token = _ACTIVE.set(active)
    config._attn_implementation = MAP_FREE
    try:
        yield active
    finally:
        config._attn_implementation = before
        _ACTIVE.reset(token)
