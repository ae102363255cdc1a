"""Score tables shared by the tests of headstats.stats.onesample."""

from __future__ import annotations

import numpy as np
import pandas as pd


def long_table(values: dict[tuple[str, int, int], list[float]], *, model="m", dataset="d") -> pd.DataFrame:
    """Scores table from {(role, layer, head): [score per sentence]}."""
    rows = []
    for (role, layer, head), xs in values.items():
        for i, s in enumerate(xs):
            rows.append((model, dataset, i, layer, head, role, s))
    return pd.DataFrame(rows, columns=["model", "dataset", "sentence_id", "layer", "head", "role", "score"])


RNG = np.random.default_rng(12345)


X = {("local", 0, h): list(3 + 0.3 * h + RNG.standard_normal(25)) for h in range(4)}


WX = {
    ("local", 0, 0): [3.5, 2.1, 4.4, 3.8, 5.0, 2.75, 3.3, 4.15],          # no ties, exact
    ("local", 0, 1): [3.5, 2.5, 4.0, 3.0, 5.0, 3.5, 2.5, 4.5, 3.0, 4.0],  # ties and zeros, permutation
    ("local", 0, 2): list(3.2 + RNG.standard_normal(30)),                 # exact, n = 30
    ("local", 0, 3): list(np.round(3.1 + RNG.standard_normal(30), 1)),    # ties, normal approximation
    ("local", 1, 0): list(3.1 + RNG.standard_normal(80)),                 # n > 50, normal approximation
}

