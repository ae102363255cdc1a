"""RunTables: one object for a run's tables, written and read back as declared."""

import pandas as pd
import pytest

from headstats.folders import WRITTEN_BY
from headstats.tables import RunTables
from headstats.tables.schemas import DamagedRunError
from headstats.analyses.finetune_comparison.tables import PAIRED_TESTS, SEED_CLAIMS
from headstats.tables.study_tables import ROLES


def _tables() -> RunTables:
    tables = RunTables({"tests": pd.DataFrame({"model": ["m"], "p": [0.5]}),
                        "roles": pd.DataFrame({"model": ["m"], "dataset": ["d"], "layer": [0], "head": [1]})})
    tables.add("finetune_comparison", {"paired_tests": pd.DataFrame({"layer": [0], "mean_diff": [0.25]}),
                                       "seed_claims": pd.DataFrame({"claim": ["=x"]})})
    tables.add("surface", {"surface_tests": pd.DataFrame({"layer": [0], "p": [0.01]})})
    tables.add("entropy", {})
    return tables


def test_tables_declared_under_a_key_are_their_declared_files_and_claims_index_them_by_spec():
    tables = _tables()
    assert list(tables) == ["tests", "roles", "compare_paired_tests", "compare_seed_claims", "surface_tests"]
    assert tables[PAIRED_TESTS] is tables["compare_paired_tests"]
    assert SEED_CLAIMS in tables and ROLES in tables
    assert list(tables.of("finetune_comparison")) == ["paired_tests", "seed_claims"]  # by their keys
    assert {k: list(v) for k, v in tables.analyses().items()} == {
        "finetune_comparison": ["compare_paired_tests", "compare_seed_claims"], "surface": ["surface_tests"],
        "entropy": []}
    assert tables.owner("surface_tests") == "surface"
    assert tables.describe("roles") == "one row per head, a boolean column per role"


def test_write_gives_each_table_the_files_its_spec_declares(tmp_path):
    files = _tables().write(tmp_path)
    assert sorted(files) == sorted(p.name for p in tmp_path.iterdir())
    assert sorted(files) == ["compare_paired_tests.csv", "compare_paired_tests.parquet", "compare_seed_claims.csv",
                             "roles.csv", "surface_tests.csv", "tests.csv", "tests.parquet"]
    assert (tmp_path / "compare_seed_claims.csv").read_text() == "claim\n'=x\n"  # spreadsheet-safe text


def test_read_gives_back_what_was_written_with_each_tables_owner(tmp_path):
    import json

    tables = _tables()
    tables.write(tmp_path)
    manifest = {"written_by": WRITTEN_BY, "analysis_tables": {"surface": ["surface_tests"], "entropy": []}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    back, read_manifest = RunTables.read(tmp_path)
    assert read_manifest["analysis_tables"] == manifest["analysis_tables"]
    assert back.owner("compare_seed_claims") == "finetune_comparison" and back.owner("surface_tests") == "surface"
    assert list(back.analyses()) == ["surface", "entropy", "finetune_comparison"]
    for name in tables:
        pd.testing.assert_frame_equal(back[name], tables[name])


def test_a_table_of_an_analysis_not_registered_keeps_the_owner_its_manifest_records(tmp_path):
    import json

    RunTables({"peak_heads": pd.DataFrame({"x": [1]})}).write(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"written_by": WRITTEN_BY,
                                                        "analysis_tables": {"peak": ["peak_heads"]}}))
    back, _ = RunTables.read(tmp_path)
    assert back.owner("peak_heads") == "peak" and back.describe("peak_heads") == "a table of peak"


def test_read_refuses_a_damaged_table_in_one_line(tmp_path):
    import json

    from headstats.tables.schemas import SCHEMAS_KEY, table_schemas

    _tables().write(tmp_path)
    manifest = {"written_by": WRITTEN_BY, SCHEMAS_KEY: table_schemas(tmp_path)}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "roles.csv").write_text("model,dataset,layer\nm,d,0\n")
    with pytest.raises(DamagedRunError, match="roles.csv lacks column 'head'"):
        RunTables.read(tmp_path)


def test_missing_columns_names_the_declared_columns_a_table_lacks():
    tables = RunTables({"roles": pd.DataFrame({"model": ["m"], "layer": [0]})})
    assert tables.missing_columns() == {"roles": ["dataset", "head"]}
