r"""The comparison's collectors and its planner: what the engine collects of the compared models in the study's one
pass over every model (a comparison costs no forward pass of its own).

**Special-token mass** (:class:`SpecialMass`; METHODS 2.1; Pande et al. 2021 section 6): for input x, layer l and
head h, the mass on a set T of key positions is the mean over the real queries i of ``sum_{j in T} A[i, j]``;
``other`` is the mass on the real keys that are neither [CLS] nor [SEP]. The table gives, per (model, data set,
layer, head, target), the mean over inputs, the standard deviation (ddof = 1) and N. Special positions come from
the encoding (the tokenizer's special-token ids).

**Attention similarity** (:class:`AttentionSimilarity`, a pair collector; Kovaleva et al. 2019, 4.4): for input x,
layer l, head h, with ``A`` and ``B`` the two models' maps cut to the n real positions of x,

    cos(x) = sum_ij A[i,j] B[i,j] / (||A||_F ||B||_F)

averaged over inputs (``cosine_mean``, ``cosine_sd`` with ddof = 1, ``n``). Both views of a batch are alive at
once, so a comparison costs no extra forward pass.

**Plan** (:func:`comparison_jobs`, the spec's ``plan``): the mass of every compared model and the similarity of every
(base, fine-tuned) pair and of every two seeds of a replicate group (the seed-to-seed distance), on each compared
data set.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from headstats.engine.batch import BatchView
from headstats.engine.collector import Collector, Context, Moments, PairCollector
from headstats.analyses.finetune_comparison.tables import SIMILARITY, SPECIAL_MASS
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
        return {SPECIAL_MASS.key: pd.concat(frames, ignore_index=True)}



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
        return {SIMILARITY.key: frame}


def comparison_jobs(options: Sequence[Any], context: Any) -> list:
    """The engine jobs of a protocol's comparisons (``options``: its ``compare:`` entries, each a
    :class:`~headstats.analyses.finetune_comparison.options.CompareSpec`): the [CLS]/[SEP] mass of every compared
    model and the attention similarity of every (base, fine-tuned) pair and of every two seeds of a replicate group,
    on each compared data set (``context.datasets`` where an entry names none); each job adds ``context.measure``
    to its options. ``context.extra["replicate_of"]``: model -> its replicate group (or None).

    They run in the same forward passes as the scores (:class:`headstats.engine.runner.Runner`).
    """
    from headstats.analyses.finetune_comparison.tables import OWNER
    from headstats.engine.runner import Job

    replicate_of = dict(context.extra.get("replicate_of") or {})
    mass: dict[tuple[str, str], None] = {}
    pairs: dict[tuple[str, str, str], None] = {}
    for spec in options or ():
        for dataset in spec.datasets or list(context.datasets):
            for name in (spec.base, *spec.finetuned):
                mass[(name, dataset)] = None
            for name in spec.finetuned:
                pairs[(spec.base, name, dataset)] = None
            for a, b in spec.seed_pairs(replicate_of):  # seed-to-seed distance
                pairs[(a, b, dataset)] = None
    measure = dict(context.measure or {})
    jobs = [Job(SpecialMass, (model,), dataset, dict(measure), name=OWNER) for model, dataset in mass]
    jobs += [Job(AttentionSimilarity, (base, name), dataset, dict(measure), name=OWNER)
             for base, name, dataset in pairs]
    return jobs
