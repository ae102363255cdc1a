r"""Cosine similarity of two models' attention maps of the same input, per head (Kovaleva et al. 2019, 4.4).

For input x, layer l, head h, with ``A`` and ``B`` the two models' maps cut to the n real positions of x,

    cos(x) = sum_ij A[i,j] B[i,j] / (||A||_F ||B||_F)

averaged over inputs (``cosine_mean``, ``cosine_sd`` with ddof = 1, ``n``). A pair collector: both views of a
batch are alive at once, so a comparison costs no extra forward pass.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from headstats.engine.batch import BatchView
from headstats.engine.collector import Context, Moments, PairCollector
from headstats.lazy import torch


def cosine_of(view_a: BatchView, view_b: BatchView) -> torch.Tensor:
    """(B, L, H): cosine similarity of the two views' maps over real queries and keys.

    Dot products and norms without a product map: one batched product per pair, each view's norms computed
    once per batch (``view.cached``) and shared by every pair it is in.
    """
    a, b = view_a.masked_attention, view_b.masked_attention
    shape = a.shape[:3]
    flat_a, flat_b = a.reshape(-1, 1, a.shape[-1] * a.shape[-2]), b.reshape(-1, b.shape[-1] * b.shape[-2], 1)
    dot = torch.bmm(flat_a, flat_b).reshape(shape)
    norm = _frobenius(view_a) * _frobenius(view_b)
    return dot / norm


def _frobenius(view: BatchView) -> torch.Tensor:
    """(B, L, H): the Frobenius norm of every head's masked map."""
    return view.cached("frobenius", lambda: torch.linalg.vector_norm(view.masked_attention.flatten(-2), dim=-1))


class AttentionSimilarity(PairCollector):
    """Running mean and spread over inputs of :func:`cosine_of`, per (layer, head)."""

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self._state = Moments.zeros((context.n_layers, context.n_heads))

    def update(self, view_a: BatchView, view_b: BatchView) -> None:  # type: ignore[override]
        self._state.add(cosine_of(view_a, view_b).double().cpu().numpy())

    @classmethod
    def merge(cls, states: Sequence[Moments]) -> Moments:
        return Moments.combine(states)

    def tables(self) -> dict[str, pd.DataFrame]:
        """``similarity``: ``model_a, model_b, dataset, layer, head, cosine_mean, cosine_sd, n``."""
        m = self._state
        a, b = self.context.models
        frame = self.context.head_frame(model_a=a, model_b=b, dataset=self.context.dataset,
                                        cosine_mean=m.mean_or_nan, cosine_sd=m.sd, n=m.n)
        return {"similarity": frame}


