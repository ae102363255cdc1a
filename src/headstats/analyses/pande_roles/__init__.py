"""The roles of Pande et al. (2021), "The Heads Hypothesis": per input, layer and head the sieve bias score of every
role (METHODS 1.1-1.3), tested head by head against tau (METHODS 1.4) and, for the syntactic roles, against an
offset-matched control (METHODS 6.2).

Turned on by the protocol's ``scoring:`` section (its options, :class:`~headstats.analyses.sieves.ScoreSettings`),
not by ``analyses:``: every study scores the roles. Its planner (:func:`~headstats.analyses.pande_roles.collect.plan`)
plans the role scores once per attention measure of ``scoring.measures`` and the offset gate's controls; its finish
step (:func:`~headstats.analyses.pande_roles.finish.finish_roles`) tests them and makes the role tables, its report parts
(:mod:`~headstats.analyses.pande_roles.section`) sit in the report's slots; the run's
role tables (``tests``, ``roles``, ...) are the study's (:mod:`headstats.tables.study_tables`). The package's files:
see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.pande_roles.options import ScoreSettings

register_analysis(
    "pande_roles", "headstats.analyses.pande_roles.collect:RoleScores",
    options=ScoreSettings, selectable=False, protocol_field="scoring",
    plan="headstats.analyses.pande_roles.collect:plan", finish="headstats.analyses.pande_roles.finish:finish_roles",
    claims="headstats.analyses.pande_roles.claims",
    section={slot: f"headstats.analyses.pande_roles.section:{slot}" for slot in ("summary", "results", "closing")},
    requires=("offset_control",),
    description="sieve bias score of every role, per input, layer and head, tested against tau (Pande et al. 2021)",
)
