"""The quickstart's tables are unchanged by refactors (golden copies in tests/golden/quickstart)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from headstats.config.protocol import load_protocol
from headstats.study.run import run_study

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "quickstart"


@pytest.fixture(scope="module")
def quickstart_run(tmp_path_factory):
    import os

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        protocol = load_protocol(ROOT / "protocols" / "quickstart.yaml")
        return run_study(protocol, tmp_path_factory.mktemp("qs") / "run")
    finally:
        os.chdir(here)


def _same_frame(new: pd.DataFrame, old: pd.DataFrame) -> None:
    assert list(new.columns) == list(old.columns)
    assert len(new) == len(old)
    for column in old.columns:
        a, b = new[column], old[column]
        if pd.api.types.is_float_dtype(b):
            # scores are float32: summed in another order they differ in the last bits (~6e-8 of their size),
            # which a near-constant head's sd carries as an absolute difference of ~1e-8, and its t
            # statistic (divided by that sd) as a relative one of ~1e-5
            np.testing.assert_allclose(a.to_numpy(float), b.to_numpy(float), rtol=1e-4, atol=1e-7, err_msg=column)
        else:
            assert a.astype(str).tolist() == b.astype(str).tolist(), column


@pytest.mark.slow
def test_scores_parquet_unchanged(quickstart_run):
    _same_frame(pd.read_parquet(quickstart_run.out / "scores.parquet"), pd.read_parquet(GOLDEN / "scores.parquet"))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tests.csv", "roles.csv"])
def test_tables_unchanged(quickstart_run, name):
    _same_frame(pd.read_csv(quickstart_run.out / name), pd.read_csv(GOLDEN / name))
