"""The pictures analysis' tables (``analyses/pictures/tables.py``): declared once, under the files its run writes, and
registered by its spec as declared."""

from headstats.analyses import get_analysis
from headstats.analyses.pictures import tables


def test_each_table_is_declared_once_under_its_file_name():
    declared = [tables.GALLERY, tables.ATTENTION_MAPS, tables.ATTENTION_TOKENS]
    assert [table.files for table in declared] == [("gallery.csv",), ("attention_maps.csv",),
                                                   ("attention_tokens.csv",)]
    assert {table.owner for table in declared} == {"pictures"}
    assert get_analysis("pictures").tables == tables.DECLARED == {table.name: table for table in declared}
