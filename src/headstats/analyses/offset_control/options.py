"""The options of the offset-matched control (``analysis_options: {offset_control: {...}}``). No torch: the
protocol composes them."""

from __future__ import annotations

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
