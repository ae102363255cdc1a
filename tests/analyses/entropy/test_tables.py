"""The entropy analysis' tables (``analyses/entropy/tables.py``): declared once, under the files its run writes, and
registered by its spec as declared."""

from headstats.analyses import get_analysis
from headstats.analyses.entropy import tables


def test_each_table_is_declared_once_under_its_file_name():
    declared = [tables.ENTROPY]
    assert [table.files for table in declared] == [("entropy.csv",)]
    assert {table.owner for table in declared} == {"entropy"}
    assert get_analysis("entropy").tables == tables.DECLARED == {table.name: table for table in declared}
