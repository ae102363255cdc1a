"""``headstats.testing.check_analysis`` over every analysis a protocol may name, as scikit-learn's
``check_estimator``; a user's analysis registered from outside the package (``tests/user_analysis/peak``: options,
finish, a claim, a figure and a section) passes it and runs through a protocol; a broken merge is caught."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import GUM
from headstats.analyses import ANALYSES, list_analyses
from headstats.testing import AnalysisCheckError, check_analysis

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo"
#: The analyses of the package (the user's ``peak`` is registered below, by its test).
BUILTIN = sorted(list_analyses())
SENTENCES = [{"name": "s", "path": str(DEMO / "sentences.txt"), "limit": 5}]


def datasets_for(name: str, tmp_path: Path) -> list[dict]:
    """Small data each analysis runs on: parsed sentences for the syntax analyses, GUM-style coreference."""
    if name in ("dependency", "probing"):
        return [{"name": "mini", "path": str(DEMO / "mini.conllu")}]
    if name == "coreference":
        (tmp_path / "g.conllu").write_text("".join(GUM.replace("doc1", f"doc{k}") for k in range(1, 6)))
        return [{"name": "gum", "path": str(tmp_path / "g.conllu"), "format": "gum_coref"}]
    return SENTENCES


#: Options other than the defaults: importance's default mean ablation replaces a head by its mean over the chunk
#: (documented in its collect.py: the data set's whenever it fits in one chunk), so its states depend on the
#: chunking by design, which check_analysis reports; zero ablation does not. The pictures of one short input are
#: enough to check that the section draws (its figures are most of the check's time).
OPTIONS = {"importance": {"ablation": "zero"}, "pictures": {"n_inputs": 1, "max_pieces": 16}}


@pytest.mark.parametrize("name", BUILTIN)
def test_every_analysis_passes_check_analysis(name, tmp_path, tiny_model_dir):
    tables = check_analysis(name, tmp_path / "check", model=tiny_model_dir, datasets=datasets_for(name, tmp_path),
                            options=OPTIONS.get(name))
    assert tables and set(tables) <= set(ANALYSES.get(name).tables)


@pytest.fixture
def peak():
    import user_analysis.peak  # noqa: F401  registers "peak" from outside the package

    yield ANALYSES.get("peak")


def test_a_users_analysis_passes_check_analysis_and_runs_through_a_protocol(peak, tmp_path, tiny_model_dir):
    import headstats as hs

    tables = check_analysis("peak", tmp_path / "check", model=tiny_model_dir, datasets=SENTENCES,
                            options={"threshold": 0.3})
    share = tables["peak_share"].iloc[0]
    assert share["n_heads"] == 4 and share["threshold"] == 0.3  # 2 layers x 2 heads; the option reached finish
    protocol = {"name": "mine", "models": [{"name": "m", "path": str(tiny_model_dir)}], "datasets": SENTENCES,
                "scoring": {"roles": ["local"]}, "statistics": {"tau": 1.0, "sensitivity": False},
                "analyses": ["peak"], "analysis_options": {"peak": {"threshold": 0.3}},
                "report": {"html": False, "figures": {"formats": ["png"], "dpi": 72}}}
    path = tmp_path / "protocol.yaml"
    path.write_text(yaml.safe_dump(protocol))
    run = hs.run(path, tmp_path / "run")
    claims = pd.read_csv(run.out / "claims.csv")
    assert claims.loc[claims["claim"] == "most_heads_peaked", "source"].tolist() == ["a user"]
    report = (run.out / "report.md").read_text()
    assert "## Peaked heads" in report and "figures/peak_m_s.png" in report
    assert "`peak_share.csv`: per model and data set, the share of heads whose mean peak exceeds" in report


def test_a_merge_that_loses_a_state_is_caught(peak, tmp_path, tiny_model_dir, monkeypatch):
    from user_analysis.peak.collect import PeakCollector

    monkeypatch.setattr(PeakCollector, "merge", classmethod(lambda cls, states: states[0]))
    with pytest.raises(AnalysisCheckError, match="chunked and sharded states merged equal one pass: column 'n'"):
        check_analysis("peak", tmp_path / "check", model=tiny_model_dir, datasets=SENTENCES)
