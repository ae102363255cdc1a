"""run_study end to end on a tiny random model: the tables it writes equal scipy and statsmodels applied to
the per-input scores it wrote, and its helpers (which data need parses, which rows fine-tuning saw)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats
from statsmodels.stats.multitest import multipletests

from headstats.config.protocol import load_protocol
from headstats.study.run import needs_parses, run_study, training_exclusions

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def _protocol(folder: Path, model: Path, roles: list[str]) -> Path:
    text = {
        "name": "tiny",
        "models": [{"name": "tiny", "path": str(model)}],
        "datasets": [{"name": "single", "path": str(DEMO / "sentences.txt"), "limit": 12}],
        "scoring": {"roles": roles},
        "statistics": {"test": "t", "tau": 1.0, "alpha": 0.05, "correction": "holm", "sensitivity": False},
    }
    path = folder / "p.yaml"
    path.write_text(yaml.safe_dump(text))
    return path


def test_run_study_tables_equal_scipy_and_statsmodels_on_its_own_scores(tmp_path, tiny_model_dir):
    protocol = load_protocol(_protocol(tmp_path, tiny_model_dir, ["local", "delimiter"]))
    result = run_study(protocol, tmp_path / "out")
    scores = pd.read_parquet(tmp_path / "out" / "scores.parquet")
    tests = pd.read_csv(tmp_path / "out" / "tests.csv")
    assert len(tests) == 2 * 2 * 2  # layers x heads x roles
    expected = []
    for (role, layer, head), group in scores.groupby(["role", "layer", "head"], observed=True):
        row = tests[(tests.role == role) & (tests.layer == layer) & (tests["head"] == head)].iloc[0]
        ref = stats.ttest_1samp(group.score.to_numpy(float), 1.0, alternative="greater")
        assert row["n"] == len(group) == 12
        assert row["mean"] == pytest.approx(group.score.mean(), rel=1e-6)
        assert row["p_unc"] == pytest.approx(ref.pvalue, rel=1e-6, abs=1e-300)
        expected.append((row["p_unc"], row["p_corr"], row["reject"]))
    p_unc, p_corr, reject = map(np.array, zip(*expected))
    ref_reject, ref_corr, _, _ = multipletests(p_unc, alpha=0.05, method="holm")
    np.testing.assert_allclose(p_corr, ref_corr, rtol=1e-9)
    assert (reject == ref_reject).all()
    # the result object carries the same numbers as the folder
    assert len(result.scores_frame()) == len(scores)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["written_by"] == "headstats" and "tests.csv" in manifest["output_files"]
    # the typed provenance (headstats.provenance): weights, tokenizer, the data file's sha256, versions
    import hashlib

    provenance = manifest["provenance"]["tiny"]
    assert provenance["weights_sha256"] == manifest["models"]["tiny"]["weights_sha256"]
    assert provenance["tokenizer_fingerprint"] == manifest["models"]["tiny"]["vocab_sha256"]
    assert provenance["data_sha256"] == {"single": hashlib.sha256((DEMO / "sentences.txt").read_bytes()).hexdigest()}
    assert provenance["versions"]["numpy"] == np.__version__


def test_needs_parses_only_for_arc_roles(tmp_path, tiny_model_dir):
    assert not needs_parses(load_protocol(_protocol(tmp_path, tiny_model_dir, ["local", "block"])))
    assert needs_parses(load_protocol(_protocol(tmp_path, tiny_model_dir, ["local", "syntactic:nsubj"])))


def test_training_exclusions_are_empty_without_glue_or_finetuned_models(tmp_path, tiny_model_dir):
    protocol = load_protocol(_protocol(tmp_path, tiny_model_dir, ["local"]))
    assert training_exclusions(protocol.datasets[0], {"ft": {"path": "x"}}) == set()


def test_statistics_and_report_steps_say_what_they_do_and_the_result_shows_in_a_notebook(
        tmp_path, tiny_model_dir, monkeypatch):
    import html
    import sys
    import types

    lines: list[str] = []
    protocol = load_protocol(_protocol(tmp_path, tiny_model_dir, ["local", "delimiter"]))
    result = run_study(protocol, tmp_path / "out", log=lines.append)
    tests = pd.read_csv(tmp_path / "out" / "tests.csv")
    assert "testing every head and role: 8 (head, role) pairs, t test, tau 1, holm correction" in lines
    tested = next(line for line in lines if line.startswith("tested in "))
    assert tested.endswith(f": {int(tests['reject'].sum())} (head, role) pairs assigned")
    assert "report: summary and role grids of 1 (model, data set)" in lines
    assert lines.index("drawing the figures and writing the report") < lines.index(
        "report: writing report.md and report.html")

    page = result._repr_html_()
    roles = pd.read_csv(tmp_path / "out" / "roles.csv")
    assert "<td style='text-align:left'>12</td>" in page  # inputs scored
    held = [c for c in roles.columns if c in ("local", "delimiter")]
    assert ", ".join(f"{c} {int(roles[c].sum())}" for c in held) in page
    assert (tmp_path / "out" / "report.html").resolve().as_uri() in page

    class HTML:  # IPython.display.HTML, as far as show_report uses it
        def __init__(self, data):
            self.data = data

    display = types.ModuleType("IPython.display")
    display.HTML = HTML
    monkeypatch.setitem(sys.modules, "IPython", types.ModuleType("IPython"))
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    shown = result.show_report(height=500)
    assert shown.data.startswith('<iframe srcdoc="') and "height:500px" in shown.data
    report = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert html.escape(report, quote=True) in shown.data  # the whole self-contained page, escaped

    monkeypatch.setitem(sys.modules, "IPython.display", None)  # no IPython: the browser opens the file
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    assert result.show_report() == tmp_path / "out" / "report.html"
    assert opened == [(tmp_path / "out" / "report.html").resolve().as_uri()]


def test_fine_tuning_progress_draws_steps_and_logs_every_tenth():
    from contextlib import ExitStack, contextmanager

    from headstats.model.finetune import TrainingStep
    from headstats.study.run import _training_progress

    events: list = []

    @contextmanager
    def factory(description, total):
        events.append(("open", description, total))

        def advance(n):
            events.append(("advance", n))

        advance.status = lambda text: events.append(("status", text))
        yield advance
        events.append(("close",))

    lines: list[str] = []
    with ExitStack() as stack:
        report = _training_progress("sst2-ft", lines.append, factory, stack)
        for step in range(1, 21):
            report(TrainingStep(step, 20, loss=0.5, elapsed_s=float(step)))
        assert ("close",) not in events
    assert events[0] == ("open", "fine-tuning sst2-ft (steps)", 20) and events[-1] == ("close",)
    assert events.count(("advance", 1)) == 20 and ("status", "loss 0.500") in events
    assert len(lines) == 10 and lines[0].startswith("fine-tuning sst2-ft: step 2/20 (10%), loss 0.500")


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


register_analysis("first_mass_outside", FirstMass, finish=finish, report=section, description="mass on position 0")
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
        text = yaml.safe_load(_protocol(tmp_path, tiny_model_dir, ["local"]).read_text())
        path = tmp_path / "outside.yaml"
        path.write_text(yaml.safe_dump({**text, "analyses": ["first_mass_outside"]}))
        result = run_study(load_protocol(path), tmp_path / "out")
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


def test_an_analysis_option_is_part_of_its_jobs_cache_key_and_nothing_else():
    """Changing ``analysis_options.clustering.max_inputs`` changes the clustering state, so its jobs' keys;
    spelling out a default, or another analysis' option, leaves them alone."""
    from headstats.config.protocol import validate_protocol
    from headstats.engine.cache import digest
    from headstats.study.run import study_jobs

    base = {"datasets": [{"name": "d", "path": "x.txt"}], "analyses": ["clustering", "surface"]}

    def keys(**options):
        protocol = validate_protocol({**base, "analysis_options": options})
        jobs, _ = study_jobs(protocol, roles={"d": (["local"], {})})
        return {job.name: digest(dict(job.options)) for job in jobs}

    plain = keys()
    assert keys(clustering={"max_inputs": 100}) == plain  # the default, written out
    changed = keys(clustering={"max_inputs": 5})
    assert changed["clustering"] != plain["clustering"]
    assert changed["surface"] == plain["surface"] and changed["role_scores"] == plain["role_scores"]


def test_an_analysis_datasets_option_plans_its_jobs_on_those_data_sets_only():
    """``analysis_options.clustering.datasets`` (Clark et al. cluster WikiText only): clustering jobs on the named
    data sets, every other job on every data set; the option is not part of the clustering jobs' keys."""
    from headstats.config.protocol import validate_protocol
    from headstats.engine.cache import digest
    from headstats.study.run import study_jobs

    base = {"datasets": [{"name": "d", "path": "x.txt"}, {"name": "e", "path": "y.txt"}],
            "analyses": ["clustering", "surface"]}
    roles = {"d": (["local"], {}), "e": (["local"], {})}

    def planned(**options):
        jobs, _ = study_jobs(validate_protocol({**base, "analysis_options": options}), roles=roles)
        return {(job.name, job.dataset): digest(dict(job.options)) for job in jobs}

    every = planned()
    assert {name for name, _ in every} == {"role_scores", "clustering", "surface"} and len(every) == 6
    only_e = planned(clustering={"datasets": ["e"]})
    assert set(only_e) == set(every) - {("clustering", "d")}
    assert only_e == {key: value for key, value in every.items() if key in only_e}  # the same keys
    assert planned(clustering={"datasets": ["e", "d"]}) == every


# Cache keys name what a collector reads: its model, its data set's records, its own options, its code version.

def _cached_run(tmp_path, model, *, extra: dict | None = None, models: list | None = None, out: str = "out"):
    """Run a protocol (role ``local``, analyses surface and clustering, data set ``single``) with ``extra`` keys
    merged in; return the log's "found in the cache" lines."""
    text = yaml.safe_load(_protocol(tmp_path, model, ["local"]).read_text())
    text["analyses"] = ["surface", "clustering"]
    if models is not None:
        text["models"] = models
    for key, value in (extra or {}).items():
        text[key] = value
    path = tmp_path / f"{out}.yaml"
    path.write_text(yaml.safe_dump(text))
    lines: list[str] = []
    run_study(load_protocol(path), tmp_path / out, overwrite=True, log=lines.append)
    return [line for line in lines if " / " in line and "inputs found in the cache" in line]


def test_adding_a_data_set_reuses_every_state_of_the_first(tmp_path, tiny_model_dir):
    assert _cached_run(tmp_path, tiny_model_dir) == ["tiny / single: 0 of 12 inputs found in the cache"]
    other = {"name": "other", "path": str(DEMO / "sentences.txt"), "limit": 5}
    single = {"name": "single", "path": str(DEMO / "sentences.txt"), "limit": 12}
    assert _cached_run(tmp_path, tiny_model_dir, extra={"datasets": [single, other]}) == [
        "tiny / single: 12 of 12 inputs found in the cache; no forward pass",  # scores, surface and clustering
        "tiny / other: 0 of 5 inputs found in the cache"]


def test_adding_a_model_reuses_every_state_of_the_first(tmp_path, tiny_model_dir):
    from conftest import build_tiny_bert

    second = build_tiny_bert(tmp_path / "second", seed=1)
    first = {"name": "tiny", "path": str(tiny_model_dir)}
    _cached_run(tmp_path, tiny_model_dir)
    assert _cached_run(tmp_path, tiny_model_dir, models=[first, {"name": "second", "path": str(second)}]) == [
        "tiny / single: 12 of 12 inputs found in the cache; no forward pass",
        "second / single: 0 of 12 inputs found in the cache"]


def test_an_analysis_option_reruns_that_analysis_alone_and_another_options_reuse_it(tmp_path, tiny_model_dir):
    _cached_run(tmp_path, tiny_model_dir)
    # clustering.max_inputs changes the clustering state: only the clustering runs again
    assert _cached_run(tmp_path, tiny_model_dir, extra={"analysis_options": {"clustering": {"max_inputs": 5}}}) == [
        "tiny / single: 0 of 12 inputs found in the cache (role_scores, surface reused; clustering computed)"]
    # options read only after the pass (a hypothesis' threshold, the permutations) and the seed reuse every state
    after = {"surface": {"hypotheses": [{"name": "prev", "measure": "prev", "threshold": 0.1}]},
             "clustering": {"max_inputs": 5, "n_permutations": 199}}
    assert _cached_run(tmp_path, tiny_model_dir, extra={"analysis_options": after, "seed": 7}) == [
        "tiny / single: 12 of 12 inputs found in the cache; no forward pass"]
    tests = pd.read_csv(tmp_path / "out" / "surface_tests.csv")
    assert set(tests["role"]) == {"prev"} and (tests["threshold"] == 0.1).all()


def test_a_scoring_option_reruns_the_scores_alone(tmp_path, tiny_model_dir):
    _cached_run(tmp_path, tiny_model_dir)
    assert _cached_run(tmp_path, tiny_model_dir, extra={"scoring": {"roles": ["local"], "window": 1}}) == [
        "tiny / single: 0 of 12 inputs found in the cache (surface, clustering reused; role_scores computed)"]
