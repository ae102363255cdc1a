"""The probing analysis' tables (``analyses/probing/tables.py``): declared once, under the files its run writes, and
registered by its spec as declared."""

from headstats.analyses import get_analysis
from headstats.analyses.probing import tables


def test_each_table_is_declared_once_under_its_file_name():
    declared = [tables.PROBES_TABLE]
    assert [table.files for table in declared] == [("probes.csv",)]
    assert {table.owner for table in declared} == {"probing"}
    assert get_analysis("probing").tables == tables.DECLARED == {table.name: table for table in declared}
