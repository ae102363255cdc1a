"""Options of the importance analysis: defaults, shares sorted with 0 first, and one-line refusals."""

from __future__ import annotations

import pytest

from headstats.analyses import analysis_options
from headstats.analyses.importance.options import ImportanceOptions
from headstats.errors import ProtocolError


def test_defaults_and_shares():
    options = ImportanceOptions()
    assert options.ablation == "mean" and options.prune_by == "gradient" and options.prune_tolerance == 0.01
    assert ImportanceOptions(prune_shares=[0.5, 0.25, 0.5]).prune_shares == [0.0, 0.25, 0.5]


@pytest.mark.parametrize("given, where", [({"ablation": "resample"}, "ablation"), ({"prune_shares": [1.0]}, "prune_shares"),
                                          ({"lesion": True}, "lesion")])
def test_bad_options_are_refused_naming_the_key(given, where):
    with pytest.raises(ProtocolError, match=f"invalid analysis_options.importance.{where}"):
        analysis_options("importance", given, schema=ImportanceOptions)
