"""A study's plan: every job carries what its collector reads, so its cache key names that and nothing else."""

from __future__ import annotations


def test_an_analysis_option_is_part_of_its_jobs_cache_key_and_nothing_else():
    """Changing ``analysis_options.clustering.max_inputs`` changes the clustering state, so its jobs' keys;
    spelling out a default, or another analysis' option, leaves them alone."""
    from headstats.config.protocol import validate_protocol
    from headstats.engine.cache import digest
    from headstats.study.plan import study_jobs

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
    from headstats.study.plan import study_jobs

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
