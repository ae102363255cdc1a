"""Options of the Clark et al. analyses: defaults, refusals, and their check in a protocol before any model."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from headstats.analyses.clark_options import DependencyOptions
from headstats.errors import ProtocolError

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def test_defaults_follow_the_paper():
    options = DependencyOptions()
    assert (options.from_word, options.labels, options.offsets) == ("mean", "base", [-3, -2, -1, 1, 2])
    assert options.selection == "split" and options.alternative == "greater"


def protocol_file(tmp_path, **extra) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"models": [{"name": "x", "path": str(tmp_path / "no-model")}],
                                    "datasets": [{"name": "mini", "path": str(DEMO / "mini.conllu")}], **extra}))
    return path


def test_bad_option_is_one_protocol_error_naming_the_key(tmp_path):
    from headstats.config.protocol import load_protocol

    path = protocol_file(tmp_path, analyses=["dependency"], analysis_options={"dependency": {"from_word": "last"}})
    with pytest.raises(ProtocolError, match="analysis_options.dependency.from_word"):
        load_protocol(path)


def test_options_of_an_analysis_not_run_are_refused(tmp_path):
    from headstats.config.protocol import load_protocol

    path = protocol_file(tmp_path, analyses=["entropy"], analysis_options={"dependency": {"min_count": 5}})
    with pytest.raises(ProtocolError, match="not in 'analyses'"):
        load_protocol(path)
