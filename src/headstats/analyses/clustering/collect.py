r"""Clustering heads by the Jensen-Shannon divergence of their attention (Clark et al. 2019, section 6; METHODS 2.6).

For heads a and b (any layers) and every real query i of every input, with rows smoothed as
``p = 0.999 A_a[i, :] + 0.001 / n`` and ``q`` likewise,

    JS(p, q) = 1/2 KL(p || m) + 1/2 KL(q || m) = H(m) - (H(p) + H(q)) / 2,     m = (p + q) / 2,

(in nats; the divergence, not its square root). The released code *sums* it over all queries of all inputs
(``js_sum``); ``js_mean`` divides by the number of queries, which does not depend on how many inputs were
used. The collector streams: per batch it adds each pair's sum to a (K, K) matrix (K = layers x heads) and
keeps nothing of the attention. The cost is K^2 / 2 x n^2 logarithms per input (:func:`js_sums`: each head's
entropies once, then only H(m) per pair, in float32 blocks over the real rows); only the first
``analysis_options.clustering.max_inputs`` inputs of a data set are used.

Tables:

- ``js_distance``: ``model, dataset, layer_a, head_a, layer_b, head_b, js_sum, js_mean, n_queries, n_inputs``,
  every ordered pair (the matrix is symmetric with a zero diagonal);
- ``mds``: ``model, dataset, layer, head, x, y, stress, behaviour``: a 2-D metric MDS of ``js_mean``
  (scikit-learn, ``dissimilarity="precomputed"``, seeded by the protocol's ``seed``), and each head's
  dominant behaviour from its surface measures (:func:`headstats.analyses.surface.collect.dominant_behaviour`),
  computed in the same pass on the same inputs. Embeddings are defined up to rotation and reflection.

Whether the heads of one layer sit together is tested by the analysis' ``finish`` step (a permutation test of
within- against between-layer divergence: :func:`headstats.analyses.clustering.finish.finish_clustering`), in
``clustering_tests.csv``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from headstats.analyses import collector_options
from headstats.analyses.clustering.options import ClusteringOptions
from headstats.analyses.clustering.tables import JS_DISTANCE, MDS
from headstats.analyses.kernels import thread_map
from headstats.analyses.surface.collect import SURFACE_COLUMNS, SurfacePatterns, dominant_behaviour, surface_of
from headstats.analyses.surface.options import SURFACE_MEASURES
from headstats.engine.batch import BatchView
from headstats.engine.collector import Collector, Context, Moments
from headstats.lazy import torch


#: Weight of the attention row in the smoothed row, as in Clark et al.'s code.
JS_SMOOTHING = 0.999
JS_COLUMNS = ["model", "dataset", "layer_a", "head_a", "layer_b", "head_b", "js_sum", "js_mean", "n_queries",
              "n_inputs"]
MDS_COLUMNS = ["model", "dataset", "layer", "head", "x", "y", "stress", "behaviour"]


#: Float32 values of one head-by-rows block of :func:`js_sums` (256 KiB): the block of rows of every head, its
#: offset copy, the pair sums and their logarithms (about 1 MiB in all) stay in the core's L2 cache.
JS_BLOCK = 1 << 16

#: Rows of one input given to one thread at a time by :func:`js_sums` (blocks of :data:`JS_BLOCK` inside it).
JS_ROWS_PER_JOB = 32

#: Pairs whose float32 JS sum is below this share of ``|sum s log s|`` are summed again in float64 (see
#: :func:`js_sums`).
JS_FLOAT64_BELOW = 5e-3


def pair_offsets(k: int) -> list[tuple[int, int]]:
    """The cyclic offsets that visit every unordered pair of ``k`` heads once: ``(d, m)`` pairs head ``a`` with
    head ``a + d`` for ``a < m`` (``d = 1 .. k // 2``; ``m = k``, or ``k / 2`` for the offset ``k / 2``, whose
    pairs would otherwise come twice). ``sum(m) = k (k - 1) / 2``, and every offset is one array operation over
    ``m`` heads (rather than ``k - 1`` operations of shrinking size)."""
    return [(d, d if 2 * d == k else k) for d in range(1, k // 2 + 1)]


def _js_rows(attention: np.ndarray, n: int, rows: range) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(S, E, W)`` of some rows of one input, in bits: per offset ``d`` and head ``a`` of :func:`pair_offsets`,
    ``S[d, a] = sum s log2 s`` with ``s = p_a + p_(a+d)``; each head's ``E = sum p log2 p`` and ``W = sum p``.
    ``attention`` is the input's (K, n, n) map; rows are smoothed here, a block of :data:`JS_BLOCK` values at a
    time; each row is summed in float32 and rows in float64."""
    K = attention.shape[0]
    offsets = pair_offsets(K)
    step = max(1, min(len(rows), JS_BLOCK // (K * n)))
    doubled = np.empty((2 * K, step, n), np.float32)  # p twice over: p[a + d] is doubled[a + d] for a + d >= K
    s, log = np.empty((K, step, n), np.float32), np.empty((K, step, n), np.float32)
    row_s = np.zeros((len(offsets), K, step), np.float32)  # rows m: of an offset stay 0
    row_e, row_w = np.empty((K, step), np.float32), np.empty((K, step), np.float32)
    ones = np.ones(n, np.float32)
    s_sum, e_sum, w_sum = np.zeros((len(offsets), K)), np.zeros(K), np.zeros(K)
    smooth = (1.0 - JS_SMOOTHING) / n
    for r0 in range(rows.start, rows.stop, step):
        r = min(step, rows.stop - r0)
        p, twice = doubled[:K, :r], doubled[:, :r]
        np.multiply(attention[:, r0:r0 + r, :n], JS_SMOOTHING, out=p)
        p += smooth
        twice[K:] = p
        for i, (d, m) in enumerate(offsets):
            np.add(p[:m], twice[d:d + m], out=s[:m, :r])
            np.log2(s[:m, :r], out=log[:m, :r])
            np.vecdot(s[:m, :r], log[:m, :r], out=row_s[i, :m, :r])
        s_sum += row_s[..., :r].sum(-1, dtype=np.float64)
        np.log2(p, out=log[:, :r])
        np.vecdot(p, log[:, :r], out=row_e[:, :r])
        e_sum += row_e[:, :r].sum(-1, dtype=np.float64)
        np.vecdot(p, ones, out=row_w[:, :r])
        w_sum += row_w[:, :r].sum(-1, dtype=np.float64)
    return s_sum, e_sum, w_sum


def js_sums(attention: torch.Tensor, lengths: Sequence[int] | torch.Tensor | None = None) -> torch.Tensor:
    r"""Sum over queries of the JS divergence between every pair of heads, over a batch of inputs.

    With every row smoothed as ``p = 0.999 A[i, :] + 0.001 / n`` over an input's n real keys, ``s = p + q`` and
    ``m = s / 2``, the divergence of one row (Clark et al. 2019, section 6) is

        JS(p, q) = H(m) - (H(p) + H(q)) / 2
                 = 1/2 sum_j p log p + 1/2 sum_j q log q - 1/2 sum_j s log s + (log 2) / 2 sum_j s,

    so summed over the real rows of every input it is ``(E_a + E_b) / 2 - S_ab / 2 + (log 2)(W_a + W_b) / 2``,
    with each head's ``E_a = sum p log p`` and mass ``W_a = sum p`` computed once per row, and only
    ``S_ab = sum s log s`` computed for every pair. Only the n x n real rows and keys of each input are read.
    ``S``, ``E`` and ``W`` are computed in float32 and base 2 (``S = ln 2 x sum s log2 s``: numpy's vectorised ``log2`` is the
    fastest of its logarithms), pair by cyclic offset (:func:`pair_offsets`: for each offset d one ``add``, one
    ``log2`` and one row-wise ``vecdot`` over the heads a and a + d), in blocks of rows of :data:`JS_BLOCK` values
    that stay in cache; each row is summed in float32 and the rows in float64. Blocks of
    :data:`JS_ROWS_PER_JOB` rows are shared among ``torch.get_num_threads()`` threads (numpy releases the GIL) and
    their sums are added in block order, so the result does not depend on the number of threads.

    Exactness: float32 sums of ``s log s`` were measured within 1.5e-8 of float64 ones relative to ``|S_ab|``
    (at most 3e-8 on WikiText pairs with the default model; every divergence of 16 WikiText pairs within 1.2e-7
    of the float64 pair-by-pair sums, relative); a pair whose divergence is below
    :data:`JS_FLOAT64_BELOW` x ``|S_ab|`` (near-identical heads, where the difference of large sums would lose
    digits) has its ``S``, ``E`` and ``W`` summed again in float64 (:func:`_js_float64`), so every pair is within about 2e-6 of the float64 sums, relative.
    Cost: K (K - 1) / 2 x n^2 logarithms per input of n pieces (0.6 to 0.8 ns each with the add and the
    product, on one core of an AVX-512 machine): 49 ms of CPU per WikiText pair of 128 pieces with 72 heads,
    0.43 x the forward pass (82 ms and 0.81 x before version 3; both measured at load 26 on 2 cores).

    Parameters
    ----------
    attention : Tensor (B, K, T, T) or (K, n, n)
        The K heads' attention of B inputs padded to T positions (rows sum to 1), or of one input.
    lengths : sequence of int, optional
        Each input's real positions n (default: T, every position real).

    Returns
    -------
    Tensor (K, K), float64
        Symmetric, zero diagonal: ``sum_inputs sum_i JS(p_a(i), p_b(i))``.
    """
    if attention.ndim == 3:
        attention = attention[None]
    B, K, T, _ = attention.shape
    device = attention.device
    maps = attention.detach().to("cpu", torch.float32).numpy()
    ns = [T] * B if lengths is None else [int(n) for n in np.broadcast_to(np.asarray(lengths), (B,))]
    jobs = [(b, n, range(r0, min(n, r0 + JS_ROWS_PER_JOB))) for b, n in enumerate(ns)
            for r0 in range(0, n, JS_ROWS_PER_JOB)]
    offsets = pair_offsets(K)
    s_off, entropy, mass = np.zeros((len(offsets), K)), np.zeros(K), np.zeros(K)
    for part_s, part_e, part_w in thread_map(lambda job: _js_rows(maps[job[0], :, :job[1], :job[1]], job[1], job[2]),
                                             jobs):  # in block order: the same sums whatever the threads
        s_off += part_s
        entropy += part_e
        mass += part_w
    s_ab = np.zeros((K, K))
    for i, (d, m) in enumerate(offsets):
        a = np.arange(m)
        s_ab[a, (a + d) % K] = s_off[i, :m]
    s_ab = (s_ab + s_ab.T) * math.log(2.0)  # each pair once, in either order; bits to nats
    entropy *= math.log(2.0)
    half_log2 = 0.5 * math.log(2.0)

    def divergence(sums: np.ndarray) -> np.ndarray:
        return 0.5 * (entropy[:, None] + entropy[None, :]) - 0.5 * sums + half_log2 * (mass[:, None] + mass[None, :])

    js = np.triu(divergence(s_ab), k=1)
    # near-identical heads: JS is a small difference of large sums, which float32 cannot resolve to 1e-6
    close = np.argwhere(np.triu(js < JS_FLOAT64_BELOW * np.abs(s_ab), k=1))
    if len(close):
        js[close[:, 0], close[:, 1]] = _js_float64(maps, ns, close)
    js = np.maximum(js + js.T, 0.0)
    return torch.from_numpy(js).to(device)


def _js_float64(maps: np.ndarray, ns: Sequence[int], pairs: np.ndarray) -> np.ndarray:
    """The JS sums of some pairs of heads (rows of ``pairs``), every term in float64: ``E``, ``W`` and ``S`` of
    :func:`js_sums`, an input at a time (a float64 copy of the heads named in ``pairs`` only)."""
    heads = np.unique(pairs)
    where = np.searchsorted(heads, pairs)  # the pairs' positions among ``heads``
    entropy, mass, s_ab = np.zeros(len(heads)), np.zeros(len(heads)), np.zeros(len(pairs))
    for i, n in enumerate(ns):
        p = maps[i, heads, :n, :n].astype(np.float64) * JS_SMOOTHING + (1.0 - JS_SMOOTHING) / n
        log = np.log(p)
        entropy += np.einsum("kij,kij->k", p, log)
        mass += p.sum((-1, -2))
        for a in np.unique(where[:, 0]):
            chosen = where[:, 0] == a
            pair_s = p[where[chosen, 1]] + p[a]
            s_ab[chosen] += np.einsum("kij,kij->k", pair_s, np.log(pair_s))
    a, b = where[:, 0], where[:, 1]
    return 0.5 * (entropy[a] + entropy[b]) - 0.5 * s_ab + 0.5 * math.log(2.0) * (mass[a] + mass[b])


@dataclass
class ClusteringState:
    """Sums of the JS divergence, counts, and the surface moments of the same inputs (for behaviours)."""

    js: np.ndarray  # (K, K) float64
    n_queries: int
    n_inputs: int
    surface: Moments  # (L, H, M)


class HeadClustering(Collector):
    """Streams :func:`js_sums` over the first ``max_inputs`` inputs (option, else ``analysis_options.clustering``)."""

    #: 2: :func:`js_sums` over whole batches in float32 blocks (equal to version 1's float64 sums to rtol 1e-5).
    #: 3: real keys only, pairs by cyclic offset, base-2 logarithms (equal to version 2 to rtol 1e-6).
    version = "3"

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        options = context.options
        mine: ClusteringOptions = collector_options(context, ClusteringOptions)
        self.max_inputs = mine.max_inputs
        self.seed = int(options.get("seed", context.seed))  # the embedding's, in tables(): not the state's
        self.broad_share = float(mine.broad_share)
        self._punct = options.get("punct_ids")
        k = context.n_layers * context.n_heads
        self._state = ClusteringState(np.zeros((k, k)), 0, 0,
                                      Moments.zeros((context.n_layers, context.n_heads, len(SURFACE_MEASURES))))

    punct_ids = SurfacePatterns.punct_ids  # the model's "." and "," ids, looked up once (as surface does)

    def update(self, view: BatchView) -> None:
        s = self._state
        room = view.size if self.max_inputs is None else max(0, int(self.max_inputs) - s.n_inputs)
        if room == 0:
            return
        take = list(range(min(room, view.size)))
        lengths = view.lengths[take]
        attention = view.attention[: len(take)]
        s.js += js_sums(attention.reshape(len(take), -1, *attention.shape[-2:]), lengths).cpu().numpy()
        s.n_queries += int(lengths.sum())
        s.n_inputs += len(take)
        surface = surface_of(view, self.punct_ids)[take].cpu().numpy()
        s.surface.add(surface)

    @classmethod
    def merge(cls, states: Sequence[ClusteringState]) -> ClusteringState:
        return ClusteringState(sum(s.js for s in states), sum(s.n_queries for s in states),
                               sum(s.n_inputs for s in states), Moments.combine([s.surface for s in states]))

    def distance(self) -> np.ndarray:
        """``js_mean``: the (K, K) mean divergence per query (heads in layer-major order)."""
        s = self._state
        return s.js / s.n_queries if s.n_queries else np.full_like(s.js, np.nan)

    def tables(self) -> dict[str, pd.DataFrame]:
        """``js_distance`` and ``mds`` (see the module docstring)."""
        s, ctx = self._state, self.context
        L, H = ctx.n_layers, ctx.n_heads
        k = L * H
        a, b = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
        dist = self.distance()
        js = pd.DataFrame({
            "model": ctx.model, "dataset": ctx.dataset,
            "layer_a": (a // H).ravel(), "head_a": (a % H).ravel(), "layer_b": (b // H).ravel(),
            "head_b": (b % H).ravel(), "js_sum": s.js.ravel(), "js_mean": dist.ravel(),
            "n_queries": s.n_queries, "n_inputs": s.n_inputs,
        })
        xy, stress = mds_embedding(dist, seed=self.seed)
        surface = ctx.head_frame(model=ctx.model, dataset=ctx.dataset)
        means = s.surface.mean_or_nan
        for column in SURFACE_COLUMNS[4:]:
            surface[column] = means[..., SURFACE_MEASURES.index(column)].ravel()
        mds = ctx.head_frame(model=ctx.model, dataset=ctx.dataset, x=xy[:, 0], y=xy[:, 1])
        mds["stress"] = stress
        mds["behaviour"] = dominant_behaviour(surface, broad=self.broad_share).to_numpy() if s.n_inputs else ""
        return {JS_DISTANCE.name: js[JS_COLUMNS], MDS.name: mds[MDS_COLUMNS]}


def mds_embedding(distance: np.ndarray, *, seed: int = 0, dimensions: int = 2) -> tuple[np.ndarray, float]:
    """Metric MDS of a precomputed distance matrix (scikit-learn), seeded; returns the points and the stress.

    NaN distances (no input seen) give NaN points.
    """
    k = distance.shape[0]
    if k < 3 or not np.isfinite(distance).all():
        return np.full((k, dimensions), np.nan), float("nan")
    from sklearn.manifold import MDS

    kwargs = dict(n_components=dimensions, dissimilarity="precomputed", random_state=seed, n_init=4, max_iter=3000,
                  eps=1e-9,
                  normalized_stress=False)
    try:
        mds = MDS(metric=True, init="random", **kwargs)
    except TypeError:  # scikit-learn < 1.7: no ``init``
        mds = MDS(metric=True, **kwargs)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        points = mds.fit_transform(distance)
    return points, float(mds.stress_)


