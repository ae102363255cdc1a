"""The offset gate in a study (METHODS 6.2; ``statistics.offset_gate``): the roles' planner plans the control by
default on every parsed data set that scores a syntactic role, once per attention measure, and serves ``analyses: [offset_control]``
too (one control, not two); with the gate off none is planned; ``tests.csv`` carries the control's test, equal to
``offset_control_tests.csv``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

import headstats as hs
from headstats.config.protocol import Protocol, load_protocol
from headstats.study.plan import job_label, study_jobs

DEMO = Path(__file__).resolve().parents[3] / "data" / "demo" / "mini.conllu"
SYNTACTIC = ["syntactic", "syntactic:amod"]


def protocol(tiny_model_dir, **extra) -> Protocol:
    raw = {"name": "t", "models": [{"name": "tiny", "path": str(tiny_model_dir)}],
           "datasets": [{"name": "ud", "path": str(DEMO)}, {"name": "plain", "path": str(DEMO)}],
           "scoring": {"roles": ["local", *SYNTACTIC], "relations": ["nsubj", "amod"]},
           "statistics": {"test": "t", "tau": 1.0, "sensitivity": False},
           "report": {"figures": {"formats": ["png"], "dpi": 72}}}
    for key, value in extra.items():
        raw[key] = {**raw.get(key, {}), **value} if isinstance(value, dict) else value
    return Protocol.model_validate(raw)


#: what the planners read of each data set: ``plain`` stands for a data set without parses (its arc roles dropped)
FACTS = {"ud": {"has_pairs": False, "has_parses": True}, "plain": {"has_pairs": False, "has_parses": False}}


def offset_jobs(p: Protocol) -> list:
    """The study's jobs of the offset control: the gate's and the analysis'."""
    return [j for j in study_jobs(p, facts=FACTS).jobs if j.name in ("offset_control", "offset_gate")]


def gate_controls_of(p: Protocol) -> list:
    """The jobs the roles plan for their offset gate (their planned jobs that are not role scores)."""
    return [j for j in study_jobs(p, facts=FACTS).planned["pande_roles"] if j.name != "pande_roles"]


def test_the_gate_plans_one_control_per_measure_on_parsed_data_and_shares_it_with_the_analysis(tiny_model_dir):
    p = protocol(tiny_model_dir)
    [job] = offset_jobs(p)  # the parsed data set only, the scoring's relations and arc direction
    assert job.dataset == "ud" and job.options["options"].relations == ["nsubj", "amod"]
    # named by no analysis: its tables are not written without the analysis; its values are the gate's
    assert job.name == "offset_gate" and gate_controls_of(p) == [job]
    both = protocol(tiny_model_dir, scoring={"measures": ["weights", "norm"]})
    assert [j.options.get("measure") for j in offset_jobs(both)] == [None, "norm"]
    # analyses: [offset_control] with the scoring's options: the gate's job of the primary measure is its job
    shared = protocol(tiny_model_dir, scoring={"measures": ["weights", "norm"]}, analyses=["offset_control"],
                      analysis_options={"offset_control": {"relations": ["nsubj", "amod"]}})
    plan = study_jobs(shared, facts=FACTS)
    jobs = [j for j in plan.jobs if j.name in ("offset_control", "offset_gate")]
    assert [(j.name, j.dataset, j.options.get("measure")) for j in jobs] == [
        ("offset_control", "ud", None), ("offset_gate", "ud", "norm"), ("offset_control", "plain", None)]
    gate = [j for j in plan.planned["pande_roles"] if j.name != "pande_roles"]
    assert gate == jobs[:2] and gate[0] is plan.planned["offset_control"][0]  # one job, planned by both
    assert plan.planned["offset_control"] == [jobs[0], jobs[2]]
    # other options: the analysis runs its own control beside the gate's
    other = protocol(tiny_model_dir, analyses=["offset_control"])  # the default relations, not the scoring's
    jobs = offset_jobs(other)
    assert [(j.name, j.dataset) for j in jobs] == [("offset_gate", "ud"), ("offset_control", "ud"),
                                                   ("offset_control", "plain")]
    assert gate_controls_of(other) == jobs[:1]
    assert len({job_label(j) for j in jobs}) == 3  # two jobs of one data set and measure: two labels (shards)
    # the gate off: no control unless the analysis asks for it
    off = protocol(tiny_model_dir, statistics={"offset_gate": False})
    assert offset_jobs(off) == [] and gate_controls_of(off) == []


def test_a_run_gates_its_syntactic_roles_with_the_control_the_analysis_reports(tmp_path, tiny_model_dir):
    raw = protocol(tiny_model_dir, analyses=["offset_control"],
                   analysis_options={"offset_control": {"relations": ["nsubj", "amod"]}}).model_dump(mode="json")
    raw["datasets"] = raw["datasets"][:1]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(raw))
    study = hs.run(load_protocol(tmp_path / "p.yaml"), tmp_path / "run")  # with its report
    tests = pd.read_csv(study.out / "tests.csv")
    control = pd.read_csv(study.out / "offset_control_tests.csv")
    control["role"] = control["role"].str.removesuffix("_beyond_offset")
    merged = tests.merge(control, on=["model", "dataset", "role", "layer", "head"], suffixes=("", "_c"))
    assert sorted(set(merged["role"])) == SYNTACTIC and len(merged) == 2 * 2 * 2  # 2 layers x 2 heads
    for column, source in (("offset_n", "n"), ("offset_excess", "mean"), ("offset_ci_low", "ci_low"),
                           ("offset_p_unc", "p_unc"), ("offset_p_corr", "p_corr")):
        np.testing.assert_array_equal(merged[column].to_numpy(float), merged[f"{source}_c"].to_numpy(float))
    assert tests.loc[tests["role"] == "local", ["offset_p_corr", "gate_removed"]].isna().all().all()
    # the assignment is the score test's and the control's: reject = score test and offset_reject, where gated
    gated = merged.assign(passed=merged["p_corr"] <= merged["alpha"])
    assert (gated["reject"] == (gated["passed"] & gated["offset_reject"])).all()
    assert (gated["gate_removed"] == (gated["passed"] & ~gated["offset_reject"])).all()
    report = (study.out / "report.md").read_text()
    assert "A syntactic role was assigned only when, in addition, the head beat its offset-matched control" in report
    removed = int(gated["gate_removed"].sum())
    assert f"The offset gate (METHODS 6.2) removed {removed} of the {int(gated['passed'].sum())} syntactic" in report


def test_sharded_and_merged_the_gate_gives_the_tests_of_one_machine(tmp_path, tiny_model_dir):
    """Both measures and an offset control analysis of other options (so the primary gate job is named
    ``offset_gate``): shards 1/2 and 2/2, merged, give the one-machine ``tests.csv`` and ``roles.csv``."""
    from headstats.study.merge import merge_shards
    from headstats.study.plan import Execution
    from headstats.study.run import run_study

    p = protocol(tiny_model_dir, scoring={"measures": ["weights", "norm"]}, analyses=["offset_control"],
                 execution={"chunk_size": 2})
    p = Protocol.model_validate({**p.model_dump(mode="json"), "datasets": p.model_dump(mode="json")["datasets"][:1]})
    whole = run_study(p, tmp_path / "whole", execution=Execution(cache=False))
    shards = [run_study(p, tmp_path / f"shard{i}", execution=Execution(cache=False, shard=(i, 2))).out for i in (1, 2)]
    merge_shards(shards, tmp_path / "merged")
    for table in ("tests", "roles", "offset_control_tests"):
        a, b = (pd.read_csv(folder / f"{table}.csv") for folder in (whole.out, tmp_path / "merged"))
        pd.testing.assert_frame_equal(a, b)
    tests = pd.read_csv(whole.out / "tests.csv")
    assert tests.groupby("measure")["offset_p_corr"].count().to_dict() == {"norm": 8, "weights": 8}
