"""The dependency analysis' tables (``analyses/dependency/tables.py``): declared once, under the files its run writes,
and registered by its spec as declared."""

from headstats.analyses import get_analysis
from headstats.analyses.dependency import tables


def test_each_table_is_declared_once_under_its_file_name():
    declared = [tables.DEPENDENCY_TABLE, tables.DEPENDENCY_HEADS, tables.DEPENDENCY_COUNTS, tables.DEPENDENCY_NOTES]
    assert [table.files for table in declared] == [("dependency_table.csv",), ("dependency_heads.csv",),
                                                   ("dependency_counts.csv",), ("dependency_notes.csv",)]
    assert {table.owner for table in declared} == {"dependency"}
    assert get_analysis("dependency").tables == tables.DECLARED == {table.name: table for table in declared}
