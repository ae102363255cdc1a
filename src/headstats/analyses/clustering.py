r"""Clustering heads by the Jensen-Shannon divergence of their attention (Clark et al. 2019, section 6; METHODS 2.6).

For heads a and b (any layers) and every real query i of every input, with rows smoothed as
``p = 0.999 A_a[i, :] + 0.001 / n`` and ``q`` likewise,

    JS(p, q) = 1/2 KL(p || m) + 1/2 KL(q || m) = H(m) - (H(p) + H(q)) / 2,     m = (p + q) / 2,

(in nats; the divergence, not its square root). The released code *sums* it over all queries of all inputs
(``js_sum``); ``js_mean`` divides by the number of queries, which does not depend on how many inputs were
used. The collector streams: per input it adds each pair's sum to a (K, K) matrix (K = layers x heads) and
keeps nothing of the attention. The cost is K^2 / 2 x n^2 logarithms per input (about 2 s for 72 heads at
n = 128 on one CPU core), so only the first ``analysis_options.clustering.max_inputs`` inputs of a data set are used.

Tables:

- ``js_distance``: ``model, dataset, layer_a, head_a, layer_b, head_b, js_sum, js_mean, n_queries, n_inputs``,
  every ordered pair (the matrix is symmetric with a zero diagonal);
- ``mds``: ``model, dataset, layer, head, x, y, stress, behaviour``: a 2-D metric MDS of ``js_mean``
  (scikit-learn, ``dissimilarity="precomputed"``, seeded by the protocol's ``seed``), and each head's
  dominant behaviour from its surface measures (:func:`headstats.analyses.surface.dominant_behaviour`),
  computed in the same pass on the same inputs. Embeddings are defined up to rotation and reflection.

Whether the heads of one layer sit together is tested by the analysis' ``finish`` step (a permutation test of
within- against between-layer divergence: :func:`headstats.stats.grouping.finish_clustering`), in
``clustering_tests.csv``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
from headstats.lazy import torch

from headstats.analyses import analysis_options, register_analysis
from headstats.analyses.clark_options import ClusteringOptions
from headstats.analyses.surface import (SURFACE_COLUMNS, SURFACE_MEASURES, SurfacePatterns, dominant_behaviour,
                                       surface_of)
from headstats.engine.batch import BatchView
from headstats.engine.collector import Collector, Context, Moments

#: Weight of the attention row in the smoothed row, as in Clark et al.'s code.
JS_SMOOTHING = 0.999
JS_COLUMNS = ["model", "dataset", "layer_a", "head_a", "layer_b", "head_b", "js_sum", "js_mean", "n_queries",
              "n_inputs"]
MDS_COLUMNS = ["model", "dataset", "layer", "head", "x", "y", "stress", "behaviour"]


def js_sums(maps: torch.Tensor) -> torch.Tensor:
    """Sum over queries of the JS divergence between every pair of heads, for one input.

    Parameters
    ----------
    maps : Tensor (K, n, n)
        The K heads' attention over the input's n real positions (rows sum to 1).

    Returns
    -------
    Tensor (K, K), float64
        Symmetric, zero diagonal: ``sum_i JS(p_a(i), p_b(i))`` with rows smoothed by :data:`JS_SMOOTHING`.
    """
    k, n = maps.shape[0], maps.shape[-1]
    p = (JS_SMOOTHING * maps.to(torch.float64) + (1.0 - JS_SMOOTHING) / n)
    neg_entropy = (p * p.log()).sum(-1)  # (K, n): sum_j p log p
    out = torch.zeros(k, k, dtype=torch.float64, device=maps.device)
    buffer = torch.empty(max(k - 1, 1), n, n, dtype=torch.float64, device=maps.device)
    for a in range(k - 1):
        m = buffer[: k - a - 1]
        torch.add(p[a], p[a + 1:], out=m)
        m.mul_(0.5)
        m_neg_entropy = torch.einsum("kij,kij->ki", m, m.log())
        js = 0.5 * neg_entropy[a] + 0.5 * neg_entropy[a + 1:] - m_neg_entropy
        out[a, a + 1:] = js.sum(-1)
    out = out + out.T
    return out.clamp_(min=0.0)


@dataclass
class ClusteringState:
    """Sums of the JS divergence, counts, and the surface moments of the same inputs (for behaviours)."""

    js: np.ndarray  # (K, K) float64
    n_queries: int
    n_inputs: int
    surface: Moments  # (L, H, M)


class HeadClustering(Collector):
    """Streams :func:`js_sums` over the first ``max_inputs`` inputs (option, else ``analysis_options.clustering``)."""

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        options = context.options
        protocol = options.get("protocol")
        mine: ClusteringOptions = analysis_options("clustering", protocol)
        self.max_inputs = options.get("max_inputs", mine.max_inputs)
        self.seed = int(options.get("seed", getattr(protocol, "seed", 0) or 0))
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
        lengths = view.lengths
        for b in take:
            n = int(lengths[b])
            maps = view.attention[b, :, :, :n, :n].reshape(-1, n, n)
            s.js += js_sums(maps).cpu().numpy()
            s.n_queries += n
            s.n_inputs += 1
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
        return {"js_distance": js[JS_COLUMNS], "mds": mds[MDS_COLUMNS]}


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


register_analysis("clustering", HeadClustering, options=ClusteringOptions,
                  finish="headstats.stats.grouping:finish_clustering",
                  report="headstats.report.sections.clustering_section:clustering_section",
                  description="Jensen-Shannon divergence between every pair of heads, metric MDS to two dimensions "
                              "and a test of whether heads of one layer sit together (Clark et al. 2019)")
