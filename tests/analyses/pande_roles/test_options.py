"""The roles' options are the protocol's ``scoring`` section: every study scores the roles, before its analyses."""

from __future__ import annotations

import pytest

from headstats.analyses.pande_roles.options import ScoreSettings
from headstats.config.protocol import Protocol


def protocol(**extra) -> Protocol:
    return Protocol.model_validate({"name": "x", "datasets": [{"name": "d", "path": "x.txt"}], **extra})


def test_the_scoring_section_turns_the_roles_on_with_its_options():
    p = protocol(scoring={"roles": ["local"], "measure": "norm"}, analyses=["distance"])
    assert p.enabled_analyses()[0] == "pande_roles" and p.enabled_analyses()[-1] == "distance"
    options = p.options_of("pande_roles")
    assert options is p.scoring and isinstance(options, ScoreSettings)
    assert options.measures == ["norm"] and options.measure == "norm"  # measure: X is measures: [X]


def test_the_roles_cannot_be_named_in_analyses():
    from headstats.config.protocol import validate_protocol
    from headstats.errors import ProtocolError

    with pytest.raises(ProtocolError, match="'pande_roles' is run by the study itself"):
        validate_protocol({"name": "x", "datasets": [{"name": "d", "path": "x.txt"}], "analyses": ["pande_roles"]})
