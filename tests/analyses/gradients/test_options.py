"""The gradients analysis' options: the share of pieces masked for the masked-LM loss (BERT's 15 %)."""

import pytest

from headstats.analyses import analysis_options
from headstats.analyses.gradients.options import GradientOptions
from headstats.errors import ProtocolError


def test_mask_share_defaults_to_bert_pretraining():
    assert GradientOptions().mask_share == 0.15


def test_an_unknown_key_is_refused_naming_it():
    with pytest.raises(ProtocolError, match=r"analysis_options\.gradients\.mask_rate"):
        analysis_options("gradients", {"mask_rate": 0.2})
