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
