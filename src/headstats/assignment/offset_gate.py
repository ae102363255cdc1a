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

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from headstats.measures import MeasureArray

#: The analysis whose collector measures the control (METHODS 6.2): the gate plans its jobs itself, and they serve
#: ``analyses: [offset_control]`` too when that analysis asks for the same control.
OFFSET_CONTROL = "offset_control"
#: The name of the gate's job on the primary measure when ``analyses: [offset_control]`` asks for a control of
#: other options (relations, arc direction): the two jobs would otherwise share a label (a shard folder's name).
GATE_ONLY = "offset_gate"

#: The columns :func:`with_offset_gate` adds to a tests table, in this order (the last ones of ``tests.csv``).
OFFSET_COLUMNS = ("offset_n", "offset_excess", "offset_ci_low", "offset_ci_high", "offset_p_unc", "offset_p_corr",
                  "offset_reject", "gate_removed")
#: The control test's columns each of :data:`OFFSET_COLUMNS` is taken from.
_FROM = {"offset_n": "n", "offset_excess": "mean", "offset_ci_low": "ci_low", "offset_ci_high": "ci_high",
         "offset_p_unc": "p_unc", "offset_p_corr": "p_corr", "offset_reject": "reject"}
KEYS = ["model", "dataset", "role", "layer", "head"]


def control_options(scoring):
    """The options of the control the gate reads: the scoring's relations and arc direction
    (:meth:`~headstats.analyses.offset_control.options.OffsetControlOptions.of_scoring`)."""
    from headstats.analyses.offset_control.options import OffsetControlOptions

    return OffsetControlOptions.of_scoring(scoring)


def gate_jobs(scoring, statistics, models: Sequence[str], kept: Mapping[str, Sequence[str]],
              measures: Mapping[str, dict], *, seed: int, analyses: Sequence[str] = (),
              options_of: Callable[[str], object] | None = None) -> list:
    """The engine jobs of the gate's control: per attention measure (``measures``: each measure's job options, the
    primary first), model, and data set that scores an arc role (``kept``: the roles each data set scores; only a
    parsed one keeps arc roles); none when ``statistics.offset_gate`` is off. ``analyses`` and ``options_of`` (the
    protocol's): a job of the primary measure is named :data:`GATE_ONLY` when ``analyses: [offset_control]`` asks
    for a control of other options, else :data:`OFFSET_CONTROL` (and serves that analysis when it asks for this
    one: the study plans a job once)."""
    from headstats.analyses import get_analysis
    from headstats.analyses.roles import get_role
    from headstats.engine.runner import Job

    if not statistics.offset_gate:
        return []
    collector = get_analysis(OFFSET_CONTROL).collector_class()
    options = {"options": control_options(scoring)}
    gated = [name for name, roles in kept.items() if any(get_role(role).kind == "arc" for role in roles)]
    asked = options_of(OFFSET_CONTROL) if OFFSET_CONTROL in analyses and options_of is not None else None
    primary = next(iter(measures), None)
    return [Job(collector, (model,), dataset, {**options, **extra}, seed=seed,
                name=GATE_ONLY if asked not in (None, options["options"]) and measure == primary else OFFSET_CONTROL)
            for measure, extra in measures.items() for model in models for dataset in gated]


def is_gate_job(job, scoring, statistics) -> bool:
    """Whether ``job`` computes the control the gate reads (:func:`gate_jobs`)."""
    return (job.name in (OFFSET_CONTROL, GATE_ONLY) and bool(statistics.offset_gate)
            and job.options.get("options") == control_options(scoring))


def gate_only(job, scoring, statistics, analyses: Sequence[str], options_of: Callable[[str], object]) -> bool:
    """Whether ``job`` is a control of the gate that no analysis asked for, whose tables are not an analysis': a
    gate job (:func:`is_gate_job`) unless ``analyses: [offset_control]`` asks for the same control on the primary
    measure. ``options_of``: each analysis' typed options (the protocol's)."""
    if not is_gate_job(job, scoring, statistics):
        return False
    if job.name == GATE_ONLY:
        return True
    asked = options_of(OFFSET_CONTROL) if OFFSET_CONTROL in analyses else None
    primary = job.options.get("measure", "weights") == scoring.measure  # a weights job names no measure
    return not (asked is not None and primary and job.options.get("options") == asked)


def control_tests(arrays: Sequence[MeasureArray], kwargs: dict) -> pd.DataFrame:
    """The one-sided test of every head's offset-matched excess, per arc role of each array (the control's
    per-input values, one array per model and data set), with the study's statistics keywords ``kwargs``
    (:func:`headstats.assignment.tables.statistics_kwargs`). Rows are named by the role they control."""
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


def gate_summary(tests: pd.DataFrame) -> pd.DataFrame:
    """Per (model, data set[, measure], role) of the gated roles: ``n_passed_tau`` (heads whose score test
    rejected), ``n_removed`` (taken away by the gate) and ``n_assigned`` (kept); empty when the gate removed
    nothing because it did not apply."""
    gated = tests[tests["gate_removed"].notna()] if "gate_removed" in tests else tests.iloc[:0]
    keys = [c for c in ("model", "dataset", "measure", "role") if c in tests.columns]
    if gated.empty:
        return pd.DataFrame(columns=[*keys, "n_passed_tau", "n_removed", "n_assigned"])
    removed = gated["gate_removed"].astype(bool)
    assigned = gated["reject"].fillna(False).astype(bool)
    frame = gated[keys].assign(n_removed=removed.astype(int), n_assigned=assigned.astype(int),
                               n_passed_tau=(removed | assigned).astype(int))
    out = frame.groupby(keys, sort=False)[["n_passed_tau", "n_removed", "n_assigned"]].sum().reset_index()
    return out
