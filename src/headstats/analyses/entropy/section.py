"""The entropy analysis' report section: the mean entropy per layer against the uniform reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from headstats.analyses.entropy.tables import ENTROPY
from headstats.tables import RunTables


def entropy_section(report: Any, root: Path, tables: RunTables) -> None:
    """Report section: mean entropy per layer against the uniform reference; every head in ``entropy.csv``."""
    frame = tables[ENTROPY]
    report.heading("Attention entropy")
    report.text(
        "Mean entropy (nats) of each head's attention rows, smoothed as 0.9999 A + 0.0001 / n and averaged over "
        "queries, then over inputs (Clark et al. 2019). `entropy_uniform` is the mean of ln n, the entropy of "
        "a row spread evenly over the input: heads far below it attend narrowly, heads near it broadly. Every "
        "head: `entropy.csv`."
    )
    per_layer = (frame.groupby(["model", "dataset", "layer"], sort=False)
                 .agg(entropy=("entropy", "mean"), entropy_min=("entropy", "min"),
                      entropy_max=("entropy", "max"), entropy_cls=("entropy_cls", "mean"),
                      entropy_uniform=("entropy_uniform", "first"))
                 .reset_index())
    report.table(per_layer, "mean, lowest and highest head entropy per layer (nats), and the uniform reference",
                 max_rows=60)
