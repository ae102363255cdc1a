"""The options of the offset-matched control (``analysis_options: {offset_control: {...}}``), and the arc roles and
hypotheses it measures and tests. No torch: the protocol composes them, and the role assignment's offset gate
(:mod:`headstats.analyses.pande_roles.finish.offset_gate`) reads them.

For the relations ``r_1..r_k`` the control measures the arc roles ``syntactic`` (arcs of any of them) and
``syntactic:<r_i>``; the hypothesis of arc role ``x`` is named ``x_beyond_offset``: H0: mean offset-matched
excess <= 0 against H1: > 0, one-sided, with the protocol's test and correction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field

from headstats.analyses.sieves import DEFAULT_RELATIONS
from headstats.fields import StrictModel, non_empty_list


class OffsetControlOptions(StrictModel):
    """The arcs the control is computed on (METHODS 6.2): their relations (one measure ``syntactic:<rel>`` each,
    and ``syntactic`` over their union) and which end of an arc is the query. Give the scoring's ``relations``
    and ``arc_direction`` when they differ from the defaults."""

    relations: Annotated[list[str], non_empty_list("relation")] = Field(default_factory=lambda: list(DEFAULT_RELATIONS))
    arc_direction: Literal["dependent_to_head", "head_to_dependent", "both"] = "dependent_to_head"

    @classmethod
    def of_scoring(cls, settings) -> "OffsetControlOptions":
        """The control of the scored syntactic roles, which the role assignment's offset gate reads
        (``statistics.offset_gate``): the scoring's ``relations`` and ``arc_direction``
        (:class:`~headstats.analyses.sieves.ScoreSettings`)."""
        return cls(relations=list(settings.relations), arc_direction=settings.arc_direction)


#: The suffix of a control hypothesis' name: ``syntactic:amod_beyond_offset`` tests the role ``syntactic:amod``.
SUFFIX = "_beyond_offset"


def control_roles(relations: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The arc roles of the control and the relations whose arcs each counts: ``syntactic`` over all of
    ``relations``, then ``syntactic:<r>`` for each."""
    relations = tuple(relations)
    return [("syntactic", relations)] + [(f"syntactic:{r}", (r,)) for r in relations]


def control_hypotheses(roles: Sequence[str]) -> list[dict]:
    """One per arc role: H0: the head's mean offset-matched excess <= 0 (declared hypotheses, as
    :func:`headstats.stats.hypotheses.test_measures` takes them)."""
    return [{"name": f"{name}{SUFFIX}", "measure": name, "threshold": 0.0, "layers": None} for name in roles]


def tested_role(hypothesis: str) -> str:
    """The arc role a control hypothesis tests (``syntactic:amod_beyond_offset`` -> ``syntactic:amod``)."""
    return hypothesis[: -len(SUFFIX)] if hypothesis.endswith(SUFFIX) else hypothesis
