"""The ``peak`` collector: running mean and spread over inputs of each head's mean row maximum."""

from collections.abc import Sequence

import numpy as np
import pandas as pd

from headstats.engine.collector import Collector, Context, Moments


class PeakCollector(Collector):
    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self._state = Moments.zeros((context.n_layers, context.n_heads))

    def update(self, view) -> None:
        attention = view.masked_attention  # (B, L, H, T, T), padded rows and columns 0
        peaks = attention.amax(-1).sum(-1).double().cpu().numpy()  # (B, L, H): sum over real rows of the row max
        self._state.add(peaks / view.lengths[:, None, None])

    @classmethod
    def merge(cls, states: Sequence[Moments]) -> Moments:
        return Moments.combine(list(states))

    def tables(self) -> dict[str, pd.DataFrame]:
        s = self._state
        frame = self.context.head_frame(model=self.context.model, dataset=self.context.dataset, n=s.n,
                                        peak=s.mean_or_nan, peak_sd=s.sd)
        return {"peak": frame.astype({"peak": np.float64})}
