"""The report builder: the report's layout (claims first, then the summary, contents, one caption per figure;
a protocol of analyses led by them), the sections of the analyses from their registry entries, and rebuilding
a run's report from its tables without torch, in place and without touching files headstats did not write."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from headstats.analyses.pande_roles.finish.role_assignment import colocation, role_table
from headstats.tables.study_tables import heads_per_role_per_layer
from headstats.tables.study_tables import strongest_heads
from headstats.errors import HeadstatsError
from headstats.folders import STAGING_MARKER
from headstats.config.protocol import Protocol, dump_protocol
from headstats.report.builder import build_report, rebuild_report
from headstats.stats.claim_catalog import evaluate_all_claims
from headstats.stats.claims import ClaimSettings
from headstats.tables import RunTables

from conftest import PLANTED_HELD, process_running, wait_until
from report.test_figures import drawing_workers, end_processes

REPO = Path(__file__).resolve().parents[2]

# ============================================================================================ a run folder

ROLES = ["local", "delimiter", "delimiter_cls", "delimiter_sep", "syntactic", "syntactic:nsubj"]


def planted_tests() -> pd.DataFrame:
    rows = []
    for role in ROLES:
        for layer in range(6):
            for head in range(2):
                held = (layer, head) in PLANTED_HELD[role]
                p = 1e-6 * (1 + layer + head) if held else 0.9
                rows.append(dict(model="m", dataset="d1", role=role, layer=layer, head=head, test="t", n=20,
                                 mean=5.0 + layer / 10 + head / 100 if held else 1.0 + layer / 10, sd=1.0,
                                 tau=3.0, p_unc=p, p_corr=min(1.0, p * 72), alpha=0.05,
                                 effect_size=2.0 if held else -2.0, ci_low=4.5 if held else 0.5, reject=held))
    return pd.DataFrame(rows)


def write_run(folder: Path) -> Path:
    """A finished run folder written by hand as ``run_study`` writes it (no model, no scores)."""
    from headstats.study.storage import write_manifest

    folder.mkdir(parents=True)
    protocol = Protocol.model_validate({"name": "planted", "models": ["m"], "datasets": [{"name": "d1",
                                        "path": "x.txt"}], "scoring": {"roles": ROLES},
                                        "report": {"top_k": 2, "figures": {"dpi": 72}}})  # print checks: test_figures
    tests = planted_tests()
    roles = role_table(tests)
    tables = {"heads_per_layer": heads_per_role_per_layer(roles), "colocation": colocation(roles),
              "strongest_heads": strongest_heads(tests, k=2),
              "claims": evaluate_all_claims({"roles": roles, "tests": tests}, ClaimSettings())}
    tests.to_parquet(folder / "tests.parquet", index=False)
    tests.to_csv(folder / "tests.csv", index=False)
    roles.to_csv(folder / "roles.csv", index=False)
    for name, table in tables.items():
        table.to_csv(folder / f"{name}.csv", index=False)
    (folder / "protocol.resolved.yaml").write_text(dump_protocol(protocol))
    manifest = {
        "headstats_run": "planted", "protocol_sha256": "0" * 64, "seed": 0,
        "models": {"m": {"architecture": "BertModel", "n_layers": 6, "n_heads": 2}},
        "datasets": {"d1": {"n_read": 20, "pairs": 0, "parses": "spacy", "parser": "en_core_web_sm"}},
        "inputs": {"m/d1": {"model": "m", "dataset": "d1", "n_records": 20, "n_scored": 20, "skipped": {},
                            "notes": {}, "roles_not_applicable": {}}},
    }
    build_report(folder, protocol, RunTables({"tests": tests, "roles": roles, **tables}), manifest)
    write_manifest(folder, manifest)
    return folder


@pytest.fixture(scope="module")
def built_run(tmp_path_factory) -> Path:
    return write_run(tmp_path_factory.mktemp("built") / "run")


@pytest.fixture
def run(built_run, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(built_run, copy)
    return copy


def test_report_leads_with_the_claims_table_then_the_summary(built_run):
    md = (built_run / "report.md").read_text()
    sections = [line for line in md.splitlines() if line.startswith("## ")]
    assert sections[:3] == ["## Claims, tested", "## Summary", "## Methods"]
    assert md.index("**Contents**") < md.index("## Claims, tested") < md.index("## Summary") < \
        md.index("![role grid of m on d1]")
    assert "- [Claims, tested](#claims-tested)\n- [Summary](#summary)\n  - [m on d1](#m-on-d1)" in md
    # the claims table: claim by data set, from claims.csv (evaluate_claims on the planted roles: 8 delimiter
    # heads against 4 syntactic, 6 and 2 discordant -> binomial p = 0.145, doubled 0.289; five claims can reject
    # (floors in both directions, METHODS 5.4), and 0.289 is third smallest: Holm 3 x 0.289 = 0.87)
    claims = md[md.index("## Claims, tested"):md.index("## Summary")]
    assert "the `family` column): Pande claims of m (5 that can reject); Holm's step-down correction" in claims
    assert "| delimiter heads are the largest group | Pande et al. 2021 | not shown (p = 0.87) |" in claims
    assert "| few heads hold several roles in the last two layers | Pande et al. 2021 | not shown (p = 1) |" in claims
    # each verdict is stated once: the claims table; the summary never repeats it nor gives its own
    assert md.count("delimiter heads are the largest group") == 1
    assert "**holds**" not in md and "**does not hold**" not in md and "- **not shown**" not in md
    assert "**11 of 12 heads** hold at least one role; 4 hold roles of two or more kinds." in md
    # what each head does: head -> roles, from roles.csv
    roles = pd.read_csv(built_run / "roles.csv")
    first = roles[roles["n_roles"] > 0].sort_values(["layer", "head"]).iloc[0]
    from headstats.plots.style import order_roles

    held = [c for c in order_roles(ROLES) if str(first[c]) == "True"]
    assert f"| {first['layer']}-{first['head']} | {', '.join(held)} | {len(held)} |" in md
    # and grouped by what the heads do, in a table short enough to stay open
    row = next(line for line in md.splitlines() if line.startswith(f"| {', '.join(held)} | "))
    assert f"{first['layer']}-{first['head']}" in row.split(" | ")[1]
    html = (built_run / "report.html").read_text()
    assert "<h2 id='summary'>Summary</h2>" in html and "<a href='#summary'>Summary</a>" in html


def test_one_caption_per_figure_and_table(built_run):
    md = (built_run / "report.md").read_text()
    html = (built_run / "report.html").read_text()
    figures = sorted((built_run / "figures").glob("*.png"))
    assert len(figures) == html.count("<img") == html.count("<figcaption") == md.count("![")
    assert sorted((built_run / "figures").glob("*.svg")) == [f.with_suffix(".svg") for f in figures]
    captions = [line for line in md.splitlines() if line.startswith("*") and not line.startswith("**")]
    assert len(captions) == len(set(captions))  # no caption printed twice
    for line in md.splitlines():
        if line.startswith("!["):
            alt = line[2:line.index("]")]
            assert md.count(alt) == 1  # alt text is not a second copy of the caption


def test_strongest_heads_folded_with_csv_and_p_values_as_the_claims_table(built_run):
    md = (built_run / "report.md").read_text()
    assert "<details><summary>The 2 heads with the largest effect in score units" in md
    assert "(ranked by `mean_minus_tau`, the mean score minus tau" in md
    assert "All rows: [strongest_heads.csv](strongest_heads.csv)" in md
    table = md[md.index("## Strongest heads per role"):]
    # local first (the figures' role order), largest mean - tau first (5.51 - 3); p_corr = 7e-6 x 72
    rows = [line for line in table.splitlines() if line.startswith("| m |")]
    assert rows[:2] == ["| m | d1 | local | 5 | 1 | 20 | 5.510 | 3 | 2.510 | 4.500 | 5.0e-04 | yes |",
                        "| m | d1 | local | 5 | 0 | 20 | 5.500 | 3 | 2.500 | 4.500 | 4.3e-04 | yes |"]


def test_rebuild_report_without_torch_in_a_fresh_process(run):
    (run / "report.md").unlink()
    code = (
        "import sys\n"
        "from headstats.report.builder import rebuild_report\n"
        f"print(rebuild_report({str(run)!r}))\n"
        "bad = [m for m in ('torch', 'transformers', 'spacy') if m in sys.modules]\n"
        "sys.exit('imported: ' + ', '.join(bad) if bad else 0)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr + result.stdout
    assert result.stdout.strip() == str(run / "report.html")
    assert (run / "report.md").read_text().startswith("# headstats report: planted")


def test_rebuild_updates_manifest_removes_own_stale_figures_keeps_foreign_files(run):
    manifest = json.loads((run / "manifest.json").read_text())
    # an older run: PNG figures only, and one figure the current report no longer draws
    for svg in (run / "figures").glob("*.svg"):
        svg.unlink()
    (run / "figures" / "old_figure.png").write_bytes(b"old")
    manifest["output_files"] = sorted([f for f in manifest["output_files"] if not f.endswith(".svg")]
                                      + ["figures/old_figure.png"])
    manifest["output_sha256"] = {**{f: d for f, d in manifest["output_sha256"].items() if not f.endswith(".svg")},
                                 "figures/old_figure.png": {"size": 3, "sha256": hashlib.sha256(b"old").hexdigest()}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "figures" / "mine.png").write_bytes(b"user's own")
    (run / "notes.txt").write_text("user's notes")

    rebuild_report(run)

    after = json.loads((run / "manifest.json").read_text())
    svgs = sorted(f"figures/{p.name}" for p in (run / "figures").glob("*.svg"))
    assert svgs and set(svgs) <= set(after["output_files"])
    assert not (run / "figures" / "old_figure.png").exists()
    assert "figures/old_figure.png" not in after["output_files"]
    assert (run / "figures" / "mine.png").read_bytes() == b"user's own"
    assert (run / "notes.txt").read_text() == "user's notes"
    assert "notes.txt" not in after["output_files"] and "figures/mine.png" not in after["output_files"]
    assert after["report_rebuilds"][-1]["removed"] == ["figures/old_figure.png"]
    assert after["protocol_sha256"] == manifest["protocol_sha256"]
    assert [p.name for p in run.parent.iterdir() if p.name.startswith(".")] == []  # no staging, no lock left


def test_rebuild_with_top_k_rewrites_the_strongest_heads(run):
    rebuild_report(run, top_k=1)
    strongest = pd.read_csv(run / "strongest_heads.csv")
    assert len(strongest) == len(ROLES)  # one head per role of one model on one data set
    assert strongest.set_index("role").loc["local", ["layer", "head"]].tolist() == [5, 1]
    assert "The 1 heads with the largest effect in score units" in (run / "report.md").read_text()
    assert json.loads((run / "manifest.json").read_text())["report_rebuilds"][-1]["top_k"] == 1


def test_rebuild_refuses_to_overwrite_a_file_headstats_did_not_write(run):
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["output_files"].remove("figures/pvalue_ecdf.svg")
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "figures" / "pvalue_ecdf.svg").write_text("the user's own drawing")
    before = (run / "report.md").read_text()
    with pytest.raises(HeadstatsError, match="pvalue_ecdf.svg.*did not write"):
        rebuild_report(run)
    assert (run / "figures" / "pvalue_ecdf.svg").read_text() == "the user's own drawing"
    assert (run / "report.md").read_text() == before
    assert [p.name for p in run.parent.iterdir() if p.name.startswith(".")] == []


def test_rebuild_needs_a_finished_run_folder(tmp_path, run):
    with pytest.raises(HeadstatsError, match="does not exist"):
        rebuild_report(tmp_path / "nowhere")
    (run / "roles.csv").unlink()
    with pytest.raises(HeadstatsError, match="lacks roles.csv.*rerun `headstats run`"):
        rebuild_report(run)
    with pytest.raises(HeadstatsError, match="top_k"):
        rebuild_report(write_run(tmp_path / "other"), top_k=0)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def test_every_tex_of_a_run_compiles_fits_the_page_and_keeps_cls(built_run, tmp_path):
    from report.test_latex import compile_tables

    files = sorted(built_run.glob("*.tex"))
    assert {f.name for f in files} >= {"claims.tex", "role_counts.tex", "heads_per_layer_m__d1.tex"}
    text = compile_tables(files, tmp_path)
    assert "[CLS] heads sit" in text and "[SEP] heads sit" in text
    claims = (built_run / "claims.tex").read_text()
    assert "Each claim is a hypothesis tested by its own test" in claims and "t-test" not in claims
    assert "t-test" in (built_run / "role_counts.tex").read_text()


def test_report_in_headless_chromium(built_run, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("needs Chromium for a real-browser screenshot (apt-get install chromium); not installed here")
    shot = tmp_path / "shot.png"
    page = (built_run / "report.html").resolve().as_uri()
    result = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                             f"--screenshot={shot}", "--window-size=1400,3000", page],
                            capture_output=True, text=True, timeout=180)
    assert shot.is_file(), result.stderr
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[:2] == (3000, 1400)
    top = pixels[:1500, :, :3]
    assert (top < 0.5).mean() > 0.005  # text and the role grid, not a blank page
    assert np.unique(top.reshape(-1, 3), axis=0).shape[0] > 50  # the colours of the role grid


def test_rebuild_a_comparison_run_without_torch(tmp_path, tiny_model_dir):
    import yaml
    from conftest import build_tiny_bert
    from typer.testing import CliRunner

    from headstats.cli.main import app

    other = build_tiny_bert(tmp_path / "other", seed=1)
    protocol = {"name": "cmp", "models": [{"name": "base", "path": str(tiny_model_dir)},
                                          {"name": "other", "path": str(other)}],
                "datasets": [{"name": "pairs", "path": str(REPO / "data" / "demo" / "pairs.txt"), "limit": 12}],
                "scoring": {"roles": ["local", "delimiter_sep"]},
                "statistics": {"tau": 1.0, "sensitivity": False},
                "compare": [{"base": "base", "finetuned": ["other"]}],
                "report": {"figures": {"formats": ["png"], "dpi": 72}}}
    (tmp_path / "cmp.yaml").write_text(yaml.safe_dump(protocol))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "cmp.yaml"), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    figures = sorted(p.name for p in (out / "figures").iterdir())
    (out / "report.html").unlink()
    code = (f"import sys\nfrom headstats.report.builder import rebuild_report\nrebuild_report({str(out)!r})\n"
            "bad = [m for m in ('torch', 'transformers') if m in sys.modules]\n"
            "sys.exit('imported: ' + ', '.join(bad) if bad else 0)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr + done.stdout
    assert sorted(p.name for p in (out / "figures").iterdir()) == figures
    html = (out / "report.html").read_text()
    assert "Pretrained vs fine-tuned" in html and html.count("<img") == len([f for f in figures if f.endswith(".png")])


def test_analysis_sections_use_the_registry_entrys_report(tmp_path):
    """An analysis' section is the ``section`` of its registry entry: a callable, or a reference imported here."""
    from headstats.analyses import ANALYSES, get_analysis, register_analysis
    from headstats.engine.collector import Collector
    from headstats.report.blocks import Report
    from headstats.report.builder import analysis_sections

    seen = []
    register_analysis("section_test", Collector, description="what",
                      section=lambda report, root, tables: seen.append(sorted(tables)))
    try:
        distance = pd.DataFrame({"model": "m", "dataset": "d", "layer": 0, "head": [0, 1], "n": 3,
                                 "distance_mean": [1.0, 2.0], "distance_sd": 0.1, "uniform_mean": 2.0,
                                 "locality_mean": [0.5, 0.0]})
        report = Report("t")
        lines: list[str] = []
        tables = RunTables().add("section_test", {"a": pd.DataFrame({"x": [1]})})
        tables.add("distance", {"distance": distance}).add("offset_control", {})
        analysis_sections(report, tmp_path, tables, log=lines.append)
        sections = [name for name in ("section_test", "distance", "offset_control")
                    if get_analysis(name).section_function() is not None]
        assert lines == [f"report: the section of {name}" for name in sections]  # one line as each starts
        # each file its own description: the one its analysis' spec declares, else its analysis' named
        assert seen == [["a"]] and tables.describe("a") == "a table of section_test"
        assert tables.describe("distance").startswith("per head, the mean distance attended over")
        assert [b.content for b in report.blocks if b.kind == "heading"] == ["Attention distance"]
    finally:
        ANALYSES.unregister("section_test")


def test_rebuilds_are_deterministic_and_workers_change_no_byte(run, tmp_path):
    def files(folder: Path) -> dict[str, bytes]:
        names = [f"figures/{p.name}" for p in sorted((folder / "figures").iterdir())] + ["report.md", "report.html"]
        return {name: (folder / name).read_bytes() for name in names}

    rebuild_report(run, workers=1)
    serial = files(run)
    assert sum(name.endswith(".png") for name in serial) == 5  # grid, maps, bars, UpSet, p-values (no tau table)
    rebuild_report(run, workers=1)
    assert files(run) == serial  # the same folder rebuilt: the same bytes (no dates, stable SVG ids)
    rebuild_report(run, workers=2)
    assert files(run) == serial  # figures drawn by worker processes: the same files, the same report


def test_a_protocol_of_analyses_leads_with_them_and_says_a_skip_once(tmp_path):
    """Claims first, then the protocol's own analyses, the roles after them; an analysis not run is said once
    at the top, with where, why and the fix."""
    protocol = Protocol.model_validate({"name": "clarkish", "models": ["m"], "datasets": [{"name": "d1",
                                        "path": "x.txt"}], "scoring": {"roles": ROLES},
                                        "analyses": ["distance", "gradients"]})
    tests = planted_tests()
    roles = role_table(tests)
    tables = {"heads_per_layer": heads_per_role_per_layer(roles), "colocation": colocation(roles),
              "strongest_heads": strongest_heads(tests, k=2)}
    distance = pd.DataFrame({"model": "m", "dataset": "d1", "layer": 0, "head": [0, 1], "n": 3,
                             "distance_mean": [1.0, 2.0], "distance_sd": 0.1, "uniform_mean": 2.0,
                             "locality_mean": [0.5, 0.0]})
    skipped = pd.DataFrame([{"model": "m", "dataset": d, "reason": "the checkpoint has no trained head"}
                            for d in ("d1", "d2")])
    manifest = {"protocol_sha256": "0" * 64, "seed": 0, "models": {}, "datasets": {},
                "inputs": {"m/d1": {"model": "m", "dataset": "d1", "n_records": 20, "n_scored": 20, "skipped": {},
                                    "notes": {}, "roles_not_applicable": {}}}}
    run_tables = RunTables({"tests": tests, "roles": roles, **tables})
    run_tables.add("distance", {"distance": distance}).add("gradients", {"gradients_skipped": skipped})
    build_report(tmp_path, protocol, run_tables, manifest, workers=1)
    md = (tmp_path / "report.md").read_text()
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads.index("## Roles of Pande et al. (2021): summary") > max(
        k for k, h in enumerate(heads) if "istance" in h or "radient" in h)
    assert md.count("the checkpoint has no trained head") == 1
    assert "- **gradients** did not run (m on d1, m on d2): the checkpoint has no trained head. Fix:" in md
    assert md.index("did not run") < md.index("## Claims, tested")  # at the top, before the claims
    assert "- `distance.csv`: per head, the mean distance attended over" in md


KILLED_REPORT = """
import os, sys, time
from pathlib import Path
from headstats.report import figures

def drawing_forever(*args, **kwargs):  # a figure that takes as long as the test needs: no race with the clock
    (Path(sys.argv[2]) / str(os.getpid())).write_text("drawing")
    time.sleep(600)

figures.draw_and_save = drawing_forever  # the workers are forked with it
from headstats.cli.main import app
app(["report", sys.argv[1], "--quiet"])
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_kill_9_of_report_while_figures_are_drawn_leaves_no_worker_and_the_next_report_sweeps(run, tmp_path):
    """`kill -9` of `headstats report` while its two figure workers draw: the workers end with it (they were
    left running for hours, 0.4-0.9 GB each), and the next report into the run removes its staging folder."""
    flags = tmp_path / "drawing"
    flags.mkdir()
    env = {**os.environ, "HEADSTATS_FIGURE_WORKERS": "2",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_REPORT, str(run), str(flags)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers: list[int] = []
    try:
        workers = drawing_workers(proc, flags)
        stage, = run.parent.glob(f".{run.name}.partial-*")
        marker = json.loads((stage / STAGING_MARKER).read_text())  # for the next command, should one outlive it
        assert marker["pid"] == proc.pid and sorted(h["pid"] for h in marker["helpers"]) == workers
        proc.kill()
        proc.wait()
        assert wait_until(lambda: not any(process_running(pid) for pid in workers), 10), \
            [pid for pid in workers if process_running(pid)]
        assert stage.exists()  # what kill -9 leaves
        rebuild_report(run, workers=1, formats=["png"])
        assert [p.name for p in run.parent.glob(f".{run.name}.*")] == []
    finally:
        proc.kill()
        proc.wait()
        end_processes(workers)
