"""From the role scores to every role table of a study: tests, role assignment and the paper's analyses.

The roles' finish step (:mod:`headstats.analyses.pande_roles.finish`): it calls the statistics layer with the statistics options the
study hands it (never the protocol) and returns tables; it computes nothing itself and draws nothing. The scores come as a list of
:class:`~headstats.measures.MeasureArray` (one per model and data set) or as the long scores table; they are
packed once (:func:`headstats.stats.matrix.score_matrix`) for every test and table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Union

import numpy as np
import pandas as pd

from headstats.analyses.pande_roles.finish.role_assignment import colocation, role_table
from headstats.tables.study_tables import heads_per_role_per_layer
from headstats.measures import MeasureArray
from headstats.tables.study_tables import Analysis, role_columns, strongest_heads

#: The per-input scores of a study: one array per (model, dataset), or the long scores table.
Scores = Union[pd.DataFrame, Sequence[MeasureArray]]

PARTICIPATION_COLUMNS = ["model", "dataset", "role", "n_inputs", "n_taking_part", "n_not_taking_part"]
#: Columns of :func:`ceiling_table`.
CEILING_COLUMNS = ["model", "dataset", "role", "scale", "tau", "n_taking_part", "mean_ceiling", "min_ceiling",
                   "max_ceiling", "share_below_tau", "tau_reachable"]


def participation(scores: Scores) -> pd.DataFrame:
    """Inputs per (model, dataset, role): scored, and taking part (finite score at layer 0, head 0).

    Rows in the order the scores come in (arrays in list order, roles in measure order; a long table in the
    order of first appearance).
    """
    if not isinstance(scores, pd.DataFrame):
        arrays = [scores] if isinstance(scores, MeasureArray) else list(scores)
        rows = [
            (a.model, a.dataset, role, a.n_inputs, int(np.isfinite(a.values[:, 0, 0, i]).sum()))
            for a in arrays for i, role in enumerate(a.measures)
        ]
        out = pd.DataFrame(rows, columns=PARTICIPATION_COLUMNS[:5])
        for col in ("model", "dataset", "role"):
            out[col] = out[col].astype(str)
        out["n_inputs"] = out["n_inputs"].astype(np.int64)
        out["n_taking_part"] = out["n_taking_part"].astype(np.int64)
        out["n_not_taking_part"] = out["n_inputs"] - out["n_taking_part"]
        return out
    first_head = scores[(scores["layer"] == 0) & (scores["head"] == 0)]
    grouped = first_head.groupby(["model", "dataset", "role"], sort=False)["score"]
    out = grouped.agg(n_inputs="size", n_taking_part="count").reset_index()
    out["n_not_taking_part"] = out["n_inputs"] - out["n_taking_part"]
    return out


def head_ceilings(scores: Scores) -> pd.DataFrame:
    """Per (model, dataset, role, layer, head) the mean ceiling over the inputs taking part (METHODS 1.6).

    Returns ``model, dataset, role, layer, head, score_ceiling``: the mean, over the inputs with a finite score
    for that head, of each input's ceiling (the score a perfect head would get on it). Empty when the scores
    carry no ceilings (a long table read from disk).
    """
    arrays = [] if isinstance(scores, pd.DataFrame) else ([scores] if isinstance(scores, MeasureArray) else scores)
    parts = []
    for a in arrays:
        if a.ceilings is None:
            continue
        finite = np.isfinite(a.values)  # (N, L, H, R)
        ceilings = np.nan_to_num(a.ceilings.astype(np.float64))
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.einsum("nlhr,nr->lhr", finite, ceilings) / finite.sum(axis=0)
        layers, heads, roles = mean.shape
        parts.append(pd.DataFrame({
            "model": a.model, "dataset": a.dataset,
            "role": np.tile(np.asarray(a.measures, dtype=object), layers * heads),
            "layer": np.repeat(np.arange(layers), heads * roles),
            "head": np.tile(np.repeat(np.arange(heads), roles), layers),
            "score_ceiling": mean.reshape(-1),
        }))
    if not parts:
        return pd.DataFrame(columns=["model", "dataset", "role", "layer", "head", "score_ceiling"])
    return pd.concat(parts, ignore_index=True)


def add_ceilings(tests: pd.DataFrame, scores: Scores) -> pd.DataFrame:
    """``tests`` with ``score_ceiling`` (the mean ceiling of the head's inputs) and ``ceiling_share``
    (``mean / score_ceiling``, the share of the attainable maximum reached) as its last columns; NaN where
    the scores carry no ceilings."""
    out = tests.copy()
    ceilings = head_ceilings(scores)
    keys = ["model", "dataset", "role", "layer", "head"]
    if ceilings.empty:
        out["score_ceiling"] = np.nan
    else:
        index = pd.MultiIndex.from_frame(ceilings[keys].astype({"layer": np.int64, "head": np.int64}))
        wanted = pd.MultiIndex.from_frame(out[keys].astype({"model": str, "dataset": str, "role": str,
                                                            "layer": np.int64, "head": np.int64}))
        out["score_ceiling"] = pd.Series(ceilings["score_ceiling"].to_numpy(), index=index).reindex(wanted).to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["ceiling_share"] = out["mean"].to_numpy(float) / out["score_ceiling"].to_numpy(float)
    return out


def ceiling_table(scores: Scores, options, scales: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Per (model, dataset, role): the ceilings of the inputs taking part and whether tau is within reach.

    Columns :data:`CEILING_COLUMNS`: the role's ``scale`` and ``tau``; ``mean_ceiling`` (what the test's
    mean can reach at most: a head must score above tau on average, so ``tau >= mean_ceiling`` means no head
    can be assigned the role), the smallest and largest input ceiling, and ``share_below_tau``, the share of
    inputs on which even a perfect head scores at most tau. ``options`` are the statistics options (``tau`` or
    ``tau_of(role)``), ``scales`` each role's unit (``bias`` when not given).
    """
    arrays = [] if isinstance(scores, pd.DataFrame) else ([scores] if isinstance(scores, MeasureArray) else scores)
    rows = []
    for a in arrays:
        if a.ceilings is None:
            continue
        for r, role in enumerate(a.measures):
            taking = np.isfinite(a.values[:, 0, 0, r])
            c = a.ceilings[taking, r].astype(np.float64)
            tau = options.tau_of(role) if hasattr(options, "tau_of") else float(options.tau)
            scale = (scales or {}).get(role, "bias")
            mean = float(c.mean()) if c.size else np.nan
            rows.append((a.model, a.dataset, role, scale, tau, int(c.size), mean,
                         float(c.min()) if c.size else np.nan, float(c.max()) if c.size else np.nan,
                         float((c <= tau).mean()) if c.size else np.nan, bool(c.size and tau < mean)))
    return pd.DataFrame(rows, columns=CEILING_COLUMNS)


def ceiling_warnings(ceilings: pd.DataFrame) -> list[str]:
    """One line per (model, dataset, role) whose tau is at or above its mean ceiling: no head can be
    assigned that role there. A ceiling is the sieve's geometry, the same under every attention measure: a
    table with a ``measure`` column gives each line once, not once per measure."""
    out = []
    same = [c for c in ceilings.columns if c != "measure"]
    for r in ceilings.drop_duplicates(same).itertuples():
        if r.n_taking_part and not r.tau_reachable:
            fix = ("lower statistics.tau for it or score it as scoring.scale: mass" if r.scale == "bias"
                   else "give it a tau below 1")
            out.append(
                f"tau = {r.tau:g} is at or above the mean ceiling {r.mean_ceiling:.3g} of role {r.role} on "
                f"{r.dataset} (model {r.model}; {r.share_below_tau:.0%} of its inputs cannot exceed tau even for "
                f"a perfect head): no head can be assigned {r.role} there; {fix}")
    return out


def analyse(scores: Scores, statistics, seed: int = 0, *, scales: Mapping[str, str] | None = None,
            top_k: int = 10, offset_control: Sequence[MeasureArray] = ()) -> Analysis:
    """Run the tests on the scores and derive the role tables, per attention measure.

    ``scores`` is a list of :class:`~headstats.measures.MeasureArray` or the long scores table; the tables
    are the same for both. ``statistics`` are the statistics options (``StatisticsOptions``: test, tau,
    correction, ..., sensitivity, power_target), ``seed`` seeds the resampling tests, ``scales`` gives each
    role's unit (``bias`` when not given; roles on a 0..1 scale get their own tau grid) and ``top_k`` the
    heads of ``strongest_heads``.

    Scores of several attention measures (METHODS 6.1; ``scoring: {measures: [weights, norm]}``) are tested
    measure by measure, each as a run of its own (its own families of the correction); every table gets a
    ``measure`` column after ``dataset`` (one value when one measure was scored), rows of the primary measure
    (the first) first. With several measures, ``roles`` gains ``robust_across_measures`` and the tables
    ``measure_agreement`` (:func:`measure_agreement`).

    ``offset_control``: the offset-matched excess of the syntactic roles (METHODS 6.2), one array per (attention
    measure, model, parsed data set), as the study computes it in the role scores' pass. Its one-sided tests fill
    the ``offset_*`` columns of ``tests`` (:mod:`headstats.analyses.pande_roles.finish.offset_gate`; NaN without it) and, when
    ``statistics.offset_gate`` is on, a syntactic role is assigned only to the heads that beat their control too.
    """
    from headstats.measures import attention_measures, on_measure

    measures = attention_measures(scores)
    parts = [_analyse_measure(on_measure(scores, m), statistics, seed, scales=scales, top_k=top_k,
                              offset_control=[a for a in offset_control if a.attention_measure == m])
             for m in measures]
    tests = _joined([p.tests for p in parts], measures)
    roles = _joined([p.roles for p in parts], measures)
    tables = {name: _joined([p.tables[name] for p in parts if name in p.tables], measures)
              for name in parts[0].tables}
    roles["robust_across_measures"] = robust_across_measures(roles)
    if len(measures) > 1:
        tables["measure_agreement"] = measure_agreement(tests)
    return Analysis(tests=tests, roles=roles, tables=tables)


def _joined(frames: Sequence[pd.DataFrame], measures: Sequence[str]) -> pd.DataFrame:
    """The frames of each measure, each with its ``measure`` column after ``dataset`` (or first), stacked in
    the order of ``measures``."""
    marked = []
    for frame, measure in zip(frames, measures):
        at = list(frame.columns).index("dataset") + 1 if "dataset" in frame.columns else 0
        frame = frame.copy()
        frame.insert(at, "measure", measure)
        marked.append(frame)
    return marked[0] if len(marked) == 1 else pd.concat(marked, ignore_index=True)


def measure_agreement(tests: pd.DataFrame) -> pd.DataFrame:
    """Per head and role, whether it holds the role under each attention measure of the run (METHODS 6.1).

    Returns ``model, dataset, role, layer, head``, a boolean column per measure (named by it, in the run's order:
    the head holds the role under that measure, ``reject``) and ``robust_across_measures`` (it holds the role under
    every measure). Only the (head, role) pairs tested under every measure.
    """
    from headstats.measures import attention_measures

    measures = attention_measures(tests)
    keys = ["model", "dataset", "role", "layer", "head"]
    held = tests.assign(reject=tests["reject"].fillna(False).astype(bool), measure=tests["measure"].astype(str))
    wide = held.pivot_table(index=keys, columns="measure", values="reject", aggfunc="any", sort=False)
    wide = wide.reindex(columns=measures).dropna().astype(bool)
    wide.columns.name = None
    wide["robust_across_measures"] = wide[measures].all(axis=1)
    return wide.reset_index()


def robust_across_measures(roles: pd.DataFrame) -> pd.Series:
    """Per row of a role table with a ``measure`` column: True when every role the head holds under that measure
    it holds under every other measure of the run too, False when some role is lost under another measure; NA when
    the run has one measure, or the head holds no role under that measure."""
    from headstats.measures import attention_measures

    out = pd.Series(pd.NA, index=roles.index, dtype="boolean")
    measures = attention_measures(roles)
    if len(measures) < 2 or roles.empty:
        return out
    cols = role_columns(roles)
    held = roles[cols].fillna(False).astype(bool)
    keys = roles[["model", "dataset", "layer", "head"]].astype(str).agg("\0".join, axis=1)
    everywhere = held.groupby(keys.to_numpy()).transform("all")  # held under every measure of the run
    any_role = held.any(axis=1)
    kept = (~held | everywhere).all(axis=1)
    out[any_role] = kept[any_role]
    return out


def _analyse_measure(scores: Scores, statistics, seed: int = 0, *, scales: Mapping[str, str] | None = None,
                     top_k: int = 10, offset_control: Sequence[MeasureArray] = ()) -> Analysis:
    """:func:`analyse` on the scores of one attention measure (no ``measure`` column)."""
    from headstats.stats.matrix import score_matrix
    from headstats.stats.onesample import test_roles
    from headstats.stats.options import statistics_kwargs

    kwargs = statistics_kwargs(statistics, seed)
    matrix = score_matrix(scores.drop(columns="measure") if isinstance(scores, pd.DataFrame) and "measure" in
                          scores.columns else scores)
    # The robustness table (every head re-tested with three tests) needs nothing from the tests below: it is
    # computed in a thread meanwhile (its sorting runs without the GIL, on the second core).
    matrix.moments()  # computed once here, not by both threads
    robust = _in_background(_robustness, matrix, kwargs) if statistics.sensitivity else None
    from headstats.stats.power import mark_out_of_reach, power_summary, underpowered

    from headstats.analyses.pande_roles.finish.offset_gate import control_tests, with_offset_gate

    tests = mark_out_of_reach(add_ceilings(test_roles(matrix, **kwargs), scores))
    tests = with_offset_gate(tests, control_tests(offset_control, kwargs),
                             gate=bool(getattr(statistics, "offset_gate", False)))
    roles = role_table(tests)

    power_target = statistics.power_target
    tables = {
        "heads_per_layer": heads_per_role_per_layer(roles),
        "power_summary": power_summary(tests, power_target=power_target),
        "underpowered": underpowered(tests, power_target=power_target),
        "colocation": colocation(roles),
        "strongest_heads": strongest_heads(tests, k=top_k),
        "participation": participation(scores),
    }
    ceilings = ceiling_table(scores, statistics, scales)
    if not ceilings.empty:
        tables["ceilings"] = ceilings
    if statistics.sensitivity:
        unit = [r for r, scale in (scales or {}).items() if scale != "bias"]
        tables.update(sensitivity_tables(matrix, kwargs, unit_roles=unit, robustness_table=robust.result()))
    return Analysis(tests=tests, roles=roles, tables=tables)


def _in_background(function, *args):
    """``function(*args)`` started in a thread; ``.result()`` waits for it (and raises what it raised)."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="headstats-statistics")
    try:
        return pool.submit(function, *args)
    finally:
        pool.shutdown(wait=False)


def _robustness(matrix, kwargs: dict) -> pd.DataFrame:
    from headstats.stats.sensitivity import robustness

    return robustness(matrix, **kwargs)


#: The tau grid of roles scored on a 0..1 scale (``mass``, ``ceiling``).
UNIT_TAUS = np.round(np.arange(0.1, 0.95 + 1e-9, 0.05), 2)


def sensitivity_tables(scores, kwargs: dict, *, unit_roles: Sequence[str] = (),
                       robustness_table: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """How role counts move with tau and alpha, and which heads change between tests and corrections.

    ``scores``: arrays, the long table, or a :class:`~headstats.stats.matrix.ScoreMatrix` packed once. Roles
    scored on a 0..1 scale (``unit_roles``) get the grid :data:`UNIT_TAUS` instead of tau = 1..4; with both
    kinds in one family, each kind's grid is corrected within that kind's roles of the family.
    ``robustness_table``: that table, when it was computed already.
    """
    from headstats.stats.matrix import score_matrix
    from headstats.stats.sensitivity import tau_sensitivity

    sens = kwargs
    if unit_roles:
        matrix = score_matrix(scores)
        unit = matrix.keys["role"].astype(str).isin(list(unit_roles)).to_numpy()
        parts = []
        for rows, taus in ((~unit, None), (unit, UNIT_TAUS)):
            if rows.any():
                extra = {} if taus is None else {"taus": taus}
                parts.append(tau_sensitivity(matrix.take(np.flatnonzero(rows)), **extra, **sens))
        sensitivity = pd.concat(parts, ignore_index=True).sort_values(
            ["model", "dataset", "role", "alpha", "tau"]).reset_index(drop=True)
    else:
        sensitivity = tau_sensitivity(scores, **sens)
    return {
        "tau_sensitivity": sensitivity,
        "robustness": robustness_table if robustness_table is not None else _robustness(score_matrix(scores), kwargs),
    }
