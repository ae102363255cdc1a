r"""Attention distance per head: how far, in tokens, a head looks (Clark et al. 2019; Vig and Belinkov 2019).

For input x with n real positions, ranked 0..n-1 (``r_i``: padding skipped), layer l and head h, with ``A`` the
head's attention cut to the real positions,

    d(x) = (1/n) sum_i sum_j A[i, j] |r_i - r_j|

is the attention-weighted token distance averaged over the queries ("mean attention distance"). Its reference
is the distance under uniform attention over the input,

    u(x) = (1/n^2) sum_i sum_j |i - j| = (n^2 - 1) / (3 n),

and ``locality = 1 - d / u`` puts heads of inputs of any length on one scale: 1 for a head that attends only to
the query itself, 0 for one as far as uniform attention, below 0 for one that looks farther (e.g. at [CLS] and
[SEP], the two ends of the input); NaN when n = 1. The three are kept per input (a
:class:`~headstats.engine.collector.PerInputCollector`), so the declared hypothesis ``local`` (H1: mean
locality > ``analysis_options.distance.locality``, 0.5 by default: the head looks less than half as far as
uniform attention) is tested one-sided per head with the protocol's test and correction
(``distance_tests.csv``).

Enable it with ``analyses: [distance]``; it writes ``distance.csv`` (``model, dataset, layer, head, n,
distance_mean, distance_sd, uniform_mean, locality_mean``: means over inputs, sd with ddof = 1) and a report
section (:mod:`headstats.report.sections.distance_section`).

References: K. Clark et al., "What Does BERT Look At?", BlackboxNLP 2019; J. Vig and Y. Belinkov, "Analyzing the
Structure of Attention in a Transformer Language Model", BlackboxNLP 2019 (their mean attention distance).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from headstats.analyses import collector_options
from headstats.analyses.distance.options import DistanceOptions
from headstats.analyses.distance.tables import DISTANCE
from headstats.engine.batch import BatchView
from headstats.engine.collector import Context, PerInputCollector
from headstats.lazy import torch


#: Per-input measures, in the order of the MeasureArray's last axis.
DISTANCE_MEASURES = ("distance", "uniform", "locality")


def distance_of(view: BatchView) -> torch.Tensor:
    """Per input, layer and head: ``d``, ``u`` and ``1 - d / u`` of the module docstring, (B, L, H, 3) float64.

    The real positions of an input are the first n of the padded batch, so ``|r_i - r_j| = |i - j|`` for every
    real query and key (padded ones hold 0 in the masked attention); each row's weighted distance is summed in
    float32, the rows in float64, one layer at a time (no float64 copy of the attention).
    """
    attn = view.masked_attention
    real = view.real
    T = view.width
    positions = torch.arange(T, device=attn.device)
    far = (positions[:, None] - positions[None, :]).abs().to(attn.dtype)  # (T, T)
    n = real.sum(-1).double()[:, None]  # (B, 1)
    distance = torch.stack([(attn[:, layer] * far).sum(-1).sum(-1, dtype=torch.float64)
                            for layer in range(view.n_layers)], 1) / n[..., None]
    uniform = ((n * n - 1) / (3 * n))[..., None].expand_as(distance)
    locality = torch.where(uniform > 0, 1 - distance / uniform.clamp(min=1e-12),
                           torch.full_like(distance, float("nan")))
    return torch.stack([distance, uniform, locality], dim=-1)


class AttentionDistance(PerInputCollector):
    """Per-input attention distance of every head (:func:`distance_of`), with the ``local`` hypothesis."""

    def __init__(self, context: Context) -> None:
        super().__init__(context, DISTANCE_MEASURES)

    def update(self, view: BatchView) -> None:
        self.keep(view, distance_of(view))

    def hypotheses(self) -> list[dict]:
        """``local``: mean locality above the threshold (see :func:`headstats.stats.hypotheses.test_measures`)."""
        options = collector_options(self.context, DistanceOptions)
        return [{"name": "local", "measure": "locality", "threshold": options.locality, "layers": None}]

    def tables(self) -> dict[str, pd.DataFrame]:
        """``distance``: the columns of the module docstring, one row per (layer, head)."""
        values = self.result().values.astype(np.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no input, or n = 1 everywhere: NaN stays NaN
            means = np.nanmean(values, axis=0)
            sd = np.nanstd(values[..., 0], axis=0, ddof=1)
        return {DISTANCE.name: self.context.head_frame(
            model=self.context.model, dataset=self.context.dataset, n=np.full(means.shape[:2], len(values)),
            distance_mean=means[..., 0], distance_sd=sd, uniform_mean=means[..., 1], locality_mean=means[..., 2])}


