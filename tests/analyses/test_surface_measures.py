"""The surface measure names load without torch and agree with the measures computed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from headstats.analyses.surface_measures import DEFAULT_HYPOTHESES, SURFACE_COLUMNS, SURFACE_MEASURES

SRC = Path(__file__).resolve().parents[2] / "src"


def test_columns_and_hypotheses_name_known_measures():
    assert SURFACE_COLUMNS[:4] == ("model", "dataset", "layer", "head")
    assert set(SURFACE_COLUMNS[4:]) <= set(SURFACE_MEASURES)
    assert {h["measure"] for h in DEFAULT_HYPOTHESES} <= set(SURFACE_MEASURES)


def test_protocol_validation_imports_no_torch():
    code = ("import sys\nfrom headstats.config.protocol import validate_protocol\n"
            "validate_protocol({'datasets': [{'name': 'd', 'path': 'x.txt'}]})\n"
            "sys.exit(1 if 'torch' in sys.modules else 0)\n")
    assert subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(SRC)}).returncode == 0
