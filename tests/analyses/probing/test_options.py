"""The probing analysis' options: the paper's training settings, read after the pass."""

import pytest

from headstats.analyses import analysis_options
from headstats.analyses.probing.options import ProbingOptions
from headstats.engine.cache import AFTER_PASS
from headstats.errors import ProtocolError


def test_defaults_are_the_papers_and_training_is_after_the_pass():
    options = ProbingOptions()
    assert (options.from_word, options.vectors, options.lr, options.hidden) == ("mean", None, 0.002, 200)
    assert (options.batch_size, options.epochs) == (4, 2)  # mini-batches (docs/guide.md: measured against 1 x 1)
    after = {k for k, f in ProbingOptions.model_fields.items() if f.json_schema_extra == AFTER_PASS}
    assert after == {"vectors", "lr", "hidden", "batch_size", "epochs"}


def test_a_zero_learning_rate_is_refused():
    with pytest.raises(ProtocolError, match=r"analysis_options\.probing\.lr"):
        analysis_options("probing", {"lr": 0})
