"""The distance analysis' tables (``analyses/distance/tables.py``): declared once, under the files its run writes, and
registered by its spec as declared."""

from headstats.analyses import get_analysis
from headstats.analyses.distance import tables


def test_each_table_is_declared_once_under_its_file_name():
    declared = [tables.DISTANCE, tables.DISTANCE_TESTS]
    assert [table.files for table in declared] == [("distance.csv",), ("distance_tests.csv",)]
    assert {table.owner for table in declared} == {"distance"}
    assert get_analysis("distance").tables == tables.DECLARED == {table.name: table for table in declared}
