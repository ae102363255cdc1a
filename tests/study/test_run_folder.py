"""Reading a finished run folder back (what ``headstats report`` rebuilds from): the tables come back as the run
wrote them, role columns as nullable booleans, comparison tables apart, and a folder that is not a finished run
is refused in one line."""

from __future__ import annotations

import pandas as pd
import pytest

from headstats.config.protocol import Protocol, dump_protocol
from headstats.errors import HeadstatsError
from headstats.study.run_folder import load_run_tables, read_roles
from headstats.study.storage import write_manifest
from headstats.tables.run_tables import write_table

TESTS = pd.DataFrame({"model": ["m", "m"], "dataset": ["d", "d"], "role": ["local", "block"], "layer": [0, 0],
                      "head": [0, 1], "p_unc": [0.1 + 0.2, 1e-300], "reject": [False, True]})
ROLES = pd.DataFrame({"model": ["m", "m"], "dataset": ["d", "d"], "layer": [0, 0], "head": [0, 1],
                      "local": [True, False], "block": [None, True], "roles": ["local", None]})


def _run(folder):
    folder.mkdir()
    write_table(TESTS, folder, "tests")
    write_table(ROLES, folder, "roles", parquet=False)
    write_table(pd.DataFrame({"layer": [0], "n_heads": [1]}), folder, "heads_per_layer", parquet=False)
    write_table(pd.DataFrame({"role_a": ["local"], "role_b": ["block"], "n": [0]}), folder, "colocation", parquet=False)
    write_table(pd.DataFrame({"layer": [0], "delta": [0.25]}), folder, "compare_paired_tests")
    (folder / "protocol.resolved.yaml").write_text(dump_protocol(Protocol.model_validate(
        {"name": "read-back", "models": ["m"], "datasets": [{"name": "d", "path": "x.txt"}]})))
    write_manifest(folder, {"headstats_run": "read-back"})
    return folder


def test_a_run_folder_reads_back_as_the_run_wrote_it(tmp_path):
    protocol, tables, manifest = load_run_tables(_run(tmp_path / "run"))
    assert protocol.name == "read-back" and manifest["headstats_run"] == "read-back"
    pd.testing.assert_frame_equal(tables["tests"], TESTS)  # from tests.parquet: 0.1 + 0.2 and 1e-300 exactly
    roles = tables["roles"]
    assert roles["local"].tolist() == [True, False]
    assert roles["block"].isna().tolist() == [True, False] and roles["block"].iloc[1]
    assert str(roles["block"].dtype) == "boolean" and roles["roles"].tolist() == ["local", ""]
    assert set(tables.of("study")) == {"tests", "roles", "heads_per_layer", "colocation"}
    compared = tables.of("finetune_comparison")  # by their keys, apart from the study's
    assert list(compared) == ["paired_tests"] and compared["paired_tests"]["delta"].tolist() == [0.25]


def test_read_roles_takes_true_and_1_as_held(tmp_path):
    path = tmp_path / "roles.csv"
    path.write_text("model,dataset,layer,head,local,block\nm,d,0,0,1,\nm,d,0,1,False,TRUE\n")
    roles = read_roles(path)
    assert roles["local"].tolist() == [True, False]
    assert roles["block"].isna().tolist() == [True, False] and bool(roles["block"].iloc[1])


def test_a_folder_that_is_not_a_finished_run_is_refused_in_one_line(tmp_path):
    with pytest.raises(HeadstatsError, match="does not exist"):
        load_run_tables(tmp_path / "nowhere")
    run = _run(tmp_path / "run")
    (run / "colocation.csv").unlink()
    with pytest.raises(HeadstatsError, match=r"lacks colocation.csv: it is not a finished headstats run folder"):
        load_run_tables(run)
