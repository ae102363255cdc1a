"""Attention mass on [CLS], on [SEP] and on the other tokens, per head (METHODS 2.1; Pande et al. 2021 section 6).

For input x, layer l and head h, the mass on a set T of key positions is the mean over the real queries i
of ``sum_{j in T} A[i, j]``; ``other`` is the mass on the real keys that are neither [CLS] nor [SEP]. The
table gives, per (model, data set, layer, head, target), the mean over inputs, the standard deviation
(ddof = 1) and N. Special positions come from the encoding (the tokenizer's special-token ids).
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from headstats.engine.batch import BatchView
from headstats.engine.collector import Collector, Context, Moments
from headstats.lazy import torch

TARGETS = ("cls", "sep", "other")


def special_mass_of(view: BatchView) -> torch.Tensor:
    """(B, L, H, 3): mean over real queries of the mass on [CLS], on [SEP], and on the other real keys.

    One batched product of the attention with the three key masks; per-query masses summed in float64.
    """
    attn = view.masked_attention
    real, cls, sep = view.real, view.cls, view.sep
    B, L, H, T, _ = attn.shape
    q = real[:, None, None, :].to(torch.float64)
    n = real.sum(-1).to(torch.float64)[:, None, None]
    keys = torch.stack([cls, sep, real], -1).to(attn.dtype)  # (B, T, 3)
    on = torch.bmm(attn.reshape(B, L * H * T, T), keys).reshape(B, L, H, T, 3).to(torch.float64)
    on_cls, on_sep, on_real = on.unbind(-1)
    m_cls = (on_cls * q).sum(-1) / n
    m_sep = (on_sep * q).sum(-1) / n
    m_other = ((on_real - on_cls - on_sep) * q).sum(-1) / n
    return torch.stack([m_cls, m_sep, m_other], dim=-1)


class SpecialMass(Collector):
    """Running mean and spread over inputs of :func:`special_mass_of`, per (layer, head, target)."""

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self._state = Moments.zeros((context.n_layers, context.n_heads, len(TARGETS)))

    def update(self, view: BatchView) -> None:
        self._state.add(special_mass_of(view).double().cpu().numpy())

    @classmethod
    def merge(cls, states: Sequence[Moments]) -> Moments:
        return Moments.combine(states)

    def tables(self) -> dict[str, pd.DataFrame]:
        """``special_mass``: ``model, dataset, layer, head, target, mass_mean, mass_sd, n`` (target outermost)."""
        m = self._state
        frames = [
            self.context.head_frame(model=self.context.model, dataset=self.context.dataset).assign(
                target=target, mass_mean=m.mean_or_nan[..., t].ravel(), mass_sd=m.sd[..., t].ravel(),
                n=m.n[..., t].ravel())
            for t, target in enumerate(TARGETS)
        ]
        return {"special_mass": pd.concat(frames, ignore_index=True)}


