"""Figures drawn by worker processes: the same files as drawn here, errors raised as here, serial fallbacks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from headstats.errors import HeadstatsError
from headstats.analyses.pande_roles import figures as roles_plots
from headstats.plots import stats_plots
from headstats.report import figures as figures_module
from headstats.report.figures import WORKERS_ENV, FigureRenderer, available_cpus, figure_workers
from headstats.tables import RunTables

from conftest import process_running, wait_until

REPO = Path(__file__).resolve().parents[2]

HELD = {"local": {(0, 0), (1, 1)}, "delimiter": {(0, 1), (2, 0), (2, 1)}, "syntactic": {(1, 0)}}


@pytest.fixture(scope="module")
def tests_table() -> pd.DataFrame:
    rows = []
    for role, heads in HELD.items():
        for layer in range(3):
            for head in range(2):
                held = (layer, head) in heads
                rows.append(dict(model="m", dataset="d", role=role, layer=layer, head=head, n=10,
                                 mean=4.0 + layer / 10 if held else 1.0 + head / 10, reject=held,
                                 p_unc=1e-4 * (1 + layer) if held else 0.5 + layer / 10))
    return pd.DataFrame(rows)


def per_layer(tests: pd.DataFrame) -> pd.DataFrame:
    held = tests[tests["reject"]]
    counts = held.groupby(["layer", "role"]).size()
    return pd.DataFrame([dict(layer=layer, role=role, n_heads=int(counts.get((layer, role), 0)), n_total=2)
                         for layer in range(3) for role in HELD])


def draw_all(root, tests, workers):
    with FigureRenderer(root, workers=workers) as figures:
        paths = [figures.add("maps", roles_plots.mean_score_maps, tests, tau=3.0, title="maps"),
                 figures.add("bars", roles_plots.heads_per_layer_plot, per_layer(tests)),
                 figures.add("pvalues", stats_plots.plot_pvalue_ecdf, tests)]
        figures.wait()
    return paths


def test_workers_write_the_same_bytes_as_serial_drawing(tests_table, tmp_path):
    serial = draw_all(tmp_path / "serial", tests_table, workers=1)
    parallel = draw_all(tmp_path / "parallel", tests_table, workers=2)
    assert serial == parallel == ["figures/maps.png", "figures/bars.png", "figures/pvalues.png"]
    files = sorted(p.name for p in (tmp_path / "serial" / "figures").iterdir())
    assert files == [f"{n}.{x}" for n in ("bars", "maps", "pvalues") for x in ("pdf", "png", "svg")]
    for name in files:
        assert (tmp_path / "parallel" / "figures" / name).read_bytes() == \
            (tmp_path / "serial" / "figures" / name).read_bytes(), name


def test_workers_really_draw_in_other_processes(tests_table, tmp_path):
    with FigureRenderer(tmp_path, workers=2) as figures:
        figures.add("maps", roles_plots.mean_score_maps, tests_table)
        assert len(figures._pending) == 1 and figures._pool is not None
        figures.wait()
    assert (tmp_path / "figures" / "maps.png").stat().st_size > 1000


def bad_table(message: str) -> pd.DataFrame:
    # plot_tau_sensitivity names the missing columns and the columns it got: here the message itself
    return pd.DataFrame({message: [1]})


@pytest.mark.parametrize("workers", [1, 2])
def test_the_first_failing_figure_raises_its_own_error(tests_table, tmp_path, workers):
    with pytest.raises(ValueError, match="plot_tau_sensitivity needs column.*got first_bad") as raised:
        with FigureRenderer(tmp_path, workers=workers) as figures:
            figures.add("good", roles_plots.mean_score_maps, tests_table)
            figures.add("bad1", stats_plots.plot_tau_sensitivity, bad_table("first_bad"))
            figures.add("bad2", stats_plots.plot_tau_sensitivity, bad_table("second_bad"))
            figures.wait()
    assert type(raised.value) is ValueError  # the worker's exception itself, not a wrapper
    if workers == 1:  # drawn as added: the error stops the report at the first bad figure
        assert not (tmp_path / "figures" / "bad2.png").exists()


def test_an_unpicklable_drawing_is_drawn_here_at_once(tests_table, tmp_path):
    with FigureRenderer(tmp_path, workers=2) as figures:
        rel = figures.add("local", lambda t: roles_plots.mean_score_maps(t), tests_table)
        assert (tmp_path / rel).exists()  # no worker could take a lambda: drawn before add returned
        figures.wait()


def test_a_pool_that_cannot_start_falls_back_to_drawing_here(tests_table, tmp_path, monkeypatch):
    def no_pool(*args, **kwargs):
        raise OSError("no semaphores here")

    monkeypatch.setattr(figures_module, "ProcessPoolExecutor", no_pool)
    with FigureRenderer(tmp_path, workers=2) as figures:
        rel = figures.add("maps", roles_plots.mean_score_maps, tests_table)
        assert (tmp_path / rel).exists() and figures._pending == []
        figures.add("bars", roles_plots.heads_per_layer_plot, per_layer(tests_table))
        assert (tmp_path / "figures" / "bars.svg").exists()


def test_a_figure_name_is_taken_once(tests_table, tmp_path):
    with FigureRenderer(tmp_path, workers=2, formats=["png"]) as figures:
        figures.add("maps", roles_plots.mean_score_maps, tests_table)
        with pytest.raises(RuntimeError, match="written twice"):
            figures.add("maps", roles_plots.mean_score_maps, tests_table)
        figures.wait()
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == ["maps.png"]  # formats=["png"]


def test_number_of_workers(monkeypatch):
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    assert figure_workers(3) == 3
    expected = available_cpus() if figures_module._fork_is_the_way() else 1
    assert figure_workers() == expected
    monkeypatch.setenv(WORKERS_ENV, "1")
    assert figure_workers() == 1
    assert figure_workers(2) == 2  # given beats the environment
    for bad in ("0", "two", "1.5", "-1"):
        monkeypatch.setenv(WORKERS_ENV, bad)
        with pytest.raises(HeadstatsError, match=f"{WORKERS_ENV} = '{bad}'.*whole number of at least 1"):
            figure_workers()
    with pytest.raises(HeadstatsError, match="workers = 0"):
        figure_workers(0)


# ========================================================================================== figures for print

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "quickstart"


def _svg_text_sizes(path: Path) -> tuple[float, list[float]]:
    """The SVG's width in points and the font size of every text element (its own or its group's style)."""
    import re
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    width = float(root.get("width").removesuffix("pt"))
    sizes = []
    for node in root.iter():
        if node.tag.endswith("}text") or node.tag.endswith("}tspan"):
            found = re.search(r"font-size:\s*([\d.]+)px", node.get("style", "")) or \
                re.search(r"font:\s*(?:\w+\s+)*([\d.]+)px", node.get("style", ""))
            if found:
                sizes.append(float(found.group(1)))
    return width, sizes


@pytest.fixture(scope="module")
def quickstart_report(tmp_path_factory) -> tuple[Path, float]:
    """The quickstart's report built from its golden tables with ``report.figures.width: column``."""
    from headstats.analyses.pande_roles.finish.role_assignment import colocation
    from headstats.tables.study_tables import heads_per_role_per_layer
    from headstats.tables.study_tables import strongest_heads
    from headstats.config.protocol import Protocol
    from headstats.report.builder import build_report
    from headstats.study.run_folder import read_roles

    tests = pd.read_csv(GOLDEN / "tests.csv")
    roles = read_roles(GOLDEN / "roles.csv")
    protocol = Protocol.model_validate({
        "name": "quickstart", "datasets": [{"name": "demo_single", "path": "s.txt"}, {"name": "demo_pairs",
                                                                                       "path": "p.txt"}],
        "report": {"top_k": 5, "figures": {"width": "column"}}})
    tables = {"heads_per_layer": heads_per_role_per_layer(roles), "colocation": colocation(roles),
              "strongest_heads": strongest_heads(tests, k=5)}
    manifest = {"inputs": {f"default/{d}": {"model": "default", "dataset": d, "n_records": 10, "n_scored": 10,
                                            "skipped": {}, "notes": {}, "roles_not_applicable": {}}
                           for d in ("demo_single", "demo_pairs")}, "models": {}, "datasets": {},
                "protocol_sha256": "0" * 64, "seed": 0}
    root = tmp_path_factory.mktemp("print")
    build_report(root, protocol, RunTables({"tests": tests, "roles": roles, **tables}), manifest)
    return root, 3.5


def test_every_figure_is_written_for_print(quickstart_report):
    """PNG at 300 dpi, PDF with TrueType (editable) text, SVG with text as text, for every figure; no text
    smaller than 7 pt when the figure is printed at the column width it was drawn for."""
    root, inches = quickstart_report
    pngs = sorted((root / "figures").glob("*.png"))
    assert {p.stem.split("_default")[0] for p in pngs} >= {"roles_grid", "mean_scores", "heads_per_layer",
                                                             "colocation", "pvalue_ecdf", "power_mde"}
    for png in pngs:
        _assert_printable(png, inches)


def _assert_printable(png: Path, inches: float) -> None:
    """PNG at 300 dpi no wider than ``inches``, PDF with TrueType text, SVG with text as text, none under 7 pt."""
    from PIL import Image

    with Image.open(png) as image:
        dpi = image.info["dpi"]
        assert round(dpi[0]) == 300 and round(dpi[1]) == 300, png.name
        printed = image.size[0] / dpi[0]
    assert printed <= inches + 0.01, f"{png.name} is {printed:.2f} in wide, wider than the column"
    pdf = png.with_suffix(".pdf").read_bytes()
    assert b"/FontFile2" in pdf and b"/Subtype /Type3" not in pdf, png.name  # TrueType: editable text
    width_pt, sizes = _svg_text_sizes(png.with_suffix(".svg"))
    assert sizes, f"{png.name}: the SVG holds no text elements (text drawn as paths?)"
    scale = min(1.0, inches * 72 / width_pt)  # a figure wider than the column is shrunk to it in print
    assert min(sizes) * scale >= 7.0 - 1e-6, f"{png.name}: text of {min(sizes) * scale:.1f} pt in print"


@pytest.mark.parametrize("width", ["column", "text"])
def test_pictures_of_a_long_input_are_written_for_print(tmp_path, width):
    """A heat map and a line view of a 128-piece input (the pictures' longest): every text at least 7 pt at the
    printed width, as every other figure; the pieces that do not fit at 7 pt are thinned (every k-th labelled)."""
    import numpy as np

    from headstats.analyses.pictures import figures as attention_plots
    from headstats.plots import style
    from headstats.report.options import FigureOptions

    n = 128
    tokens = ["[CLS]", *(f"piece{i}" for i in range(1, n - 1)), "[SEP]"]
    weights = np.random.default_rng(0).dirichlet(np.full(n, 0.2), size=n)
    preset = style.preset_of(FigureOptions(width=width))
    with FigureRenderer(tmp_path, workers=1, preset=preset) as renderer:
        renderer.add("heatmap", attention_plots.attention_heatmap, weights, tokens, title="broad: head 0-7, input #0-1")
        renderer.add("lines", attention_plots.line_view, weights, tokens, title="broad: head 0-7, input #0-1")
    for name in ("heatmap", "lines"):
        _assert_printable(tmp_path / "figures" / f"{name}.png", preset.width)
    # fewer labels than pieces at 7 pt: thinned, and the axes say so
    assert "piece labelled)" in (tmp_path / "figures" / "heatmap.svg").read_text()
    # 5 in hold 42 labels of 7 pt x 1.2 (8.4 pt each): 128 pieces need every 4th; 10 pieces fit whole
    assert attention_plots.label_step(n, 5.0) == 4 and attention_plots.label_step(10, 5.0) == 1


@pytest.mark.parametrize("width", ["column", "text"])
def test_surface_and_clustering_figures_are_the_presets_width(tmp_path, width):
    """Clark et al.'s figures of a BERT-base-shaped model (12 layers x 12 heads) at column (3.5 in) and text
    (7 in) width: each PNG exactly the preset's width (it was 8.2 in for three panels at column width), every
    text at least 7 pt; at column width the three panels of a surface figure take two rows."""
    import numpy as np

    from headstats.analyses.surface.collect import SURFACE_COLUMNS
    from headstats.analyses.clustering import figures as clustering_figures
    from headstats.analyses.surface import figures as surface_plots
    from headstats.plots import style
    from headstats.report.options import FigureOptions

    rng = np.random.default_rng(0)
    surface = pd.DataFrame([{"model": "m", "dataset": "d", "layer": layer, "head": head,
                             **{c: float(rng.uniform(0, 1)) for c in SURFACE_COLUMNS[4:]}}
                            for layer in range(12) for head in range(12)])[list(SURFACE_COLUMNS)]
    tests = surface[["model", "dataset", "layer", "head"]].assign(measure="prev", reject=surface["head"] < 3)
    k = np.arange(144)
    a, b = np.meshgrid(k, k, indexing="ij")
    js = pd.DataFrame({"layer_a": (a // 12).ravel(), "head_a": (a % 12).ravel(), "layer_b": (b // 12).ravel(),
                       "head_b": (b % 12).ravel(), "js_mean": np.abs(a - b).ravel() / 100.0})
    mds = surface[["model", "dataset", "layer", "head"]].assign(x=rng.normal(size=144), y=rng.normal(size=144),
                                                                stress=0.1, behaviour="mixed")
    where = "default on a_rather_long_dataset_name"
    preset = style.preset_of(FigureOptions(width=width))
    with FigureRenderer(tmp_path, workers=1, preset=preset) as renderer:
        renderer.add("surface_position", surface_plots.surface_by_layer, surface, ["prev", "self", "next"],
                     tests=tests, title=f"attention by relative position: {where}")
        renderer.add("surface_kinds", surface_plots.surface_by_layer, surface, ["cls", "sep", "punct"], tests=tests,
                     title=f"attention to [CLS], [SEP] and punctuation: {where}")
        renderer.add("surface_sep", surface_plots.surface_by_layer, surface, ["sep_to_sep", "other_to_sep"],
                     title=f"[SEP] -> [SEP] against other -> [SEP]: {where}")
        renderer.add("surface_entropy", surface_plots.entropy_by_layer, surface, tests=tests,
                     title=f"attention entropy: {where}")
        renderer.add("js_distance", clustering_figures.js_heatmap, js, title=f"JS divergence between heads: {where}")
        renderer.add("mds_layer", clustering_figures.mds_plot, mds, colour_by="layer", title=f"heads by layer: {where}")
    from PIL import Image

    _assert_printable(tmp_path / "figures" / "mds_layer.png", preset.width)  # at most 5.2 in: no wider
    with style.using(preset):
        fig = clustering_figures.mds_plot(mds, colour_by="layer", title=f"heads by layer: {where}")
    renderer_agg = fig.canvas.get_renderer()
    ax = fig.axes[0]
    for text in (ax.title, ax.xaxis.label):  # the title and the labelled-heads note are not cut at the edges
        box = text.get_window_extent(renderer_agg)
        assert box.x0 >= 0 and box.x1 <= fig.bbox.x1, text.get_text()

    for name in ("surface_position", "surface_kinds", "surface_sep", "surface_entropy", "js_distance"):
        png = tmp_path / "figures" / f"{name}.png"
        _assert_printable(png, preset.width)
        with Image.open(png) as image:
            assert image.size[0] / image.info["dpi"][0] == pytest.approx(preset.width, abs=0.02), name
    with style.using(preset):
        fig = surface_plots.surface_by_layer(surface, ["prev", "self", "next"])
    rows = {round(ax.get_position().y0, 3) for ax in fig.axes}
    assert len(fig.axes) == 3 and len(rows) == (2 if width == "column" else 1)


def test_the_report_shows_figures_at_their_printed_size(quickstart_report):
    import re

    root, inches = quickstart_report
    html = (root / "report.html").read_text()
    widths = [int(w) for w in re.findall(r"<img alt='[^']*' width='(\d+)'", html)]
    assert widths and max(widths) <= round(inches * 96)  # 96 CSS px per inch, whatever the PNG's dpi


def test_html_renders_markdown_and_scrolls_wide_tables(quickstart_report):
    """No literal backtick anywhere in the HTML report (Markdown is rendered in captions and summaries too),
    and every table sits in a horizontal scroll box."""
    root, _ = quickstart_report
    html = (root / "report.html").read_text()
    assert "`" not in html
    assert html.count("<table") == html.count("<div class='scroll'><table")
    assert "<code>" in html


def test_main_tables_also_written_as_latex(quickstart_report, tmp_path):
    from report.test_latex import compile_tables

    root, _ = quickstart_report
    tex = (root / "role_counts.tex").read_text()
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex  # booktabs
    assert "\\caption{Protocol quickstart. A head holds a role when a one-sided one-sample t-test" in tex
    assert "\\label{tab:role_counts}" in tex
    assert "& nsubj &" in tex and "& {[}CLS{]} &" in tex  # the paper's short headers, escaped for LaTeX
    rows = [line for line in tex.splitlines() if line.startswith("demo\\_")]
    assert len(rows) == 2  # one per data set, as in the report's table (one model: no model column)
    files = sorted(root.glob("*.tex"))
    assert len([f for f in files if f.name.startswith("heads_per_layer_")]) == 2
    text = compile_tables(files, tmp_path)
    assert "[CLS]" in text and "[SEP]" in text


# ------------------------------------------------------------------------------ workers die with their parent

KILLED_DRAWING = """
import os, sys, time
from pathlib import Path
from headstats.report import figures

def drawing_forever(name):  # a figure that takes as long as the test needs: no race with the clock
    (Path(sys.argv[1]) / str(os.getpid())).write_text(name)
    time.sleep(600)

figures._parent_death_signal = lambda: False  # as where prctl is not to be had: the watcher thread
with figures.FigureRenderer(Path(sys.argv[1]).parent / "report", workers=2) as renderer:
    renderer.add("a", drawing_forever, "a")
    renderer.add("b", drawing_forever, "b")
    renderer.wait()
"""


def drawing_workers(proc, flags: Path) -> list[int]:
    """The pids of the two workers that write their flag into ``flags`` when they start drawing, once both
    have (bounded by those events, not by the machine's speed)."""
    assert wait_until(lambda: proc.poll() is not None or len(list(flags.iterdir())) >= 2, 300), \
        "the figure workers never started drawing"
    assert proc.poll() is None, proc.communicate()
    workers = sorted(int(p.name) for p in flags.iterdir())
    assert proc.pid not in workers and all(process_running(pid) for pid in workers)
    return workers


def end_processes(pids) -> None:
    """SIGKILL what a failed test left running."""
    for pid in pids:
        if process_running(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not figures_module._fork_is_the_way(), reason="figure workers are forked (Linux)")
def test_workers_without_a_parent_death_signal_watch_their_parent_and_end_with_it(tmp_path):
    flags = tmp_path / "drawing"
    flags.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_DRAWING, str(flags)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers: list[int] = []
    try:
        workers = drawing_workers(proc, flags)
        proc.kill()
        proc.wait()
        assert wait_until(lambda: not any(process_running(pid) for pid in workers), 10), \
            [pid for pid in workers if process_running(pid)]
    finally:
        proc.kill()
        proc.wait()
        end_processes(workers)


def test_waiting_for_the_workers_logs_how_many_figures_and_then_a_count(tests_table, tmp_path):
    lines: list[str] = []
    with FigureRenderer(tmp_path, workers=2, formats=["png"]) as figures:
        for k in range(3):
            figures.add(f"maps{k}", roles_plots.mean_score_maps, tests_table, tau=3.0, title="maps")
        figures.wait(log=lines.append, every=0.01)
    assert lines[0] == "report: drawing 3 figures in 2 processes"
    counts = [int(line.split()[1]) for line in lines[1:]]
    assert all(line.endswith(" of 3 figures drawn") for line in lines[1:]) and counts == sorted(counts)
    assert all(0 <= n < 3 for n in counts)  # a count while some are left; none once all are drawn
    assert sorted(p.name for p in (tmp_path / "figures").glob("*.png")) == ["maps0.png", "maps1.png", "maps2.png"]
    silent: list[str] = []
    with FigureRenderer(tmp_path / "serial", workers=1, formats=["png"]) as figures:
        figures.add("maps", roles_plots.mean_score_maps, tests_table, tau=3.0, title="maps")  # drawn at once
        figures.wait(log=silent.append)
    assert silent == []  # nothing left to wait for
