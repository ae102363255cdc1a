"""The surface analysis' options: the declared hypotheses, checked against the measures the collector keeps."""

import pytest

from headstats.analyses import analysis_options
from headstats.analyses.surface.options import DEFAULT_HYPOTHESES, SURFACE_MEASURES, SurfaceOptions
from headstats.errors import ProtocolError


def test_the_default_hypotheses_are_clarks_at_their_thresholds():
    hypotheses = SurfaceOptions().hypotheses
    assert [(h.name, h.measure, h.threshold) for h in hypotheses] == [
        (h["name"], h["measure"], h["threshold"]) for h in DEFAULT_HYPOTHESES]
    assert {h.measure for h in hypotheses} <= set(SURFACE_MEASURES)
    assert next(h for h in hypotheses if h.name == "broad").threshold == 0.75


def test_an_unknown_measure_and_a_repeated_name_are_refused():
    with pytest.raises(ProtocolError, match="unknown measure 'prevv'"):
        analysis_options("surface", {"hypotheses": [{"name": "p", "measure": "prevv", "threshold": 0.5}]})
    twice = [{"name": "p", "measure": "prev", "threshold": 0.5}, {"name": "p", "measure": "next", "threshold": 0.5}]
    with pytest.raises(ProtocolError, match="must be unique"):
        analysis_options("surface", {"hypotheses": twice})


def test_broad_share_moved_to_clustering_says_where():
    with pytest.raises(ProtocolError, match="clustering: {broad_share"):
        analysis_options("surface", {"broad_share": 0.5})
