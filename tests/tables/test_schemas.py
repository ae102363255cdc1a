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


def test_spreadsheet_safe_quotes_each_formula_cell_whatever_the_column_holds():
    """Text starting like a formula gets one ``'`` in front, in object, string and mixed columns (lists among
    the cells too); other cells, numbers and missing values stay as they are."""
    from headstats.tables.schemas import from_spreadsheet_safe, spreadsheet_safe

    frame = pd.DataFrame({
        "names": ["=SUM(A1)", "ok", None, np.nan, "+1", "'q"] * 3,
        "typed": pd.array(["-a", "b", "c", "@d", "e", None] * 3, dtype="string"),
        "mixed": [[1], "x", "=y", 2, 3.0, None] * 3,
        "n": range(18),
    })
    safe = spreadsheet_safe(frame)
    names = safe["names"].tolist()[:6]
    assert [names[k] for k in (0, 1, 4, 5)] == ["'=SUM(A1)", "ok", "'+1", "''q"] and safe["names"][2:4].isna().all()
    assert safe["typed"].tolist()[:5] == ["'-a", "b", "c", "'@d", "e"] and pd.isna(safe["typed"][5])
    assert safe["mixed"].tolist()[:6] == [[1], "x", "'=y", 2, 3.0, None]
    assert safe["n"].tolist() == list(range(18)) and frame["names"][0] == "=SUM(A1)"  # the input is not changed
    assert from_spreadsheet_safe(safe.copy())["names"].tolist()[:2] == ["=SUM(A1)", "ok"]
    plain = pd.DataFrame({"names": ["a", "b"] * 5})
    assert spreadsheet_safe(plain) is plain  # nothing to quote: the same frame
