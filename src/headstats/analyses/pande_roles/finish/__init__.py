"""The roles' finish step: every head tested for every role against tau (METHODS 1.4), gated by its offset-matched
control (METHODS 6.2), and the role tables made from the tests (:func:`tables.analyse`), per attention measure.

:func:`finish_roles` is the spec's ``finish``. Unlike a Clark analysis' finish, it reads no table of the pass: it
gets the planned jobs (``jobs``: the role scores' per-input arrays and the offset gate's controls,
:func:`~headstats.analyses.pande_roles.collect.plan`), the report options (``report``: ``top_k`` heads per role in
``strongest_heads``) and ``warn`` (a tau out of reach of a role's ceilings goes to the manifest's ``warnings``).

Modules: :mod:`.tables` (``analyse``: tests, ceilings, participation, sensitivity, agreement across measures),
:mod:`.role_assignment` (the role grid, co-location), :mod:`.offset_gate` (the control's tests and the gate)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import pandas as pd


def finish_roles(tables, statistics, options, seed: int, *, jobs: Sequence = (), report=None,
                 log: Callable[[str], None] | None = None,
                 warn: Callable[[str], None] | None = None) -> dict[str, pd.DataFrame]:
    """``tests``, ``roles`` and every role table (:func:`.tables.analyse`) of the role scores of ``jobs``.

    Parameters
    ----------
    tables : RunTables
        The roles' tables of the pass (none: the role scores are per-input arrays, read from ``jobs``).
    statistics : StatisticsOptions
        The protocol's ``statistics`` (test, tau, correction, ..., ``offset_gate``).
    options : ScoreSettings
        The protocol's ``scoring`` (each role's scale; the gate's control options).
    seed : int
        Seeds the resampling tests.
    jobs : sequence of Job
        The roles' planned jobs, in plan order: the role scores (named ``pande_roles``) and the gate's controls.
    report : ReportOptions, optional
        ``top_k``: heads per role in ``strongest_heads`` (10 without it).
    log, warn : callable, optional
        Progress lines; a warning for the manifest (a role whose tau no head can reach).
    """
    from headstats.analyses.pande_roles.collect import NAME
    from headstats.analyses.pande_roles.finish.offset_gate import gate_controls
    from headstats.analyses.pande_roles.finish.tables import analyse, ceiling_warnings

    log = log or (lambda message: None)
    arrays = [job.collector.result() for job in jobs if job.name == NAME]
    tests = sum(a.n_layers * a.n_heads * len(a.measures) for a in arrays)
    st = statistics
    log(f"testing every head and role: {tests:,} (head, role) pairs, {st.test} test, tau {st.tau_text()}, "
        f"{st.correction} correction"
        + (", with tau/alpha sensitivity and robustness" if st.sensitivity else ""))
    clock = time.perf_counter()
    scales = {role: options.scale_of(role) for role in options.roles}
    analysis = analyse(arrays, st, seed, scales=scales, top_k=getattr(report, "top_k", 10),
                       offset_control=gate_controls(jobs, options, st))
    for warning in ceiling_warnings(analysis.tables.get("ceilings", pd.DataFrame(columns=["n_taking_part"]))):
        (warn or log)(warning)
    log(f"tested in {time.perf_counter() - clock:.1f} s: {int(analysis.tests['reject'].eq(True).sum()):,} "
        "(head, role) pairs assigned")
    return {"tests": analysis.tests, "roles": analysis.roles, **analysis.tables}
