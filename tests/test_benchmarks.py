"""Every benchmark's smoke size runs here (seconds each), so that a change of signature breaks a test rather
than a benchmark that no one runs. The figures they print are ratios of a loaded machine: only what the smoke
size fixes (counts of inputs, hypotheses and rows, identical tables) is checked."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
EWT_TRAIN = SHARED / "ud" / "en_ewt" / "en_ewt-ud-train.conllu"
needs_ewt = pytest.mark.skipif(not EWT_TRAIN.exists(), reason=f"needs {EWT_TRAIN}")


def benchmark(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def smoke(name: str, capsys, *extra: str) -> str:
    benchmark(name).main(["--smoke", *extra])
    return capsys.readouterr().out


def test_statistics(capsys):
    out = smoke("bench_statistics", capsys)
    assert "200 inputs x 144 heads x 10 roles (1,440 hypotheses, 288,000 scores)" in out
    assigned = int(re.search(r"heads assigned: (\d+) \(planted above tau: 30\)", out).group(1))
    assert 20 <= assigned <= 40  # 30 planted at mean 3.6 against tau = 3; 1,410 at mean 1.5
    # the quickstart's layer 0 (12 heads x 10 roles x 2 data sets, 228 with scores): sequential bootstrap against the t-test
    assert "quickstart-like tests and tables, 228 hypotheses (228 with a p-value)" in out
    assert re.search(r"bootstrap, n_resamples auto \(B = 23,999\), sequential: [\d.]+ s = [\d.]+ x the t-test", out)
    share = float(re.search(r"same assignment as the full-B run: [\d,]+ of [\d,]+ cells = ([\d.]+)%", out).group(1))
    assert share >= 99.0
    stopped = float(re.search(r"cells stopped before B: ([\d.]+)%", out).group(1))
    assert stopped > 50.0
    by_bound, assigned = map(int, re.search(r"settled by the draw-free bound: (\d+) of the (\d+) assigned", out).groups())
    assert 0 < by_bound <= assigned
    # the bootstrap's tau grid at its auto B: without importance sampling every decision that of the grid with
    # every head drawing B; with it (the default) none drawn to B, and each differing decision checked
    assert "bootstrap tau grid of the quickstart (4 heads of layer 0): 76 heads x 13 taus x 3 alphas" in out
    plain = re.search(r"B = 39,999 \(auto\), plain draws to B near the level: [\d.]+ s, .*decisions differing "
                      r"from the reference: (\d+) of 2,964", out)
    assert plain is not None and plain.group(1) == "0"
    tilted = re.search(r"B = 39,999 \(auto\), importance sampling near the level: [\d.]+ s, .*heads drawn to B: "
                       r"(\d+); decisions differing from the reference: (\d+) of 2,964", out)
    assert tilted is not None and tilted.group(1) == "0" and int(tilted.group(2)) <= 30  # 99 %
    assert re.search(r"cells estimated by importance sampling: [1-9]\d*, [\d,]+ tilted draws", out)
    checked = re.search(r"(no differing decision to check|the (\d+) differing decisions, .* the grid's decision "
                        r"(\d+), the reference's (\d+))", out)
    assert checked is not None
    assert re.search(r"the resample indices alone of 10 streams .* to B = 39,999: [\d.]+ s", out)
    errors = re.search(r"(\d+) cells, [\d,]+ assigned by the full-B run; same decision: [\d,]+ \(([\d.]+)%\); "
                       r"stopped early: [\d,]+ \([\d.]+%\), of which with another decision: (\d+)", out)
    assert errors.group(1) == "120" and float(errors.group(2)) >= 99.0 and errors.group(3) == "0"


def test_skew_check(capsys, tmp_path):
    out = smoke("skew_check", capsys, "--out", str(tmp_path / "rates.csv"))
    assert out.startswith("20 hypotheses with n >= 20")
    import pandas as pd

    rates = pd.read_csv(tmp_path / "rates.csv")
    assert len(rates) == 20 and rates["t"].between(0, 1).all()


@pytest.mark.slow
def test_analyses(capsys):
    bench = benchmark("bench_analyses")
    default = bench.default_analyses()
    assert "importance" not in default and "entropy" in default
    bench.main(["--smoke"])
    out = capsys.readouterr().out
    for dataset in ("wiki_pairs", "ewt_dev"):
        rows = {line.split()[1] for line in out.splitlines() if line.startswith(dataset)}
        assert rows == set(default) | {"ALL", "forward"}


@pytest.mark.slow
def test_clark_run(capsys, tmp_path):
    """Both protocols run (in fresh processes) and the ratio is printed; the kept folders compare as identical
    with themselves, and the role-only run has none of the analyses' tables."""
    out = smoke("bench_clark_run", capsys, "--keep", str(tmp_path), "--compare", str(tmp_path))
    assert out.startswith("inputs: 4 pairs + 4 sentences of the demo corpus; 1 round; load average before: ")
    assert re.search(r"round 1 roles: +[\d.]+ s CPU", out) and re.search(r"round 1 clark: +[\d.]+ s CPU", out)
    assert re.search(r"ratio clark / roles: [\d.]+ x CPU \(target <= 2\)", out)
    assert re.search(r"clark: \d+ tables identical to .*; differ: none", out)
    assert (tmp_path / "clark" / "probes.csv").exists() and (tmp_path / "clark" / "surface.csv").exists()
    assert (tmp_path / "roles" / "tests.csv").exists() and not (tmp_path / "roles" / "surface.csv").exists()
    bench = benchmark("bench_clark_run")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "tests.csv").write_text("changed\n")
    same, differ = bench.compare_tables(tmp_path / "other", tmp_path / "roles")
    assert same == 0 and "tests.csv" in differ and len(differ) > 1  # the changed table and the missing ones


@pytest.mark.slow
def test_importance(capsys):
    out = smoke("bench_importance", capsys)
    assert "4 inputs, 1 batches, 6 x 12 = 72 heads" in out
    assert re.search(r"ablation of all 72 heads: [\d.]+ s = [\d.]+ x H forward passes", out)


@pytest.mark.slow
def test_extraction(capsys):
    out = smoke("bench_extraction", capsys)
    assert out.startswith("inputs: 16 from")
    # rows of the scores array: inputs x 6 layers x 12 heads x 9 roles
    assert "16 inputs: " in out and f"{16 * 6 * 12 * 9} score rows" in out and f"{8 * 6 * 12 * 9} score rows" in out
    assert re.search(r"ratio norm / weights: [\d.]+ wall, [\d.]+ CPU", out)  # the norm measure, timed beside


@pytest.mark.slow
@needs_ewt
def test_study(capsys):
    import headstats.study.run as study

    before = study.run_study
    out = smoke("bench_study", capsys)
    assert study.run_study is before  # its timing wrapper is put back: the process' later runs log again
    assert "inputs: 20 sentences of en_ewt-ud-train.conllu" in out
    assert re.search(r"ratio run / score: [\d.]+", out)


@pytest.mark.slow
@needs_ewt
def test_scale(capsys):
    out = smoke("bench_scale", capsys)
    assert "scores.parquet byte-identical across the two runs: True" in out
    assert "in 2 chunks of 4" in out and "tables byte-identical: True" in out
    assert "16 short inputs" in out and "32 short inputs" in out


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "glue" / "MRPC" / "test.tsv").exists(), reason="needs the GLUE data")
def test_paper_faithful_share(capsys):
    out = smoke("paper_faithful_share", capsys)
    assert out.startswith("mrpc: first 3 test rows, 3 scored")
    assert re.search(r"local\s+100\.00% of \d+ scores equal", out)


@pytest.mark.slow
def test_map_free(capsys):
    out = smoke("bench_map_free", capsys)
    assert out.startswith("inputs: 16 from")
    assert re.search(r"ratio map-free / bare SDPA: [\d.]+ CPU, [\d.]+ wall", out)
    assert re.search(r"ratio eager / bare SDPA: [\d.]+ CPU", out)
    # beside an analysis that reads the maps, the role scores take their own path: the same bytes as alone
    assert re.search(r"ratio shared / shared-eager: [\d.]+ CPU, [\d.]+ wall; role scores beside the entropy equal "
                     r"the map-free run's to the bit: True", out)
    # the two paths' scores over the whole run: float32 rounding of the attention logits, and the same NaN cells
    relative = float(re.search(r"max relative ([\d.e+-]+), same NaN cells: True", out).group(1))
    assert relative < 1e-4
    assert "peak memory, 2 inputs x 64 pieces, 2 layers x 4 heads" in out
