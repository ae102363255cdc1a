"""Tests of headstats.assignment.tables: every table of a study is the same from MeasureArrays as from the long table."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

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
    protocol = SimpleNamespace(statistics=StatisticsOptions(), seed=0, report=ReportOptions())
    a = analyse(arrays, protocol)
    b = analyse(long_frame(arrays), protocol)
    pd.testing.assert_frame_equal(a.tests, b.tests, check_exact=True)
    pd.testing.assert_frame_equal(a.roles, b.roles, check_exact=True)
    assert a.tables.keys() == b.tables.keys() and {"tau_sensitivity", "robustness"} <= set(a.tables)
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name], check_exact=True, obj=name)
