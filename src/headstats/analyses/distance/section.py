"""Report section of the ``distance`` analysis: how far each layer's heads look, against uniform attention, and the
heads that pass the ``local`` hypothesis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from headstats.analyses.distance.tables import DISTANCE, DISTANCE_TESTS
from headstats.report.sections import head_list, tested_how
from headstats.tables import RunTables


def distance_by_layer(distance: pd.DataFrame, tests: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (model, data set, layer): mean, lowest and highest head distance, the uniform reference, the mean
    locality, and the heads of the layer that pass ``local`` (``layer-head``) when ``tests`` is given."""
    keys = ["model", "dataset", "layer"]
    out = (distance.groupby(keys, sort=False)
           .agg(distance_mean=("distance_mean", "mean"), distance_min=("distance_mean", "min"),
                distance_max=("distance_mean", "max"), uniform_mean=("uniform_mean", "first"),
                locality_mean=("locality_mean", "mean"))
           .reset_index())
    if tests is not None and len(tests):
        held = tests[tests["reject"].fillna(False).astype(bool)]
        local = {key: head_list(part) for key, part in held.groupby(keys, sort=False)}
        out["local_heads"] = [local.get(tuple(k), "none") for k in out[keys].itertuples(index=False)]
    return out


def distance_section(report: Any, root: Path, tables: RunTables) -> None:
    """Attention distance per layer (one table), with the ``local`` test's passing heads."""
    tests = tables.get(DISTANCE_TESTS)
    report.heading("Attention distance")
    report.text(
        "Per head, the attention-weighted distance in tokens from each query to the keys, sum_j a_ij |i - j|, "
        "averaged over the input's queries, then over inputs (Clark et al. 2019; Vig and Belinkov 2019). "
        "`uniform_mean` is the same distance under uniform attention, (n^2 - 1) / 3n, and `locality` is "
        "1 - distance / uniform: 1 for a head that attends to the query itself, 0 for one as far as uniform "
        "attention, below 0 for one that looks farther (e.g. at [CLS] and [SEP]). Every head: `distance.csv`."
    )
    if tests is not None and len(tests):
        report.text(f"A head is **local** when its mean locality is above {tests['threshold'].iat[0]:g}: "
                    f"{tested_how(tests)} (`distance_tests.csv`).")
    report.table(distance_by_layer(tables[DISTANCE], tests), "Mean, lowest and highest head distance per layer "
                 "(tokens), the uniform reference, the mean locality and the heads that pass `local`.",
                 max_rows=60, csv="distance.csv")
