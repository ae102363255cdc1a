"""The importance analysis' tables (``analyses/importance/tables.py``): declared once, under the files its run writes,
and registered by its spec as declared."""

from headstats.analyses import get_analysis
from headstats.analyses.importance import tables


def test_each_table_is_declared_once_under_its_file_name():
    declared = [tables.IMPORTANCE_TESTS, tables.IMPORTANCE, tables.IMPORTANCE_NOTES,
                tables.IMPORTANCE_PRUNING_INPUTS, tables.IMPORTANCE_SEEDS, tables.IMPORTANCE_PRUNING,
                tables.IMPORTANCE_REMOVABLE]
    assert [table.files for table in declared] == [("importance_tests.csv",), ("importance.csv",),
                                                   ("importance_notes.csv",), ("importance_pruning_inputs.csv",),
                                                   ("importance_seeds.csv",), ("importance_pruning.csv",),
                                                   ("importance_removable.csv",)]
    assert {table.owner for table in declared} == {"importance"}
    assert get_analysis("importance").tables == tables.DECLARED == {table.name: table for table in declared}
