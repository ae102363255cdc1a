r"""Surface patterns of every head (Clark et al. 2019, section 3; METHODS 2.1), kept per input so each is testable.

For input x with n real positions, layer l and head h, ``A`` cut to the real positions, every measure is an
average over the input's queries first (then, in ``surface.csv``, over inputs):

- ``prev``, ``self``, ``next``: ``(1/n) sum_i A[i, i+o]`` for o = -1, 0, +1; a query without a neighbour at
  offset o contributes 0 and still counts in n (as the authors' code does);
- ``cls``, ``sep``, ``punct``: ``(1/n) sum_i sum_{j in T} A[i, j]`` with T the [CLS] position, every [SEP]
  position, or the pieces "." and "," (special positions come from the tokenizer's special-token mask);
- ``sep_to_sep``: the mass on [SEP] averaged over the [SEP] queries; ``other_to_sep``: averaged over every
  other query, [CLS] included (n - #[SEP] of them);
- ``entropy``: the mean row entropy in nats of ``0.9999 A[i, :] + 0.0001 / n``; ``entropy_cls``: the [CLS]
  row's alone; ``entropy_uniform``: ln n, the entropy of a row spread evenly (the same for every head);
  ``entropy_ratio``: ``entropy / ln n`` (1 = uniform), what "broad attention" is tested on;
- ``same_token``: the mass a non-special query puts on the *other* non-special positions holding its own
  piece (BertViz's "identical words"), averaged over the queries that have such a position (NaN when none);
  ``same_token_other``: the same restricted to keys in the other sentence of a pair ("the same word in the
  other sentence"; NaN on single sentences).

``surface.csv`` holds the means over inputs of the columns the paper reports: ``model, dataset, layer, head,
prev, self, next, cls, sep, punct, sep_to_sep, other_to_sep, entropy, entropy_cls, entropy_uniform``.
The per-input values are a :class:`~headstats.measures.MeasureArray` (:meth:`SurfacePatterns.result`), and
the protocol's ``analysis_options.surface.hypotheses`` (e.g. ``prev > 0.5``) are tested one-sided per head
by the study with the protocol's test and correction over the declared family (``surface_tests.csv``; see
:func:`headstats.stats.hypotheses.test_measures`).

Reference: K. Clark, U. Khandelwal, O. Levy, C. D. Manning, "What Does BERT Look At? An Analysis of BERT's
Attention", BlackboxNLP 2019; their code ``clarkkev/attention-analysis`` (``General_Analysis.ipynb``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from headstats.analyses import collector_options
from headstats.analyses.entropy.collect import entropy_of
from headstats.analyses.surface.options import DEFAULT_HYPOTHESES, SURFACE_MEASURES, SurfaceOptions
from headstats.analyses.surface.tables import SURFACE
from headstats.engine.batch import BatchView
from headstats.engine.collector import Context, PerInputCollector
from headstats.lazy import torch
from headstats.measures import MeasureArray
from headstats.model.loading import provenance_tokenizer  # the model layer loads every tokenizer
from headstats.model.tokenizers import PUNCTUATION, punctuation_ids  # PUNCTUATION: the pieces ``punct`` counts

__all__ = ["DEFAULT_HYPOTHESES", "PUNCTUATION", "SURFACE_COLUMNS", "SURFACE_MEASURES", "SurfacePatterns",
           "dominant_behaviour", "punctuation_ids", "surface_of", "surface_table"]

#: Columns of ``surface.csv`` (the issue's, in its order).
SURFACE_COLUMNS: tuple[str, ...] = (
    "model", "dataset", "layer", "head", "prev", "self", "next", "cls", "sep", "punct", "sep_to_sep",
    "other_to_sep", "entropy", "entropy_cls", "entropy_uniform",
)


def context_tokenizer(context: Context) -> Any | None:
    """The tokenizer of a collector's model: the runner's (:attr:`~headstats.engine.collector.Context.tokenizer`),
    else, for a collector built by hand or read after the pass, loaded from its provenance (local folder or hub id)."""
    if context.tokenizer is not None:
        return context.tokenizer
    return provenance_tokenizer(context.provenance.get(context.model, {}))


def context_punctuation_ids(context: Context) -> tuple[int, ...]:
    """Punctuation ids of the tokenizer of a collector's model (:func:`context_tokenizer`)."""
    tokenizer = context_tokenizer(context)
    return () if tokenizer is None else punctuation_ids(tokenizer)


def _diagonal_mass(attn: torch.Tensor, offset: int, n: torch.Tensor) -> torch.Tensor:
    """``(1/n) sum_i A[i, i+offset]`` over real queries: attention (B, L, H, T, T) already masked."""
    return torch.diagonal(attn, offset=offset, dim1=-2, dim2=-1).sum(-1) / n


def _mean_over(values: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """Mean of (B, L, H, T) values over the (B, T) boolean queries; NaN where an input has none."""
    q = queries.to(values.dtype)
    count = q.sum(-1)[:, None, None]
    total = (values * q[:, None, None, :]).sum(-1)
    return torch.where(count > 0, total / count.clamp(min=1), torch.full_like(total, float("nan")))


def surface_of(view: BatchView, punct_ids: Sequence[int] = ()) -> torch.Tensor:
    """Per input, layer and head, every measure of :data:`SURFACE_MEASURES`: (B, L, H, M) float64.

    Computed once per batch and shared by the collectors that ask (``view.cached``).
    """
    key = f"surface/{','.join(map(str, sorted(punct_ids)))}"
    return view.cached(key, lambda: _surface_of(view, punct_ids))


def _surface_of(view: BatchView, punct_ids: Sequence[int]) -> torch.Tensor:
    attn = view.masked_attention
    real, cls, sep, special = view.real, view.cls, view.sep, view.special
    dtype = torch.float64
    B, L, H, T, _ = attn.shape
    n = real.sum(-1).to(dtype)[:, None, None]
    ids = view.input_ids.to(attn.device)
    punct = torch.isin(ids, torch.tensor(list(punct_ids), dtype=ids.dtype, device=ids.device)) & real & ~special

    # per query, the mass on [CLS], on every [SEP] and on punctuation: one batched product over the attention
    keys = torch.stack([cls, sep, punct], -1).to(attn.dtype)  # (B, T, 3)
    on = torch.bmm(attn.reshape(B, L * H * T, T), keys).reshape(B, L, H, T, 3).to(dtype)
    prev = _diagonal_mass(attn, -1, n.to(attn.dtype)).to(dtype)
    self_ = _diagonal_mass(attn, 0, n.to(attn.dtype)).to(dtype)
    next_ = _diagonal_mass(attn, 1, n.to(attn.dtype)).to(dtype)
    to_cls, to_sep, to_punct = (on.sum(-2) / n[..., None]).unbind(-1)
    # the mass on [SEP] averaged over the [SEP] queries and over the others: one product with both query masks
    queries = torch.stack([sep & real, real & ~sep], -1).to(dtype)  # (B, T, 2)
    count = queries.sum(1)  # (B, 2)
    total = torch.bmm(on[..., 1].reshape(B, L * H, T), queries).reshape(B, L, H, 2)
    per_query = torch.where(count[:, None, None] > 0, total / count.clamp(min=1)[:, None, None], float("nan"))
    sep_to_sep, other_to_sep = per_query.unbind(-1)
    entropy, entropy_cls = entropy_of(view)
    uniform = torch.log(n).expand_as(entropy).to(dtype)
    ratio = entropy.to(dtype) / uniform
    # identical pieces: non-special, real, not the query itself; few (query, key) pairs, so the mass on them is
    # gathered from those cells alone rather than multiplied over the whole map
    plain = real & ~special
    eye = torch.eye(view.width, dtype=torch.bool, device=real.device)[None]
    same = (ids[:, :, None] == ids[:, None, :]) & plain[:, :, None] & plain[:, None, :] & ~eye
    other_side = same & (view.segment[:, :, None] != view.segment[:, None, :])
    cols = []
    for match in (same, other_side):
        b, i, j = torch.nonzero(match, as_tuple=True)
        mass = torch.zeros(B, T, L, H, dtype=dtype, device=attn.device)
        mass.index_put_((b, i), attn[b, :, :, i, j].to(dtype), accumulate=True)
        cols.append(_mean_over(mass.permute(0, 2, 3, 1), match.any(-1)))
    return torch.stack([prev, self_, next_, to_cls, to_sep, to_punct, sep_to_sep, other_to_sep,
                        entropy.to(dtype), entropy_cls.to(dtype), uniform, ratio, *cols], dim=-1)


class SurfacePatterns(PerInputCollector):
    """Per-input surface measures of every head (:func:`surface_of`), in data-set order.

    Options (``context.options``): ``punct_ids`` (the pieces counted as punctuation; default: "." and ","
    of the model's tokenizer), ``options`` (its :class:`SurfaceOptions`: their ``hypotheses``, else the defaults,
    are what :meth:`hypotheses` gives), or ``hypotheses`` (a list of mappings with ``name, measure, threshold,
    layers``).
    """

    def __init__(self, context: Context) -> None:
        super().__init__(context, SURFACE_MEASURES)
        self._punct = context.options.get("punct_ids")

    @property
    def punct_ids(self) -> tuple[int, ...]:
        if self._punct is None:
            self._punct = context_punctuation_ids(self.context)
        return tuple(self._punct)

    def update(self, view: BatchView) -> None:
        self.keep(view, surface_of(view, self.punct_ids))

    def provenance(self) -> dict[str, Any]:
        return {**super().provenance(), "punct_ids": list(self.punct_ids)}

    def hypotheses(self) -> list[dict]:
        """The hypotheses to test on :meth:`result` (see :func:`headstats.stats.hypotheses.test_measures`)."""
        options = self.context.options
        if "hypotheses" in options:
            return [dict(h) for h in options["hypotheses"]]
        return [h.model_dump() for h in collector_options(self.context, SurfaceOptions).hypotheses]

    def tables(self) -> dict[str, pd.DataFrame]:
        """``surface``: the columns of :data:`SURFACE_COLUMNS`, means over inputs (NaN left out)."""
        return {SURFACE.name: surface_table(self.result())}


def surface_table(array: MeasureArray) -> pd.DataFrame:
    """Means over inputs of one :class:`MeasureArray` of surface measures, one row per (layer, head)."""
    layers, heads = array.n_layers, array.n_heads
    layer, head = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")
    frame = pd.DataFrame({"model": array.model, "dataset": array.dataset, "layer": layer.ravel(),
                          "head": head.ravel()})
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns (e.g. no [SEP]) stay NaN
        means = np.nanmean(array.values.astype(np.float64), axis=0) if array.n_inputs else \
            np.full((layers, heads, len(array.measures)), np.nan)
    for column in SURFACE_COLUMNS[4:]:
        frame[column] = means[..., array.measures.index(column)].ravel()
    return frame


def dominant_behaviour(surface: pd.DataFrame, *, threshold: float = 0.5, broad: float = 0.75,
                       uniform: pd.Series | None = None) -> pd.Series:
    """A label per head of ``surface.csv``: the pattern holding the most mass if above ``threshold``.

    Candidates: ``prev``, ``self``, ``next``, ``cls``, ``sep``, ``punct``; otherwise ``broad`` when the mean
    entropy is at least ``broad`` times the uniform reference, else ``mixed``. Used to colour the heads of the
    clustering figure (Clark et al. 2019, Figure 6).
    """
    kinds = ["prev", "self", "next", "cls", "sep", "punct"]
    mass = surface[kinds].to_numpy(dtype=float)
    best = np.nanargmax(np.where(np.isnan(mass), -1.0, mass), axis=1)
    top = mass[np.arange(len(mass)), best]
    ratio = surface["entropy"].to_numpy(float) / surface["entropy_uniform"].to_numpy(float)
    labels = np.where(top > threshold, np.asarray(kinds, dtype=object)[best],
                      np.where(ratio >= broad, "broad", "mixed"))
    return pd.Series(labels, index=surface.index, name="behaviour")


