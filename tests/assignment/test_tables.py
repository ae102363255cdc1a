"""Tests of headstats.assignment.tables: every table of a study is the same from MeasureArrays as from the long table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.assignment.tables import analyse, participation
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
    from headstats.assignment.tables import add_ceilings, ceiling_table, tau_warnings
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
    assert tau_warnings(table) == []
    high = ceiling_table([array], StatisticsOptions(tau={"default": 2.5, "block": 2.2}),
                         {"local": "bias", "block": "bias"})
    lines = tau_warnings(high)
    assert len(lines) == 1 and "mean ceiling 2.17 of role block on d" in lines[0] and "\n" not in lines[0]
    # tau equal to the mean ceiling is out of reach too (H1 is mean > tau)
    at = ceiling_table([array], StatisticsOptions(tau=2.875))
    assert not at[at["role"] == "local"].iloc[0]["tau_reachable"]


def test_the_long_table_has_no_ceilings():
    from headstats.assignment.tables import add_ceilings
    from headstats.stats.onesample import test_roles

    array = _with_ceilings()
    tests = add_ceilings(test_roles(long_frame([array])), long_frame([array]))
    assert tests["score_ceiling"].isna().all() and tests["ceiling_share"].isna().all()
