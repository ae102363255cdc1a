"""The sieve bias scores of every role, as a collector whose result is a MeasureArray (METHODS 1.2-1.3).

The maths is :func:`headstats.analyses.sieves.score_and_ceilings` (on a map-free pass,
:func:`headstats.analyses.sieve_gather.map_free_scores`, the same formulas from the gathered masses); this module keeps each batch's scores (inputs x layers x
heads x roles, float32, the precision they are computed in) with the inputs' positions and ceilings, and returns
them in data-set order as a :class:`~headstats.measures.MeasureArray` (the keeping is
:class:`~headstats.engine.collector.PerInputCollector`'s). Attention is never kept.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.analyses import register_analysis
from headstats.analyses.sieve_gather import gather_for_scores, role_scores_of
from headstats.analyses.sieves import ScoreSettings
from headstats.engine.batch import BatchView
from headstats.engine.collector import Context, PerInputCollector, ScoreState
from headstats.engine.mapfree import Gather

__all__ = ["RoleScores", "ScoreState"]


class RoleScores(PerInputCollector):
    """Collects :func:`~headstats.analyses.sieves.score_and_ceilings` of every batch: scores and ceilings.

    Options (``context.options``): ``roles`` (sequence of role names) and ``settings``
    (:class:`~headstats.analyses.sieves.ScoreSettings`, default ones when absent).
    """

    keeps_ceilings = True
    #: In cache keys: 2 since the published syntactic lookup and arc length (METHODS 1.6 (a)-(d)).
    version = "2"

    def __init__(self, context: Context) -> None:
        self.roles = tuple(context.options["roles"])
        self.settings = context.options.get("settings") or ScoreSettings()
        super().__init__(context, self.roles)

    @property
    def map_free(self) -> bool:
        """The scores need only each query's mass inside each sieve: a pass of the role scores alone runs without
        attention maps (:mod:`headstats.analyses.sieve_gather`)."""
        return True

    def gather(self, view: BatchView) -> Gather:
        return gather_for_scores(view, self.roles, self.settings)

    def update(self, view: BatchView) -> None:
        values, ceilings = role_scores_of(view, self.roles, self.settings)
        self.keep(view, values, ceilings)

    def provenance(self) -> dict:
        return {**super().provenance(), "roles": list(self.roles), "settings": dict(vars(self.settings))}

    def participation(self) -> dict[str, int]:
        """Inputs with a finite score, per role."""
        values = self.state().values
        return {role: int(np.isfinite(values[:, 0, 0, r]).sum()) for r, role in enumerate(self.roles)}

    def tables(self) -> dict[str, pd.DataFrame]:
        """``participation``: ``model, dataset, role, n_inputs, n_taking_part``. The scores are :meth:`result`."""
        state = self.state()
        return {"participation": pd.DataFrame({
            "model": self.context.model, "dataset": self.context.dataset, "role": list(self.roles),
            "n_inputs": len(state.index), "n_taking_part": list(self.participation().values()),
        })}


register_analysis("role_scores", RoleScores, selectable=False,
                  description="sieve bias score of every role, per input, layer and head (Pande et al. 2021)")
