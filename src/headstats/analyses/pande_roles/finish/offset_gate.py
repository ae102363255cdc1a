"""The offset gate of the role assignment (METHODS 6.2): a head holds a syntactic role only when it beats tau
*and* its offset-matched control.

For a head and an arc role (``syntactic``, ``syntactic:<rel>``), the control's per-input value is the mean over
the input's arcs of the role of the offset-matched excess

    e(d -> g) = b(d -> g) - mean_{u != d, u + o in the segment} b(u -> u + o),   o = index(g) - index(d),

(:mod:`headstats.analyses.offset_control`). Per head the control is tested one-sided, H0: mean excess <= 0 against
H1: > 0, with the run's test, correction (over the family of every head and control role of one model and data
set, as the role tests' ``family`` says) and alpha (:func:`headstats.stats.hypotheses.test_measures`). With the
gate on, a syntactic role is assigned when the score test rejects H0: mean score <= tau and the control's test
rejects too; a head whose control was not tested (no input with an arc that has a control) is not assigned.

``tests.csv`` carries the control's result on the rows of the roles it covers, NaN on the others (roles that are
not syntactic, a data set without parses, a run with the gate off):

- ``offset_n``: the inputs that took part in the control (with an arc of the role that has a control);
- ``offset_excess``: the mean excess over them (bias units);
- ``offset_ci_low``, ``offset_ci_high``: its one-sided confidence interval (``offset_ci_high`` is ``inf``);
- ``offset_p_unc``, ``offset_p_corr``: the control test's p-value, uncorrected and corrected;
- ``offset_reject``: the control's test rejects H0 at the corrected level;
- ``gate_removed``: the score test assigned the role and the gate took it away (NA where the gate does not
  apply); ``reject`` is the assignment after the gate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from headstats.measures import MeasureArray

#: The columns :func:`with_offset_gate` adds to a tests table, in this order (the last ones of ``tests.csv``).
OFFSET_COLUMNS = ("offset_n", "offset_excess", "offset_ci_low", "offset_ci_high", "offset_p_unc", "offset_p_corr",
                  "offset_reject", "gate_removed")
#: The control test's columns each of :data:`OFFSET_COLUMNS` is taken from.
_FROM = {"offset_n": "n", "offset_excess": "mean", "offset_ci_low": "ci_low", "offset_ci_high": "ci_high",
         "offset_p_unc": "p_unc", "offset_p_corr": "p_corr", "offset_reject": "reject"}
KEYS = ["model", "dataset", "role", "layer", "head"]


def gate_controls(jobs: Sequence, scoring, statistics) -> list[MeasureArray]:
    """The per-input values of the gate's control, one array per (attention measure, model, parsed data set): the
    results of the roles' jobs (``jobs``, in plan order) that compute the control the gate reads
    (:func:`headstats.analyses.pande_roles.collect.gate_jobs`); none with ``statistics.offset_gate`` off."""
    from headstats.analyses.pande_roles.collect import GATE_ONLY, OFFSET_CONTROL, control_options

    if not statistics.offset_gate:
        return []
    ours = control_options(scoring)
    return [job.collector.result() for job in jobs
            if job.name in (OFFSET_CONTROL, GATE_ONLY) and job.options.get("options") == ours]


def control_tests(arrays: Sequence[MeasureArray], kwargs: dict) -> pd.DataFrame:
    """The one-sided test of every head's offset-matched excess, per arc role of each array (the control's
    per-input values, one array per model and data set), with the study's statistics keywords ``kwargs``
    (:func:`headstats.stats.options.statistics_kwargs`). Rows are named by the role they control."""
    from headstats.analyses.offset_control.options import control_hypotheses, tested_role
    from headstats.stats.hypotheses import test_measures

    if not arrays:
        return pd.DataFrame(columns=[*KEYS, *_FROM.values()])
    roles = list(dict.fromkeys(m for a in arrays for m in a.measures))
    out = test_measures(list(arrays), control_hypotheses(roles), **kwargs)
    return out.assign(role=out["role"].astype(str).map(tested_role))


def with_offset_gate(tests: pd.DataFrame, control: pd.DataFrame, *, gate: bool) -> pd.DataFrame:
    """``tests`` (one attention measure) with :data:`OFFSET_COLUMNS` from the ``control`` tests
    (:func:`control_tests`) and, when ``gate``, ``reject`` of the controlled roles limited to the heads that beat
    their control (module docstring)."""
    out = tests.copy()
    wanted = pd.MultiIndex.from_frame(out[KEYS].astype({"model": str, "dataset": str, "role": str,
                                                        "layer": np.int64, "head": np.int64}))
    index = pd.MultiIndex.from_frame(control[KEYS].astype({"model": str, "dataset": str, "role": str,
                                                           "layer": np.int64, "head": np.int64}))
    found = control[list(_FROM.values())].set_axis(index).reindex(wanted)
    controlled = pd.Series(True, index=index, dtype=bool).reindex(wanted, fill_value=False).to_numpy(bool)
    for column, source in _FROM.items():
        if column == "offset_reject":
            out[column] = found[source].astype("boolean").to_numpy()
        else:
            out[column] = found[source].to_numpy(float)
    removed = pd.Series(pd.NA, index=out.index, dtype="boolean")
    if gate:
        assigned = out["reject"].fillna(False).astype(bool).to_numpy()
        beats = out["offset_reject"].fillna(False).astype(bool).to_numpy()
        removed[controlled] = assigned[controlled] & ~beats[controlled]
        out.loc[controlled, "reject"] = assigned[controlled] & beats[controlled]
    out["gate_removed"] = removed
    return out
