"""The sieve bias scores of every role, as a collector whose result is a MeasureArray (METHODS 1.2-1.3).

The maths is :func:`headstats.analyses.sieves.score_view`; this module keeps each batch's scores (inputs x layers x
heads x roles, float32, the precision they are computed in) with the inputs' positions, and returns them in
data-set order as a :class:`~headstats.measures.MeasureArray`. Attention is never kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from headstats.analyses import register_analysis
from headstats.engine.batch import BatchView
from headstats.engine.collector import Collector, Context
from headstats.errors import IncompatibleResultsError
from headstats.measures import MeasureArray
from headstats.analyses.sieves import ScoreSettings, score_and_ceilings


@dataclass
class ScoreState:
    """Per-input scores of one model on (part of) one data set.

    Attributes
    ----------
    index : ndarray of int64, shape (N,)
        Each input's position in its data set (file order); the rows are sorted by it.
    sentence_ids : ndarray of object, shape (N,)
    values : ndarray of float32, shape (N, L, H, R)
    roles : tuple of str
    ceilings : ndarray of float32, shape (N, R)
        Each input's ceiling per role (METHODS 1.6), computed in the same pass as the scores.
    """

    index: np.ndarray
    sentence_ids: np.ndarray
    values: np.ndarray
    roles: tuple[str, ...]
    ceilings: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.ceilings is None:
            self.ceilings = np.full((self.values.shape[0], len(self.roles)), np.nan, np.float32)

    @classmethod
    def empty(cls, n_layers: int, n_heads: int, roles: Sequence[str]) -> "ScoreState":
        return cls(np.zeros(0, np.int64), np.zeros(0, object),
                   np.zeros((0, n_layers, n_heads, len(roles)), np.float32), tuple(roles),
                   np.zeros((0, len(roles)), np.float32))

    @classmethod
    def join(cls, parts: Sequence["ScoreState"]) -> "ScoreState":
        """Rows of every part, sorted by position in the data set; positions must not repeat."""
        if not parts:
            raise ValueError("nothing to join")
        roles = parts[0].roles
        shape = parts[0].values.shape[1:]
        for part in parts[1:]:
            if part.roles != roles or part.values.shape[1:] != shape:
                raise IncompatibleResultsError(
                    f"cannot merge scores of roles {part.roles} / shape {part.values.shape[1:]} with roles {roles} / "
                    f"shape {shape}; merge results scored with the same options and model"
                )
        index = np.concatenate([p.index for p in parts])
        order = np.argsort(index, kind="stable")
        index = index[order]
        if index.size > 1 and (np.diff(index) == 0).any():
            raise IncompatibleResultsError("the merged scores hold an input twice; merge disjoint shards only")
        ids = np.concatenate([p.sentence_ids for p in parts])[order]
        destination = np.empty_like(order)
        destination[order] = np.arange(order.size)
        values = np.empty((order.size, *shape), dtype=np.float32)  # filled part by part: no second copy
        start = 0
        for part in parts:
            values[destination[start:start + len(part.index)]] = part.values
            start += len(part.index)
        ceilings = np.concatenate([p.ceilings for p in parts])[order]
        return cls(index, ids, values, roles, ceilings)


class RoleScores(Collector):
    """Collects :func:`~headstats.analyses.sieves.score_view` of every batch.

    Options (``context.options``): ``roles`` (sequence of role names) and ``settings``
    (:class:`~headstats.analyses.sieves.ScoreSettings`, default ones when absent).
    """

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.roles = tuple(context.options["roles"])
        self.settings = context.options.get("settings") or ScoreSettings()
        self._state = ScoreState.empty(context.n_layers, context.n_heads, self.roles)
        self._blocks: list[ScoreState] = []

    def update(self, view: BatchView) -> None:
        values, ceilings = score_and_ceilings(view, self.roles, self.settings)
        ids = np.empty(view.size, dtype=object)
        ids[:] = view.sentence_ids
        self._blocks.append(ScoreState(view.index.copy(), ids, values.detach().cpu().numpy(), self.roles,
                                       ceilings.detach().cpu().numpy()))

    def state(self) -> ScoreState:
        if self._blocks:
            self._state = ScoreState.join([self._state, *self._blocks])
            self._blocks = []
        return self._state

    def load_state(self, state: ScoreState) -> None:
        self._blocks = []
        self._state = state

    @classmethod
    def merge(cls, states: Sequence[ScoreState]) -> ScoreState:
        return ScoreState.join(states)

    def result(self) -> MeasureArray:
        """The scores as ``(inputs, layers, heads, roles)`` in data-set order."""
        state = self.state()
        provenance = {"model": self.context.provenance.get(self.context.model, {}),
                      "roles": list(self.roles), "settings": dict(vars(self.settings))}
        return MeasureArray(self.context.model, self.context.dataset, state.sentence_ids, state.roles, state.values,
                            provenance=provenance, ceilings=state.ceilings)

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
