"""The pictures analysis' options: inputs kept, heads always drawn, pieces shown."""

import pytest

from headstats.analyses import analysis_options
from headstats.analyses.pictures.options import PicturesOptions
from headstats.errors import ProtocolError


def test_defaults_and_heads_as_pairs():
    options = PicturesOptions()
    assert (options.n_inputs, options.sentence_ids, options.heads, options.max_pieces) == (3, None, [], 64)
    assert analysis_options("pictures", {"heads": [[0, 1], [2, 3]]}).heads == [(0, 1), (2, 3)]


def test_more_than_50_inputs_is_refused():
    with pytest.raises(ProtocolError, match=r"analysis_options\.pictures\.n_inputs"):
        analysis_options("pictures", {"n_inputs": 51})
