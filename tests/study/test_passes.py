"""A study's passes through the state cache: a chunk's key names what its collector reads (its model, its data
set's records, its own options, its code version), so adding a data set or a model, or changing one analysis'
option, reuses every other state."""

from __future__ import annotations

import pandas as pd
import yaml
from tiny_study import DEMO, tiny_protocol

from headstats.config.protocol import load_protocol
from headstats.study.run import run_study


def _cached_run(tmp_path, model, *, extra: dict | None = None, models: list | None = None, out: str = "out"):
    """Run a protocol (role ``local``, analyses surface and clustering, data set ``single``) with ``extra`` keys
    merged in; return the log's "found in the cache" lines."""
    text = yaml.safe_load(tiny_protocol(tmp_path, model, ["local"]).read_text())
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
        "tiny / single: 0 of 12 inputs found in the cache (pande_roles, surface reused; clustering computed)"]
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
        "tiny / single: 0 of 12 inputs found in the cache (surface, clustering reused; pande_roles computed)"]


def test_each_analysis_finish_step_says_when_it_starts_and_how_long_it_took(tmp_path, tiny_model_dir):
    # the finish steps (permutations, probe training) ran silently for minutes on large runs
    text = yaml.safe_load(tiny_protocol(tmp_path, tiny_model_dir, ["local"]).read_text())
    text["analyses"] = ["surface", "clustering"]
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(text))
    lines: list[str] = []
    run_study(load_protocol(path), tmp_path / "out", log=lines.append)
    for name in ("surface", "clustering"):
        start = lines.index(f"finishing {name}: its tests and tables")
        end = next(k for k in range(start, len(lines)) if lines[k].startswith(f"finished {name} in "))
        assert lines[end].endswith(" s")
        assert all(line.startswith(f"{name}: ") for line in lines[start + 1:end])  # the step's own lines
    # the clustering's permutation test says when it starts (one per model and data set)
    assert [line for line in lines if line.startswith("clustering: permutation test")] == [
        "clustering: permutation test of the layers of tiny / single (9,999 permutations of 4 heads)"]
    finished = next(k for k, line in enumerate(lines) if line.startswith("finished clustering in "))
    assert finished < lines.index(f"writing {tmp_path / 'out'}")
