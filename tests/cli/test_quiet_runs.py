"""``--quiet`` means nothing printed: a run that draws pieces in scripts DejaVu Sans lacks (CJK) says nothing on
standard error (issue 22: dozens of ``Glyph ... missing from font(s) DejaVu Sans`` lines under --quiet)."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from cli.cli_helpers import runner
from headstats.cli.main import app


@pytest.mark.slow
def test_a_quiet_run_drawing_cjk_pieces_prints_nothing(tmp_path):
    # 12 inputs (with 3, the statistics' Bayes factor integral warns that it diverges: another matter)
    names = ["東京", "長江", "日本", "北京", "大阪", "上海", "京都", "台北", "香港", "中国", "山本", "田中"]
    data = tmp_path / "cjk.txt"
    data.write_text("".join(f"the word {w} is written in the old script , she said .\n" if i % 2 else
                            f"{w} was where he read the book yesterday .\n" for i, w in enumerate(names)),
                    encoding="utf-8")
    protocol = tmp_path / "cjk.yaml"
    protocol.write_text(yaml.safe_dump({
        "name": "cjk", "models": ["default"], "datasets": [{"name": "cjk", "path": str(data)}],
        "scoring": {"roles": ["local", "delimiter"]}, "statistics": {"sensitivity": False},
        "analyses": ["pictures"], "analysis_options": {"pictures": {"n_inputs": 3}},
        "report": {"figures": {"formats": ["png"], "dpi": 72}},  # the glyphs are drawn in any format
    }, allow_unicode=True), encoding="utf-8")
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(protocol), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    # the pictures drew CJK pieces (the default model's vocabulary has these characters), so the test can fail
    tokens = pd.read_csv(out / "attention_tokens.csv")
    assert tokens.astype(str).apply(lambda column: column.str.contains("|".join("".join(names)))).any().any()
    assert result.stderr == ""
    assert result.stdout == ""
