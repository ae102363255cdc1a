"""The Ray executor starts its local cluster's workers at the caller's priority (checked without Ray: the
arguments of ``ray.init``)."""

from __future__ import annotations

import os

from headstats.config.protocol import ExecutionOptions
from headstats.study.executors import NICENESS_VARIABLE, ray_init_kwargs


def test_a_local_cluster_runs_its_workers_at_the_callers_niceness(monkeypatch):
    monkeypatch.delenv(NICENESS_VARIABLE, raising=False)
    kwargs = ray_init_kwargs(ExecutionOptions(executor="ray", workers=3, cpus_per_worker=2))
    assert kwargs["num_cpus"] == 6
    assert kwargs["_system_config"] == {"worker_niceness": os.nice(0)}
    assert "address" not in kwargs


def test_the_environment_variable_is_left_to_ray(monkeypatch):
    monkeypatch.setenv(NICENESS_VARIABLE, "5")
    assert "_system_config" not in ray_init_kwargs(ExecutionOptions(executor="ray", workers=2))


def test_a_cluster_joined_by_address_keeps_its_own_setting(monkeypatch):
    monkeypatch.delenv(NICENESS_VARIABLE, raising=False)
    kwargs = ray_init_kwargs(ExecutionOptions(executor="ray", address="auto", workers=2))
    assert kwargs["address"] == "auto"
    assert "_system_config" not in kwargs and "num_cpus" not in kwargs
