"""What the command-line tests share: the demo data, a runner, a small protocol and the one-line-error check."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from headstats.cli.main import app

REPO = Path(__file__).resolve().parents[2]


DEMO = REPO / "data" / "demo"


runner = CliRunner()


def write_protocol(folder: Path, model: str, **overrides) -> Path:
    protocol = {
        "name": "tiny",
        "models": [model],
        "datasets": [
            {"name": "single", "path": str(DEMO / "sentences.txt"), "limit": 24},
            {"name": "pairs", "path": str(DEMO / "pairs.txt"), "limit": 12},
            {"name": "gold", "path": str(DEMO / "mini.conllu")},
        ],
        "scoring": {"batch_size": 5},
        "statistics": {"tau": 1.0, "sensitivity": False},
        "report": {"figures": {"formats": ["png"], "dpi": 72}},  # tables are tested here; figures in tests/report
    }
    protocol.update(overrides)
    path = folder / "protocol.yaml"
    path.write_text(yaml.safe_dump(protocol))
    return path


def assert_one_line_error(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.strip().splitlines() if line.startswith("error")]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert result.output.strip().endswith(lines[0]), result.output  # the error is the last thing said
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0], lines[0]


def _glue_root(folder: Path) -> Path:
    root = folder / "glue"
    (root / "SST-2").mkdir(parents=True, exist_ok=True)
    (root / "SST-2" / "dev.tsv").write_text("sentence\tlabel\nthe cat sat\t1\n")
    return root


def _no_weights(folder: Path) -> str:
    model = folder / "no_weights"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    return str(model)


def assert_validate_equals_run(protocol: Path, out: Path, *needles: str, extra: tuple[str, ...] = ()) -> str:
    before = sorted(out.parent.rglob("*"))
    checked = runner.invoke(app, ["validate", str(protocol), "--out", str(out), *extra])
    ran = runner.invoke(app, ["run", str(protocol), "--out", str(out), "--quiet", *extra])
    assert_one_line_error(checked, *needles)
    assert_one_line_error(ran, *needles)
    assert checked.output == ran.output
    assert sorted(out.parent.rglob("*")) == before  # no output, staging or probe file made
    return checked.output.strip()
