"""The distance analysis' options: the locality threshold, read after the pass, strictly between 0 and 1."""

import pytest

from headstats.analyses import analysis_options
from headstats.analyses.distance.options import DistanceOptions
from headstats.engine.cache import AFTER_PASS
from headstats.errors import ProtocolError


def test_locality_defaults_to_a_half_and_is_read_after_the_pass():
    assert DistanceOptions().locality == 0.5
    assert DistanceOptions.model_fields["locality"].json_schema_extra == AFTER_PASS


@pytest.mark.parametrize("bad", [0, 1, 1.5])
def test_locality_outside_0_1_is_refused(bad):
    with pytest.raises(ProtocolError, match=r"analysis_options\.distance\.locality"):
        analysis_options("distance", {"locality": bad})
