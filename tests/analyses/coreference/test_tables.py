"""The coreference analysis' tables (``analyses/coreference/tables.py``): declared once, under the files its run writes,
and registered by its spec as declared."""

from headstats.analyses import get_analysis
from headstats.analyses.coreference import tables


def test_each_table_is_declared_once_under_its_file_name():
    declared = [tables.COREFERENCE, tables.COREFERENCE_TESTS, tables.COREFERENCE_NOTES]
    assert [table.files for table in declared] == [("coreference.csv",), ("coreference_tests.csv",),
                                                   ("coreference_notes.csv",)]
    assert {table.owner for table in declared} == {"coreference"}
    assert get_analysis("coreference").tables == tables.DECLARED == {table.name: table for table in declared}
