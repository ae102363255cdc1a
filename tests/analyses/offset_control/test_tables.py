"""The offset_control analysis' tables (``analyses/offset_control/tables.py``): declared once, under the files its run
writes, and registered by its spec as declared."""

from headstats.analyses import get_analysis
from headstats.analyses.offset_control import tables


def test_each_table_is_declared_once_under_its_file_name():
    declared = [tables.OFFSET_CONTROL_TESTS, tables.OFFSET_CONTROL_INPUTS]
    assert [table.files for table in declared] == [("offset_control_tests.csv",), ("offset_control_inputs.csv",)]
    assert {table.owner for table in declared} == {"offset_control"}
    assert get_analysis("offset_control").tables == tables.DECLARED == {table.name: table for table in declared}
