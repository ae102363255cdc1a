"""Figures drawn by worker processes: the same files as drawn here, errors raised as here, serial fallbacks."""

from __future__ import annotations

import pandas as pd
import pytest

from headstats.errors import HeadstatsError
from headstats.plots import roles_plots, stats_plots
from headstats.report import figures as figures_module
from headstats.report.figures import WORKERS_ENV, FigureRenderer, available_cpus, figure_workers

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
                 figures.add("pvalues", stats_plots.plot_pvalue_histogram, tests, alpha=0.05)]
        figures.wait()
    return paths


def test_workers_write_the_same_bytes_as_serial_drawing(tests_table, tmp_path):
    serial = draw_all(tmp_path / "serial", tests_table, workers=1)
    parallel = draw_all(tmp_path / "parallel", tests_table, workers=2)
    assert serial == parallel == ["figures/maps.png", "figures/bars.png", "figures/pvalues.png"]
    files = sorted(p.name for p in (tmp_path / "serial" / "figures").iterdir())
    assert files == ["bars.png", "bars.svg", "maps.png", "maps.svg", "pvalues.png", "pvalues.svg"]
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
