"""Role tables built from a hand-made tests table with known rejections."""

import pandas as pd
import pytest

from headstats.analyses.pande_roles.finish.role_assignment import colocation, role_table
from headstats.tables.study_tables import heads_per_role_per_layer
from headstats.tables.study_tables import strongest_heads


@pytest.fixture
def tests_table():
    rows = []
    # 2 layers x 2 heads; local held by (0,0),(0,1),(1,0); syntactic by (0,0),(1,1); delimiter by none;
    held = {"local": {(0, 0), (0, 1), (1, 0)}, "syntactic": {(0, 0), (1, 1)}, "delimiter": set()}
    for role, heads in held.items():
        for layer in range(2):
            for head in range(2):
                reject = (layer, head) in heads
                rows.append(dict(model="m", dataset="d", role=role, layer=layer, head=head, n=10,
                                 mean=4.0 + layer + head / 10 if reject else 1.0, tau=3.0, effect_size=1.0, ci_low=3.5,
                                 p_corr=0.01 if reject else 0.5, reject=reject))
    rows[-1]["reject"] = float("nan")  # an untested hypothesis counts as not held
    return pd.DataFrame(rows)


def test_role_table(tests_table):
    roles = role_table(tests_table)
    assert list(roles.columns) == ["model", "dataset", "layer", "head", "local", "syntactic", "delimiter", "roles", "n_roles"]
    by_head = roles.set_index(["layer", "head"])["roles"].to_dict()
    assert by_head == {(0, 0): "local+syntactic", (0, 1): "local", (1, 0): "local", (1, 1): "syntactic"}


def test_heads_per_layer_and_colocation(tests_table):
    roles = role_table(tests_table)
    per_layer = heads_per_role_per_layer(roles).set_index(["layer", "role"])["n_heads"]
    assert per_layer[(0, "local")] == 2 and per_layer[(1, "local")] == 1 and per_layer[(1, "delimiter")] == 0
    co = colocation(roles).set_index(["kind", "combination"])["n_heads"]
    assert co[("exact", "local")] == 2
    assert co[("exact", "local+syntactic")] == 1
    assert co[("pair", "local+syntactic")] == 1
    assert co[("pair", "local+delimiter")] == 0


def test_strongest_heads(tests_table):
    top = strongest_heads(tests_table, k=1)
    local = top[top.role == "local"].iloc[0]
    assert (local.layer, local["head"]) == (1, 0)
    assert local["mean_minus_tau"] == local["mean"] - local["tau"]
    assert "effect_size" not in top


def test_strongest_heads_rank_by_score_units_not_cohens_d():
    # a head barely above tau with a tiny sd has a huge d; the head far above tau must still come first
    tests = pd.DataFrame({"model": "m", "dataset": "d", "role": "block", "layer": [0, 1], "head": 0, "n": 50,
                          "mean": [3.01, 5.0], "tau": 3.0, "effect_size": [500.0, 1.2], "score_ceiling": [10.0, 8.0],
                          "ceiling_share": [0.301, 0.625], "ci_low": [3.0, 4.5], "p_corr": [1e-9, 1e-6],
                          "reject": True})
    top = strongest_heads(tests, k=2)
    assert top["layer"].tolist() == [1, 0]
    assert top["mean_minus_tau"].tolist() == pytest.approx([2.0, 0.01])
    assert top["ceiling_share"].tolist() == [0.625, 0.301]


def test_role_not_tested_on_a_data_set_is_missing_not_false(tests_table):
    pairs = tests_table.assign(dataset="pairs")
    block = pairs[pairs.role == "local"].assign(role="block", reject=True)
    roles = role_table(pd.concat([tests_table, pairs, block], ignore_index=True))
    singles = roles[roles.dataset == "d"]
    assert singles["block"].isna().all()  # block was never tested on the single-sentence data set
    assert roles[roles.dataset == "pairs"]["block"].all()
    per_layer = heads_per_role_per_layer(roles)
    assert set(per_layer[per_layer.dataset == "d"]["role"]) == {"local", "syntactic", "delimiter"}
