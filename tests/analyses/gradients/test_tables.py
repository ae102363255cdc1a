"""The gradients analysis' tables (``analyses/gradients/tables.py``): declared once, under the files its run writes, and
registered by its spec as declared."""

from headstats.analyses import get_analysis
from headstats.analyses.gradients import tables


def test_each_table_is_declared_once_under_its_file_name():
    declared = [tables.GRADIENTS, tables.GRADIENTS_SKIPPED]
    assert [table.files for table in declared] == [("gradients.csv",), ("gradients_skipped.csv",)]
    assert {table.owner for table in declared} == {"gradients"}
    assert get_analysis("gradients").tables == tables.DECLARED == {table.name: table for table in declared}
