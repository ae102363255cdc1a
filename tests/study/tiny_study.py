"""A protocol of the tiny random model on the demo sentences, shared by the study's test modules
(``from tiny_study import tiny_protocol``)."""

from __future__ import annotations

from pathlib import Path

import yaml

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def tiny_protocol(folder: Path, model: Path, roles: list[str]) -> Path:
    """Write ``p.yaml`` in ``folder``: model ``tiny``, data set ``single`` (12 demo sentences), a t test."""
    text = {
        "name": "tiny",
        "models": [{"name": "tiny", "path": str(model)}],
        "datasets": [{"name": "single", "path": str(DEMO / "sentences.txt"), "limit": 12}],
        "scoring": {"roles": roles},
        "statistics": {"test": "t", "tau": 1.0, "alpha": 0.05, "correction": "holm", "sensitivity": False},
        "report": {"figures": {"formats": ["png"], "dpi": 72}},  # tables are tested here; figures in tests/report
    }
    path = folder / "p.yaml"
    path.write_text(yaml.safe_dump(text))
    return path
