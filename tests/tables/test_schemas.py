"""A run's table schemas in its manifest, and the check of a run folder's tables against them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.errors import OutputError
from headstats.tables.schemas import DamagedRunError, check_run_tables, table_schema
from headstats.study.storage import write_manifest
from headstats.tables.run_tables import write_table

FRAME = pd.DataFrame({"role": ["local", "block"], "layer": [0, 1], "mean": [0.5, 1.5], "p": [0.01, np.nan],
                      "reject": [True, False]})


@pytest.fixture
def run(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    write_table(FRAME, folder, "tests")
    write_manifest(folder, {"headstats_run": "x"})
    return folder


def manifest(run):
    import json

    return json.loads((run / "manifest.json").read_text())


def test_the_manifest_records_columns_kinds_and_finite_columns(run):
    schemas = manifest(run)["table_schemas"]
    assert schemas["tests.csv"] == {"columns": {"role": "str", "layer": "int", "mean": "float", "p": "float",
                                                "reject": "bool"},
                                    "finite": ["mean"]}  # p holds a NaN: it may
    assert schemas["tests.parquet"]["columns"] == {"role": "large_string", "layer": "int64", "mean": "double",
                                                   "p": "double", "reject": "bool"}
    assert table_schema(run / "tests.csv") == schemas["tests.csv"]


def test_unchanged_and_same_shape_tables_pass(run):
    check_run_tables(run, manifest(run), ["tests.csv", "tests.parquet"])
    FRAME.iloc[::-1].to_csv(run / "tests.csv", index=False)  # edited, same columns and kinds
    check_run_tables(run, manifest(run), ["tests.csv"])


@pytest.mark.parametrize("change, words", [
    (lambda f: f.drop(columns=["reject"]), "lacks column 'reject' that the run wrote"),
    (lambda f: f.assign(extra=1), "has column 'extra', which the run did not write"),
    (lambda f: f.assign(layer=["a", "b"]), "column 'layer' holds str values where the run wrote int"),
    (lambda f: f.assign(mean=[0.5, np.inf]), "column 'mean' holds inf in row 2 where the run wrote finite numbers"),
])
def test_damaged_csv_tables_are_refused_naming_file_and_problem(run, change, words):
    change(FRAME).to_csv(run / "tests.csv", index=False)
    with pytest.raises(DamagedRunError, match=f"tests.csv.*{words}.*rerun `headstats run`") as caught:
        check_run_tables(run, manifest(run), ["tests.csv"])
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("data, words", [(b"", "not a readable CSV table"), (b"PAR1garbage", "not a readable PARQUET")])
def test_unreadable_tables_are_refused(run, data, words):
    name = "tests.csv" if not data else "tests.parquet"
    (run / name).write_bytes(data)
    with pytest.raises(DamagedRunError, match=f"{name} is {words}"):
        check_run_tables(run, manifest(run), [name])
    (run / name).unlink()
    with pytest.raises(DamagedRunError, match=f"{name} is missing"):
        check_run_tables(run, manifest(run), [name])


def test_a_table_behind_a_link_or_out_of_the_folder_is_refused(run, tmp_path):
    (tmp_path / "elsewhere.csv").write_bytes((run / "tests.csv").read_bytes())
    (run / "tests.csv").unlink()
    (run / "tests.csv").symlink_to(tmp_path / "elsewhere.csv")
    with pytest.raises(OutputError, match="symbolic link"):
        check_run_tables(run, manifest(run), ["tests.csv"])
    with pytest.raises(OutputError, match="leads out of the folder"):
        check_run_tables(run, manifest(run), ["../elsewhere.csv"])
