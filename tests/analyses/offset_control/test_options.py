"""The offset control's options: the paper's relations and arc direction by default, one clear error otherwise."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from headstats.analyses.offset_control.options import OffsetControlOptions
from headstats.analyses.sieves import DEFAULT_RELATIONS


def test_defaults_are_the_papers_relations_dependent_to_head():
    options = OffsetControlOptions()
    assert tuple(options.relations) == DEFAULT_RELATIONS == ("nsubj", "dobj", "amod", "advmod")
    assert options.arc_direction == "dependent_to_head"


def test_no_relation_and_an_unknown_direction_are_refused():
    with pytest.raises(ValidationError, match="relation"):
        OffsetControlOptions(relations=[])
    with pytest.raises(ValidationError, match="arc_direction"):
        OffsetControlOptions(arc_direction="sideways")
