"""The surface analysis' tables (``analyses/surface/tables.py``): declared once, under the files its run writes, and
registered by its spec as declared."""

from headstats.analyses import get_analysis
from headstats.analyses.surface import tables


def test_each_table_is_declared_once_under_its_file_name():
    declared = [tables.SURFACE, tables.SURFACE_TESTS]
    assert [table.files for table in declared] == [("surface.csv",), ("surface_tests.csv",)]
    assert {table.owner for table in declared} == {"surface"}
    assert get_analysis("surface").tables == tables.DECLARED == {table.name: table for table in declared}
