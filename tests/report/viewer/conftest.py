"""The viewer tests' run: the tiny model on 12 demo sentences, with the pictures analysis and its report."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import headstats as hs


@pytest.fixture(scope="session")
def viewer_run(tiny_model_dir, tmp_path_factory) -> Path:
    """A finished run (local and the delimiters, window 1, tau 1; ``pictures`` of 2 inputs; report.html)."""
    folder = tmp_path_factory.mktemp("viewer_run")
    protocol = {"name": "tiny", "models": [{"name": "tiny", "path": str(tiny_model_dir)}],
                "datasets": [{"name": "single", "path": str(Path(__file__).resolve().parents[3] / "data" / "demo"
                                                            / "sentences.txt"), "limit": 12}],
                "scoring": {"roles": ["local", "delimiter", "delimiter_cls", "delimiter_sep"], "window": 1},
                "statistics": {"test": "t", "tau": 1.0, "sensitivity": False}, "analyses": ["pictures"],
                "analysis_options": {"pictures": {"n_inputs": 2}},
                "report": {"figures": {"formats": ["png"], "dpi": 72}}}
    (folder / "p.yaml").write_text(yaml.safe_dump(protocol))
    hs.run(folder / "p.yaml", folder / "run")
    return folder / "run"
