"""From the scores table to every table of a study: tests, role assignment and the paper's analyses.

This sits in the roles/comparison layer: it calls the statistics layer with the protocol's options and
returns tables; it computes nothing itself and draws nothing. The scores come as a list of
:class:`~headstats.measures.MeasureArray` (one per model and data set) or as the long scores table; they are
packed once (:func:`headstats.stats.matrix.score_matrix`) for every test and table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

import numpy as np
import pandas as pd

from headstats.assignment.role_assignment import colocation, heads_per_role_per_layer, role_table, strongest_heads
from headstats.measures import MeasureArray

#: The per-input scores of a study: one array per (model, dataset), or the long scores table.
Scores = Union[pd.DataFrame, Sequence[MeasureArray]]

PARTICIPATION_COLUMNS = ["model", "dataset", "role", "n_inputs", "n_taking_part", "n_not_taking_part"]


@dataclass
class Analysis:
    """Tables of a study.

    Attributes
    ----------
    tests : DataFrame
        One row per (model, dataset, role, layer, head): see ``docs/statistics.md``.
    roles : DataFrame
        One row per (model, dataset, layer, head): a boolean column per role and ``roles``.
    tables : dict of str -> DataFrame
        ``heads_per_layer``, ``colocation``, ``strongest_heads``, ``participation`` and, when asked,
        ``tau_sensitivity`` and ``robustness``; comparison tables are added by the study.
    """

    tests: pd.DataFrame
    roles: pd.DataFrame
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


def participation(scores: Scores) -> pd.DataFrame:
    """Inputs per (model, dataset, role): scored, and taking part (finite score at layer 0, head 0).

    Rows in the order the scores come in (arrays in list order, roles in measure order; a long table in the
    order of first appearance).
    """
    if not isinstance(scores, pd.DataFrame):
        arrays = [scores] if isinstance(scores, MeasureArray) else list(scores)
        rows = [
            (a.model, a.dataset, role, a.n_inputs, int(np.isfinite(a.values[:, 0, 0, i]).sum()))
            for a in arrays for i, role in enumerate(a.measures)
        ]
        out = pd.DataFrame(rows, columns=PARTICIPATION_COLUMNS[:5])
        for col in ("model", "dataset", "role"):
            out[col] = out[col].astype(str)
        out["n_inputs"] = out["n_inputs"].astype(np.int64)
        out["n_taking_part"] = out["n_taking_part"].astype(np.int64)
        out["n_not_taking_part"] = out["n_inputs"] - out["n_taking_part"]
        return out
    first_head = scores[(scores["layer"] == 0) & (scores["head"] == 0)]
    grouped = first_head.groupby(["model", "dataset", "role"], sort=False)["score"]
    out = grouped.agg(n_inputs="size", n_taking_part="count").reset_index()
    out["n_not_taking_part"] = out["n_inputs"] - out["n_taking_part"]
    return out


def statistics_kwargs(options, seed: int) -> dict:
    """Keyword arguments of :func:`headstats.stats.onesample.test_roles` from ``StatisticsOptions``."""
    return dict(
        tau=options.tau, alpha=options.alpha, test=options.test, correction=options.correction,
        family=tuple(options.family), confidence=options.confidence, seed=seed, min_n=options.min_n,
        n_resamples=options.n_resamples, power_target=options.power_target,
        effect_of_interest=options.effect_of_interest,
    )


def analyse(scores: Scores, protocol) -> Analysis:
    """Run the protocol's tests on the scores and derive the role tables.

    ``scores`` is a list of :class:`~headstats.measures.MeasureArray` or the long scores table; the tables
    are the same for both.
    """
    from headstats.stats.matrix import score_matrix
    from headstats.stats.onesample import test_roles

    kwargs = statistics_kwargs(protocol.statistics, protocol.seed)
    matrix = score_matrix(scores)
    tests = test_roles(matrix, **kwargs)
    roles = role_table(tests)
    from headstats.stats.power import power_summary, underpowered

    power_target = protocol.statistics.power_target
    tables = {
        "heads_per_layer": heads_per_role_per_layer(roles),
        "power_summary": power_summary(tests, power_target=power_target),
        "underpowered": underpowered(tests, power_target=power_target),
        "colocation": colocation(roles),
        "strongest_heads": strongest_heads(tests, k=protocol.report.top_k),
        "participation": participation(scores),
    }
    if protocol.statistics.sensitivity:
        tables.update(sensitivity_tables(matrix, kwargs))
    return Analysis(tests=tests, roles=roles, tables=tables)


def sensitivity_tables(scores, kwargs: dict) -> dict[str, pd.DataFrame]:
    """How role counts move with tau and alpha, and which heads change between tests and corrections.

    ``scores``: arrays, the long table, or a :class:`~headstats.stats.matrix.ScoreMatrix` packed once.
    """
    from headstats.stats.sensitivity import robustness, tau_sensitivity

    common = {k: kwargs[k] for k in ("family", "min_n", "seed")}
    return {
        "tau_sensitivity": tau_sensitivity(scores, test=kwargs["test"], correction=kwargs["correction"], **common),
        "robustness": robustness(scores, tau=kwargs["tau"], alpha=kwargs["alpha"], **common),
    }
