"""Tests of headstats.analyses.pande_roles.finish.tables: every table of a study is the same from MeasureArrays as from the
long table; the roles' finish step, through the registry, gives the tables of ``analyse``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.analyses.pande_roles.finish.tables import analyse, participation
from headstats.config.protocol import ReportOptions, StatisticsOptions
from conftest import long_frame, planted_arrays


def test_participation_from_arrays_equals_long_table():
    arrays = planted_arrays(seed=1)
    got = participation(arrays)
    pd.testing.assert_frame_equal(got, participation(long_frame(arrays)))
    # the last role of each array has NaN for some inputs; by hand for the first array
    first = arrays[0]
    row = got.iloc[2]
    assert (row["model"], row["dataset"], row["role"]) == ("m", "single", "delimiter")
    assert row["n_inputs"] == 30 and row["n_taking_part"] == int(np.isfinite(first.values[:, 0, 0, 2]).sum())
    assert row["n_not_taking_part"] == 30 - row["n_taking_part"]


def test_analyse_arrays_and_long_table_give_the_same_tables():
    arrays = planted_arrays(seed=2)
    a = analyse(arrays, StatisticsOptions(), 0, top_k=ReportOptions().top_k)
    b = analyse(long_frame(arrays), StatisticsOptions(), 0, top_k=ReportOptions().top_k)
    pd.testing.assert_frame_equal(a.tests, b.tests, check_exact=True)
    pd.testing.assert_frame_equal(a.roles, b.roles, check_exact=True)
    assert a.tables.keys() == b.tables.keys() and {"tau_sensitivity", "robustness"} <= set(a.tables)
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name], check_exact=True, obj=name)


# ------------------------------------------------------------------------------------------- ceilings (issue 8)
def _with_ceilings():
    from headstats.measures import MeasureArray

    # 4 inputs, 1 layer, 2 heads, roles local and block; input 3 takes no part in block
    values = np.array([[[[2.0, 1.0], [1.0, 1.5]]],
                       [[[2.5, 1.0], [1.0, 1.5]]],
                       [[[1.5, 1.0], [1.0, 1.5]]],
                       [[[3.0, np.nan], [1.0, np.nan]]]], dtype=np.float32)
    ceilings = np.array([[2.0, 2.0], [3.0, 2.5], [2.5, 2.0], [4.0, np.nan]], dtype=np.float32)
    return MeasureArray("m", "d", ["a", "b", "c", "e"], ("local", "block"), values, ceilings=ceilings)


def test_ceiling_columns_and_table_by_hand():
    from headstats.analyses.pande_roles.finish.tables import add_ceilings, ceiling_table, ceiling_warnings
    from headstats.stats.onesample import test_roles

    array = _with_ceilings()
    tests = add_ceilings(test_roles([array], tau={"default": 3.0, "block": 1.0}), [array])
    assert list(tests.columns[-2:]) == ["score_ceiling", "ceiling_share"]
    row = tests[(tests["role"] == "local") & (tests["head"] == 0)].iloc[0]
    assert row["score_ceiling"] == pytest.approx((2 + 3 + 2.5 + 4) / 4)
    assert row["ceiling_share"] == pytest.approx(((2 + 2.5 + 1.5 + 3) / 4) / ((2 + 3 + 2.5 + 4) / 4))
    block = tests[(tests["role"] == "block") & (tests["head"] == 1)].iloc[0]
    assert block["score_ceiling"] == pytest.approx((2 + 2.5 + 2) / 3)  # the input taking no part is left out
    assert block["tau"] == 1.0 and row["tau"] == 3.0
    table = ceiling_table([array], StatisticsOptions(tau={"default": 2.5, "block": 1.0}))
    local = table[table["role"] == "local"].iloc[0]
    assert local["mean_ceiling"] == pytest.approx(2.875) and local["tau_reachable"]
    assert local["share_below_tau"] == pytest.approx(2 / 4) and local["n_taking_part"] == 4
    assert table[table["role"] == "block"].iloc[0]["tau_reachable"]
    assert ceiling_warnings(table) == []
    high = ceiling_table([array], StatisticsOptions(tau={"default": 2.5, "block": 2.2}),
                         {"local": "bias", "block": "bias"})
    lines = ceiling_warnings(high)
    assert len(lines) == 1 and "mean ceiling 2.17 of role block on d" in lines[0] and "\n" not in lines[0]
    both = pd.concat([high.assign(measure="weights"), high.assign(measure="norm")])  # a run of two measures
    assert ceiling_warnings(both) == lines  # said once, not once per measure
    # tau equal to the mean ceiling is out of reach too (H1 is mean > tau)
    at = ceiling_table([array], StatisticsOptions(tau=2.875))
    assert not at[at["role"] == "local"].iloc[0]["tau_reachable"]


def test_the_long_table_has_no_ceilings():
    from headstats.analyses.pande_roles.finish.tables import add_ceilings
    from headstats.stats.onesample import test_roles

    array = _with_ceilings()
    tests = add_ceilings(test_roles(long_frame([array])), long_frame([array]))
    assert tests["score_ceiling"].isna().all() and tests["ceiling_share"].isna().all()


# ------------------------------------------------------------------------- attention measures (issue 33)
#: tau below the planted mean 3: every head holds every role under the weights
TAU = StatisticsOptions(tau=2.5, sensitivity=False)


def _two_measures():
    """The planted arrays as the weights, and as the norm the same scores with the first role's halved in layer 0:
    under norm the heads of layer 0 lose that role and keep the others."""
    from dataclasses import replace

    weights = planted_arrays(seed=3)
    norm = []
    for a in weights:
        values = a.values.copy()
        values[:, 0, :, 0] *= 0.5
        norm.append(replace(a, values=values, attention_measure="norm"))
    return weights, norm


def test_two_measures_are_tested_each_as_a_run_of_its_own_with_a_measure_column():
    weights, norm = _two_measures()
    both = analyse([*weights, *norm], TAU, 0)
    alone = {m: analyse(arrays, TAU, 0) for m, arrays in (("weights", weights), ("norm", norm))}
    assert both.measures == ["weights", "norm"] and alone["weights"].measures == ["weights"]
    for measure, one in alone.items():
        part = both.on_measure(measure)
        pd.testing.assert_frame_equal(part.tests, one.tests, check_exact=True)
        pd.testing.assert_frame_equal(part.roles.drop(columns="robust_across_measures"),
                                      one.roles.drop(columns="robust_across_measures"), check_exact=True)
        for name, table in one.tables.items():
            pd.testing.assert_frame_equal(part.tables[name], table, check_exact=True, obj=name)
    tests = both.tests
    assert list(tests.columns[:3]) == ["model", "dataset", "measure"]
    assert tests["measure"].tolist() == ["weights"] * (len(tests) // 2) + ["norm"] * (len(tests) // 2)
    # one measure: the column holds its name, and robust_across_measures is NA throughout
    assert alone["weights"].roles["robust_across_measures"].isna().all()
    assert "measure_agreement" not in alone["weights"].tables


def test_robust_across_measures_and_measure_agreement_by_hand():
    weights, norm = _two_measures()
    both = analyse([*weights, *norm], TAU, 0)
    keys = ["model", "dataset", "layer", "head"]
    roles = both.roles
    cols = [c for c in roles.columns if c not in (*keys, "measure", "roles", "n_roles", "robust_across_measures")]
    w = roles[roles["measure"] == "weights"].set_index(keys)[cols].fillna(False).astype(bool)
    n = roles[roles["measure"] == "norm"].set_index(keys)[cols].fillna(False).astype(bool)
    robust = roles.set_index(keys)
    for (measure, mine, other) in (("weights", w, n), ("norm", n, w)):
        got = robust[robust["measure"] == measure]["robust_across_measures"]
        for key in mine.index:
            held = mine.loc[key]
            expected = pd.NA if not held.any() else bool((~held | other.loc[key]).all())
            assert (got.loc[key] is pd.NA) if expected is pd.NA else got.loc[key] == expected, key
    # by design: layer 0 loses the first role under norm (not robust under weights); layer 1 has the same scores
    # under both (robust, but for a head near alpha, whose Holm step moves with the other tests of its family)
    under_weights = robust[robust["measure"] == "weights"]["robust_across_measures"]
    assert not under_weights.xs(0, level="layer").any() and under_weights.xs(1, level="layer").mean() > 0.5
    agreement = both.tables["measure_agreement"]
    assert list(agreement.columns) == ["model", "dataset", "role", "layer", "head", "weights", "norm",
                                       "robust_across_measures"]
    t = both.tests.assign(reject=both.tests["reject"].fillna(False).astype(bool))
    for r in agreement.itertuples():
        mine = t[(t["model"] == r.model) & (t["dataset"] == r.dataset) & (t["role"] == r.role)
                 & (t["layer"] == r.layer) & (t["head"] == r.head)].set_index("measure")["reject"]
        assert (r.weights, r.norm, r.robust_across_measures) == (mine["weights"], mine["norm"],
                                                                 mine["weights"] and mine["norm"])


def test_finish_roles_through_the_registry_tests_the_role_jobs_results():
    """The spec's finish reads the role scores from the planned jobs named by the collector (a gate control job is
    not a role score), ``top_k`` from the report options, and gives ``analyse``'s tables; a tau out of reach of a
    role's ceilings goes to ``warn``."""
    from types import SimpleNamespace

    from headstats.analyses import get_analysis
    from headstats.analyses.pande_roles.collect import GATE_ONLY, NAME
    from headstats.analyses.sieves import ScoreSettings

    arrays = planted_arrays(seed=2)
    control = SimpleNamespace(name=GATE_ONLY, options={}, collector=None)  # never read: the gate is off
    jobs = [SimpleNamespace(name=NAME, collector=SimpleNamespace(result=lambda a=a: a)) for a in arrays]
    statistics = StatisticsOptions(offset_gate=False)
    warnings = []
    out = get_analysis(NAME).finished({}, statistics, ScoreSettings(), 0, jobs=[*jobs, control],
                                      report=ReportOptions(top_k=2), warn=warnings.append)
    expected = analyse(arrays, statistics, 0, top_k=2)
    pd.testing.assert_frame_equal(out.pop("tests"), expected.tests, check_exact=True)
    pd.testing.assert_frame_equal(out.pop("roles"), expected.roles, check_exact=True)
    assert out.keys() == expected.tables.keys()
    for name in out:
        pd.testing.assert_frame_equal(out[name], expected.tables[name], check_exact=True, obj=name)
    assert out["strongest_heads"].groupby(["model", "dataset", "role"]).size().max() == 2
    assert warnings == []  # planted arrays carry no ceilings: nothing to warn about


def test_finish_roles_warns_of_a_tau_out_of_reach():
    """tau = 3 on the arrays of :func:`_with_ceilings`: mean ceiling of local (2 + 3 + 2.5 + 4) / 4 = 2.875, of
    block over the three inputs taking part (2 + 2.5 + 2) / 3 = 2.1667: both lines reach ``warn``."""
    from types import SimpleNamespace

    from headstats.analyses import get_analysis
    from headstats.analyses.pande_roles.collect import NAME
    from headstats.analyses.sieves import ScoreSettings

    array = _with_ceilings()
    warnings = []
    get_analysis(NAME).finished({}, StatisticsOptions(tau=3.0, offset_gate=False, sensitivity=False),
                                ScoreSettings(roles=["local", "block"]), 0,
                                jobs=[SimpleNamespace(name=NAME, collector=SimpleNamespace(result=lambda: array))],
                                warn=warnings.append)
    assert [w.split(" on ")[0] for w in warnings] == [
        "tau = 3 is at or above the mean ceiling 2.88 of role local",
        "tau = 3 is at or above the mean ceiling 2.17 of role block"]
