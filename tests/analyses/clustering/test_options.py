"""The clustering analysis' options: the defaults the docs state, and a bad value refused in one line."""

import pytest

from headstats.analyses import analysis_options
from headstats.analyses.clustering.options import ClusteringOptions
from headstats.engine.cache import AFTER_PASS
from headstats.errors import ProtocolError


def test_defaults_and_what_the_collector_reads():
    options = ClusteringOptions()
    assert (options.max_inputs, options.datasets, options.n_permutations, options.broad_share) == (100, None, 9999, 0.75)
    after = {k for k, f in ClusteringOptions.model_fields.items() if f.json_schema_extra == AFTER_PASS}
    assert after == {"datasets", "n_permutations", "broad_share"}  # only max_inputs changes a state


def test_too_few_permutations_is_one_protocol_error_naming_the_key():
    with pytest.raises(ProtocolError, match=r"analysis_options\.clustering\.n_permutations"):
        analysis_options("clustering", {"n_permutations": 10})
