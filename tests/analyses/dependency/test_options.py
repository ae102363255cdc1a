"""The dependency analysis' options: the paper's defaults, and a bad value refused in one line."""

import pytest

from headstats.analyses import analysis_options
from headstats.analyses.dependency.options import DependencyOptions
from headstats.errors import ProtocolError


def test_defaults_are_the_papers_with_a_split_selection_and_the_sentence_test():
    options = DependencyOptions()
    assert (options.from_word, options.labels, options.offsets) == ("mean", "base", [-3, -2, -1, 1, 2])
    assert (options.min_count, options.selection, options.test) == (100, "split", "signflip_sentences")


def test_an_empty_list_of_offsets_is_refused():
    with pytest.raises(ProtocolError, match=r"analysis_options\.dependency\.offsets"):
        analysis_options("dependency", {"offsets": []})
