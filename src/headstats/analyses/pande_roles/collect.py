"""The sieve bias scores of every role, as a collector whose result is a MeasureArray (METHODS 1.2-1.3), and the
roles' plan: the role scores once per attention measure, and the offset gate's controls (METHODS 6.2).

The maths is :func:`headstats.analyses.sieves.score_and_ceilings` (on a map-free pass,
:func:`headstats.analyses.sieve_gather.map_free_scores`, the same formulas from the gathered masses); this module keeps each batch's scores (inputs x layers x
heads x roles, float32, the precision they are computed in) with the inputs' positions and ceilings, and returns
them in data-set order as a :class:`~headstats.measures.MeasureArray` (the keeping is
:class:`~headstats.engine.collector.PerInputCollector`'s). Attention is never kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from headstats.analyses import PlanContext
from headstats.analyses.sieve_gather import gather_for_scores, role_scores_of
from headstats.analyses.sieves import ScoreSettings
from headstats.engine.batch import BatchView
from headstats.engine.collector import Context, PerInputCollector, ScoreState
from headstats.engine.mapfree import Gather

__all__ = ["RoleScores", "ScoreState", "gate_jobs", "plan"]

#: The roles' registered name (:mod:`headstats.analyses.pande_roles`): the name of their score jobs.
NAME = "pande_roles"


class RoleScores(PerInputCollector):
    """Collects :func:`~headstats.analyses.sieves.score_and_ceilings` of every batch: scores and ceilings.

    Options (``context.options``): ``roles`` (sequence of role names), ``settings``
    (:class:`~headstats.analyses.sieves.ScoreSettings`, default ones when absent) and ``not_applicable`` (the roles
    of the scoring left out of the data set, with the reason: what :meth:`input_counts` reports).
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

    def input_counts(self) -> dict:
        """What the run records of its inputs beside the runner's counts (the manifest's ``inputs``): the roles
        left out of the data set with the reason (``roles_not_applicable``) and :meth:`participation`."""
        return {"roles_not_applicable": dict(self.context.options.get("not_applicable", {})),
                "participation": self.participation()}

    def tables(self) -> dict[str, pd.DataFrame]:
        """None of its own: the scores are :meth:`result`, the role tables (participation included) are made from
        them after the pass, and the inputs taking part are :meth:`input_counts`."""
        return {}



#: The analysis whose collector measures the offset gate's control (METHODS 6.2): the gate plans its jobs itself, and
#: they serve ``analyses: [offset_control]`` too when that analysis asks for the same control.
OFFSET_CONTROL = "offset_control"
#: The name of a gate's job that serves no analysis (its tables are no analysis'; its result is the gate's).
GATE_ONLY = "offset_gate"


def control_options(scoring):
    """The options of the control the gate reads: the scoring's relations and arc direction
    (:meth:`~headstats.analyses.offset_control.options.OffsetControlOptions.of_scoring`)."""
    from headstats.analyses.offset_control.options import OffsetControlOptions

    return OffsetControlOptions.of_scoring(scoring)


def gate_jobs(scoring, statistics, models: Sequence[str], kept: Mapping[str, Sequence[str]],
              measures: Mapping[str, dict], *, seed: int, asked=None) -> list:
    """The engine jobs of the gate's control: per attention measure (``measures``: each measure's job options, the
    primary first), model, and data set that scores an arc role (``kept``: the roles each data set scores; only a
    parsed one keeps arc roles); none when ``statistics.offset_gate`` is off. ``asked``: the options of
    ``analyses: [offset_control]`` when the protocol asks for it. A job is named :data:`OFFSET_CONTROL` when it is
    the one that analysis asks for (the same control on the primary measure: the study plans a job once, and its
    tables are that analysis'), else :data:`GATE_ONLY`."""
    from headstats.analyses import get_analysis
    from headstats.analyses.roles import get_role
    from headstats.engine.runner import Job

    if not statistics.offset_gate:
        return []
    collector = get_analysis(OFFSET_CONTROL).collector_class()
    options = {"options": control_options(scoring)}
    gated = [name for name, roles in kept.items() if any(get_role(role).kind == "arc" for role in roles)]
    primary = next(iter(measures), None)
    return [Job(collector, (model,), dataset, {**options, **extra}, seed=seed,
                name=OFFSET_CONTROL if asked == options["options"] and measure == primary else GATE_ONLY)
            for measure, extra in measures.items() for model in models for dataset in gated]


def plan(options, context: PlanContext) -> list:
    """The roles' engine jobs: the role scores per attention measure of ``options.measures`` (the primary first; one
    pass gives every measure's view), model and data set, then the offset gate's controls (:func:`gate_jobs`).

    ``options`` is the protocol's ``scoring`` (:class:`~headstats.analyses.sieves.ScoreSettings`). ``context.extra``
    holds ``datasets`` (per data set ``{"has_pairs": bool, "has_parses": bool}``: which roles apply,
    :func:`~headstats.analyses.roles.applicable_roles`), ``statistics`` (the study's statistics options: the gate is
    ``statistics.offset_gate``; None for scores alone, without the gate's controls) and ``analyses`` (the options
    of each analysis of ``analyses:``).
    """
    from headstats.analyses.roles import applicable_roles
    from headstats.engine.runner import Job
    from headstats.measures import measure_options

    facts = context.extra["datasets"]
    roles = {name: applicable_roles(options.roles, has_pairs=facts[name]["has_pairs"],
                                    has_parses=facts[name]["has_parses"]) for name in context.datasets}
    kept = {name: kept for name, (kept, _) in roles.items()}
    measures = {which: measure_options(options, which) for which in options.measures}
    jobs = [Job(RoleScores, (model,), name, {"roles": kept[name], "settings": options,
                                             "not_applicable": roles[name][1], **extra}, name=NAME)
            for extra in measures.values() for model in context.models for name in context.datasets]
    statistics = context.extra.get("statistics")
    if statistics is None:  # scores alone (headstats score, hs.score): no assignment, so no gate
        return jobs
    return jobs + gate_jobs(options, statistics, context.models, kept, measures, seed=context.seed,
                            asked=context.extra.get("analyses", {}).get(OFFSET_CONTROL))
