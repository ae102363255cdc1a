"""Role assignment from test results, and the paper's analyses of it (METHODS 1.4-1.5).

A head is assigned role f when its corrected p-value is below alpha (``reject`` in the tests table).
These functions take the tests table of :func:`headstats.stats.onesample.test_roles` and return tidy
tables: the role-assignment grid and co-location of roles (heads per role per layer:
:func:`headstats.tables.study_tables.heads_per_role_per_layer`, shared with the comparison; the strongest heads:
:func:`headstats.tables.study_tables.strongest_heads`, which the report recomputes for another ``top_k``).
"""

from __future__ import annotations

from itertools import combinations

import pandas as pd

# the role table's columns and heads per role per layer: beside its declaration (the comparison reads them too)
from headstats.tables.study_tables import HEAD_KEYS, heads_per_role_per_layer, role_columns  # noqa: F401


def role_table(tests: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, dataset, layer, head), a boolean column per role tested, and ``roles``; one row per
    (model, dataset, measure, layer, head) when ``tests`` has a ``measure`` column (several attention measures).

    ``roles`` names the roles held, joined by ``+`` in the order they were tested (empty when none).
    A role that was tested for a head but could not be decided (too few participating inputs) is False;
    a role that was not tested on that data set at all (``block`` on single sentences) is missing (NA).
    """
    if "measure" in tests.columns:  # a row per head and attention measure, the measures in the table's order
        from headstats.measures import attention_measures, on_measure

        parts = []
        for measure in attention_measures(tests):
            part = role_table(on_measure(tests, measure).drop(columns="measure"))
            part.insert(2, "measure", measure)
            parts.append(part)
        return pd.concat(parts, ignore_index=True)
    roles = list(dict.fromkeys(tests["role"]))
    wide = (
        tests.assign(reject=tests["reject"].fillna(False).astype(bool))
        .pivot_table(index=HEAD_KEYS, columns="role", values="reject", aggfunc="any", fill_value=False)
        .reindex(columns=roles, fill_value=False)
        .astype(bool)
    )
    wide.columns.name = None
    wide = wide.astype("boolean")
    tested = tests.groupby(["model", "dataset"], sort=False)["role"].agg(set)
    for (model, dataset), present in tested.items():
        absent = [r for r in roles if r not in present]
        if absent:
            wide.loc[(model, dataset), absent] = pd.NA
    held = wide[roles].fillna(False).to_numpy(dtype=bool)
    wide["roles"] = ["+".join(r for r, h in zip(roles, row) if h) for row in held]
    wide["n_roles"] = held.sum(axis=1).astype(int)
    return wide.reset_index()


def colocation(roles: pd.DataFrame, *, pairs: bool = True) -> pd.DataFrame:
    """How many heads hold each combination of roles.

    Returns a table ``model, dataset, combination, kind, n_heads, share`` where ``kind`` is ``exact``
    (heads whose set of roles is exactly the combination, ``none`` for no role) or ``pair``
    (heads holding both roles of a pair, whatever else they hold; e.g. the paper's local and syntactic).
    Shares are of all heads of the model.
    """
    cols = role_columns(roles)
    rows = []
    for (model, dataset), group in roles.groupby(["model", "dataset"], sort=False):
        total = len(group)
        exact = group["roles"].replace("", "none").value_counts()
        for combo, n in exact.items():
            rows.append((model, dataset, combo, "exact", int(n), n / total))
        if pairs:
            for a, b in combinations(cols, 2):
                n = int((group[a] & group[b]).sum())
                rows.append((model, dataset, f"{a}+{b}", "pair", n, n / total))
    return pd.DataFrame(rows, columns=["model", "dataset", "combination", "kind", "n_heads", "share"])
