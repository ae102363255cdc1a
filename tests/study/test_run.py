"""run_study end to end: an analysis written outside the package runs with its finish step and report section,
with nothing else edited; the report is the layer above, written only by the writer a caller gives."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from tiny_study import tiny_protocol

from headstats.config.protocol import load_protocol
from headstats.errors import HeadstatsError
from headstats.report.builder import build_report
from headstats.study.run import run_study



OUTSIDE_ANALYSIS = '''
"""An analysis written outside headstats: mean attention on the first position, per head."""
import pandas as pd

from headstats.analyses import register_analysis
from headstats.engine.collector import Collector, Moments


class FirstMass(Collector):
    def __init__(self, context):
        super().__init__(context)
        self._state = Moments.zeros((context.n_layers, context.n_heads))

    def update(self, view):
        attn = view.masked_attention.double()
        n = view.real.sum(-1).double()[:, None, None]
        self._state.add((attn[..., 0].sum(-1) / n).numpy())

    @classmethod
    def merge(cls, states):
        return Moments.combine(states)

    def tables(self):
        m = self._state
        return {"first_mass": self.context.head_frame(model=self.context.model, dataset=self.context.dataset,
                                                      n=m.n, mass_mean=m.mean_or_nan)}


def finish(tables, statistics, options, seed):
    frame = tables["first_mass"]
    return {"first_mass_top": frame.nlargest(1, "mass_mean")[["layer", "head", "mass_mean"]]}


def section(report, root, tables):
    top = tables["first_mass_top"].iloc[0]
    report.heading("First-position mass (outside)")
    report.text(f"Head {int(top['layer'])}-{int(top['head'])} puts the most mass on the first position.")


register_analysis("first_mass_outside", FirstMass, finish=finish, section=section, description="mass on position 0")
'''


def test_an_analysis_registered_outside_the_package_runs_with_its_finish_and_section(tmp_path, tiny_model_dir,
                                                                                    monkeypatch):
    """Adding an analysis needs nothing but its module: no registry, runner, protocol or report edit."""
    import importlib

    from headstats.analyses import ANALYSES

    (tmp_path / "outside_analysis.py").write_text(OUTSIDE_ANALYSIS)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("outside_analysis")
    try:
        text = yaml.safe_load(tiny_protocol(tmp_path, tiny_model_dir, ["local"]).read_text())
        path = tmp_path / "outside.yaml"
        path.write_text(yaml.safe_dump({**text, "analyses": ["first_mass_outside"]}))
        result = run_study(load_protocol(path), tmp_path / "out", report=build_report)
        table = pd.read_csv(result.out / "first_mass.csv")
        assert len(table) == 4 and (table["n"] == 12).all() and table["mass_mean"].between(0, 1).all()
        top = pd.read_csv(result.out / "first_mass_top.csv").iloc[0]
        best = table.loc[table["mass_mean"].idxmax()]
        assert (top["layer"], top["head"]) == (best["layer"], best["head"])
        report = (result.out / "report.md").read_text()
        assert "## First-position mass (outside)" in report
        assert f"Head {int(best['layer'])}-{int(best['head'])} puts the most mass on the first position." in report
    finally:
        ANALYSES.unregister("first_mass_outside")


def test_a_study_given_no_report_writer_writes_tables_and_manifest_and_headstats_report_builds_the_report(
        tmp_path, tiny_model_dir):
    from headstats.report.builder import rebuild_report

    lines: list[str] = []
    result = run_study(load_protocol(tiny_protocol(tmp_path, tiny_model_dir, ["local"])), tmp_path / "out",
                       log=lines.append)
    listed = json.loads((result.out / "manifest.json").read_text())["output_files"]
    assert "tests.csv" in listed and "claims.csv" in listed
    assert not [f for f in listed if f.startswith(("report.", "figures/"))] and result.report_path is None
    assert "drawing the figures and writing the report" not in lines
    with pytest.raises(HeadstatsError, match="holds no report; rebuild it with headstats report"):
        result.show_report()
    assert rebuild_report(result.out, html=False) == result.out / "report.md" == result.report_path
    assert "## Claims, tested" in (result.out / "report.md").read_text()


def test_run_scores_writes_the_scores_of_run_study_through_the_same_passes(tmp_path, tiny_model_dir):
    """``headstats score`` (run_scores) is the study's passes and its writer, with no statistics: the same
    scores.parquet as run_study of the same protocol, the same counts, and nothing else but the manifest."""
    from headstats.study.run import run_scores

    protocol = load_protocol(tiny_protocol(tmp_path, tiny_model_dir, ["local", "delimiter"]))
    study = run_study(protocol, tmp_path / "study")
    scored = run_scores(protocol, tmp_path / "scores", model="tiny")
    pd.testing.assert_frame_equal(pd.read_parquet(scored.out / "scores.parquet"),
                                  pd.read_parquet(study.out / "scores.parquet"))
    assert sorted(p.name for p in scored.out.iterdir()) == ["manifest.json", "scores.parquet"]
    manifest = json.loads((scored.out / "manifest.json").read_text())
    assert manifest["inputs"]["tiny/single"]["n_scored"] == study.manifest["inputs"]["tiny/single"]["n_scored"] == 12
    assert scored.scores[0].values.size == len(study.scores_frame()) == 12 * 2 * 2 * 2
