r"""Mean attention entropy per head (Clark et al. 2019; METHODS 2.1), an analysis a protocol can enable.

For input x with n real positions, layer l, head h, each real query's row is smoothed and its entropy taken
in nats,

    p_i(j) = 0.9999 A[i, j] + 0.0001 / n,        H_i = - sum_{j < n} p_i(j) ln p_i(j),

and the input's value is the mean of ``H_i`` over its n queries (``entropy``); ``entropy_cls`` is ``H_i`` of
the [CLS] row alone. The table gives, per (model, data set, layer, head), N, the mean over inputs and its
standard deviation (ddof = 1), and the uniform reference ``entropy_uniform``: the mean over inputs of ln n (the
entropy of a row that attends equally to every position). Enable it with ``analyses: [entropy]``; it writes
``entropy.csv`` and a report section.

One schema for the same quantities (:data:`ENTROPY_MEANS`): ``entropy.csv`` and ``surface.csv`` (the
``surface`` analysis) both call the means over inputs ``entropy``, ``entropy_cls`` and ``entropy_uniform``;
``entropy.csv`` adds the spreads ``entropy_sd`` and ``entropy_cls_sd``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from headstats.analyses.entropy.tables import ENTROPY
from headstats.analyses.kernels import row_entropies
from headstats.engine.batch import BatchView
from headstats.engine.collector import Collector, Context, Moments
from headstats.lazy import torch


#: The means over inputs that ``entropy.csv`` and ``surface.csv`` share, by the same names (nats).
ENTROPY_MEANS: tuple[str, ...] = ("entropy", "entropy_cls", "entropy_uniform")
#: Columns of ``entropy.csv``.
ENTROPY_COLUMNS: tuple[str, ...] = ("model", "dataset", "layer", "head", "n", "entropy", "entropy_sd",
                                    "entropy_cls", "entropy_cls_sd", "entropy_uniform")

#: Weight of the attention row in the smoothed row (the rest is spread uniformly), as in Clark et al.'s code.
SMOOTHING = 0.9999


def entropy_of(view: BatchView) -> tuple[torch.Tensor, torch.Tensor]:
    """Per input: mean row entropy over real queries (B, L, H), and the [CLS] row's entropy (B, L, H), float64.

    Inputs without a [CLS] position get NaN for the latter. Computed once per batch and shared by the collectors
    that ask (``view.cached``): the rows' entropies in float64 over the real rows and keys only
    (:func:`headstats.analyses.kernels.row_entropies`).
    """
    return view.cached("entropy_of", lambda: _entropy_of(view))


def _entropy_of(view: BatchView) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = view.lengths
    rows = torch.from_numpy(row_entropies(view.attention, lengths, SMOOTHING))  # (B, L, H, T); 0 on padded rows
    n = torch.from_numpy(lengths.astype(np.float64))
    mean = rows.sum(-1) / n[:, None, None]
    cls = view.cls.cpu()
    has_cls = cls.any(-1)
    first_cls = cls.to(torch.int64).argmax(-1)  # (B,)
    cls_rows = rows.gather(-1, first_cls[:, None, None, None].expand(-1, rows.shape[1], rows.shape[2], 1))[..., 0]
    cls_rows = torch.where(has_cls[:, None, None], cls_rows, torch.full_like(cls_rows, float("nan")))
    device = view.attention.device
    return mean.to(device), cls_rows.to(device)


class AttentionEntropy(Collector):
    """Running mean and spread over inputs of the mean row entropy and of the [CLS] row's entropy."""

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        shape = (context.n_layers, context.n_heads)
        self._state = {"entropy": Moments.zeros(shape), "cls_entropy": Moments.zeros(shape),
                       "uniform": Moments.zeros(())}

    def update(self, view: BatchView) -> None:
        mean, cls = entropy_of(view)
        self._state["entropy"].add(mean.cpu().numpy())
        self._state["cls_entropy"].add(cls.cpu().numpy())
        self._state["uniform"].add(np.log(view.lengths.astype(np.float64)))

    @classmethod
    def merge(cls, states: Sequence[dict[str, Moments]]) -> dict[str, Moments]:
        return {key: Moments.combine([s[key] for s in states]) for key in states[0]}

    def tables(self) -> dict[str, pd.DataFrame]:
        """``entropy``: the columns of :data:`ENTROPY_COLUMNS` (nats)."""
        s = self._state
        frame = self.context.head_frame(
            model=self.context.model, dataset=self.context.dataset, n=s["entropy"].n,
            entropy=s["entropy"].mean_or_nan, entropy_sd=s["entropy"].sd,
            entropy_cls=s["cls_entropy"].mean_or_nan, entropy_cls_sd=s["cls_entropy"].sd,
        )
        frame["entropy_uniform"] = float(s["uniform"].mean_or_nan)
        return {ENTROPY.name: frame.loc[:, list(ENTROPY_COLUMNS)]}


