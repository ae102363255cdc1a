"""The roles section: heads assigned per role, integers with a blank where a role was not tested, in the
protocol's order of data sets."""

from __future__ import annotations

import pandas as pd

from headstats.tables.study_tables import heads_per_role_per_layer
from headstats.analyses.pande_roles.section.roles import role_counts

from conftest import planted_roles


def test_role_counts_are_integers_with_blank_where_not_tested():
    roles = pd.concat([planted_roles(dataset="single"),
                       planted_roles(dataset="pairs", untested=()).assign(block=pd.array([True] + [False] * 11,
                                                                                        dtype="boolean"))])
    counts = role_counts(heads_per_role_per_layer(roles))
    assert list(counts.columns[:4]) == ["model", "dataset", "local", "block"]
    assert str(counts["block"].dtype) == "Int64" and str(counts["local"].dtype) == "Int64"
    block = counts.set_index("dataset")["block"]
    assert block["pairs"] == 1 and block["single"] is pd.NA
    from headstats.report.blocks import markdown_table

    lines = markdown_table(counts).splitlines()
    assert lines[2] == "| m | single | 3 |  | 2 | 3 | 3 | 2 | 3 |"
    assert ".000" not in markdown_table(counts)
    # in the protocol's order of data sets (pairs first here), not the table's
    from types import SimpleNamespace

    protocol = SimpleNamespace(models=[SimpleNamespace(name="m")],
                               datasets=[SimpleNamespace(name="pairs"), SimpleNamespace(name="single")])
    assert list(role_counts(heads_per_role_per_layer(roles), protocol)["dataset"]) == ["pairs", "single"]
