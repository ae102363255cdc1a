"""The clustering analysis' tables (``analyses/clustering/tables.py``): declared once, under the files its run writes,
and registered by its spec as declared."""

from headstats.analyses import get_analysis
from headstats.analyses.clustering import tables


def test_each_table_is_declared_once_under_its_file_name():
    declared = [tables.JS_DISTANCE, tables.MDS, tables.CLUSTERING_TESTS]
    assert [table.files for table in declared] == [("js_distance.csv",), ("mds.csv",), ("clustering_tests.csv",)]
    assert {table.owner for table in declared} == {"clustering"}
    assert get_analysis("clustering").tables == tables.DECLARED == {table.name: table for table in declared}
