"""A study's plan: every job carries what its collector reads, so its cache key names that and nothing else."""

from __future__ import annotations

#: A data set of single, unparsed sentences (what the planners read of it).
FACTS = {"has_pairs": False, "has_parses": False}


def test_an_analysis_option_is_part_of_its_jobs_cache_key_and_nothing_else():
    """Changing ``analysis_options.clustering.max_inputs`` changes the clustering state, so its jobs' keys;
    spelling out a default, or another analysis' option, leaves them alone."""
    from headstats.config.protocol import validate_protocol
    from headstats.engine.cache import digest
    from headstats.study.plan import study_jobs

    base = {"datasets": [{"name": "d", "path": "x.txt"}], "analyses": ["clustering", "surface"]}

    def keys(**options):
        protocol = validate_protocol({**base, "analysis_options": options})
        jobs = study_jobs(protocol, facts={"d": FACTS}).jobs
        return {job.name: digest(dict(job.options)) for job in jobs}

    plain = keys()
    assert keys(clustering={"max_inputs": 100}) == plain  # the default, written out
    changed = keys(clustering={"max_inputs": 5})
    assert changed["clustering"] != plain["clustering"]
    assert changed["surface"] == plain["surface"] and changed["pande_roles"] == plain["pande_roles"]


def test_an_analysis_datasets_option_plans_its_jobs_on_those_data_sets_only():
    """``analysis_options.clustering.datasets`` (Clark et al. cluster WikiText only): clustering jobs on the named
    data sets, every other job on every data set; the option is not part of the clustering jobs' keys."""
    from headstats.config.protocol import validate_protocol
    from headstats.engine.cache import digest
    from headstats.study.plan import study_jobs

    base = {"datasets": [{"name": "d", "path": "x.txt"}, {"name": "e", "path": "y.txt"}],
            "analyses": ["clustering", "surface"]}
    facts = {"d": FACTS, "e": FACTS}

    def planned(**options):
        jobs = study_jobs(validate_protocol({**base, "analysis_options": options}), facts=facts).jobs
        return {(job.name, job.dataset): digest(dict(job.options)) for job in jobs}

    every = planned()
    assert {name for name, _ in every} == {"pande_roles", "clustering", "surface"} and len(every) == 6
    only_e = planned(clustering={"datasets": ["e"]})
    assert set(only_e) == set(every) - {("clustering", "d")}
    assert only_e == {key: value for key, value in every.items() if key in only_e}  # the same keys
    assert planned(clustering={"datasets": ["e", "d"]}) == every


def test_an_analysis_turned_on_by_a_protocol_section_plans_its_own_jobs_through_the_registry():
    """The study names no analysis: one registered with ``protocol_field`` and ``plan`` (here turned on by
    ``compare``) is planned by its own planner, with the study's context, and the
    jobs it plans are recorded as its own (:attr:`StudyPlan.planned`)."""
    from headstats.analyses import ANALYSES, PlanContext, register_analysis
    from headstats.config.protocol import validate_protocol
    from headstats.engine.runner import Job
    from headstats.study.plan import study_jobs

    seen = []

    def plan(options, context: PlanContext):
        seen.append((options, context))
        return [Job(object, (model,), name, {"n": 1}, name="planned_field_test")
                for model in context.models for name in context.datasets]

    register_analysis("planned_field_test", "headstats.analyses.distance.collect:AttentionDistance",
                      selectable=False, protocol_field="compare", plan=plan)
    try:
        protocol = validate_protocol({
            "models": [{"name": "a", "path": "a"}, {"name": "b", "path": "b"}],
            "datasets": [{"name": "d", "path": "x.txt"}], "compare": [{"base": "a", "finetuned": ["b"]}]})
        plan_of = study_jobs(protocol, facts={"d": FACTS})
        mine = plan_of.planned["planned_field_test"]
        assert [(j.models, j.dataset) for j in mine] == [(("a",), "d"), (("b",), "d")]
        assert all(j in plan_of.jobs for j in mine)
        options, context = seen[0]
        assert options is protocol.compare
        assert context.models == ("a", "b") and context.datasets == ("d",)
        assert context.extra["datasets"] == {"d": FACTS} and context.extra["statistics"] is protocol.statistics
    finally:
        ANALYSES.unregister("planned_field_test")
