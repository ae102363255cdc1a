"""Declared tables: each file declared once, by one owner."""

import pytest

from headstats.tables import TABLES, TableSpec, declare_tables, table_spec


def test_a_declared_table_gets_its_name_owner_and_files():
    spec = declare_tables("_spec_test", {"_spec_test_heads": TableSpec("per head", formats=("csv", "parquet"))})
    try:
        got = spec["_spec_test_heads"]
        assert (got.name, got.owner, got.key) == ("_spec_test_heads", "_spec_test", "_spec_test_heads")
        assert got.files == ("_spec_test_heads.csv", "_spec_test_heads.parquet")
        assert TABLES.get("_spec_test_heads") is got
    finally:
        TABLES.unregister("_spec_test_heads")


def test_two_owners_cannot_declare_one_file():
    with pytest.raises(ValueError, match="already declared by 'study'"):
        declare_tables("_spec_other", {"roles": "my roles"})


def test_an_undeclared_table_gets_a_generic_spec_of_its_owner():
    assert table_spec("_nowhere", "peak").description == "a table of peak"
    assert table_spec("_nowhere").owner == "study"
