"""The summary of the roles: where the heads of each role sit, on a planted role table (hand-computed), and
the heads holding roles of two or more kinds."""

from __future__ import annotations

import pytest

import pandas as pd

from headstats.analyses.pande_roles.section.summary import heads_by_role_set, multi_role_heads, role_summary, with_controls

from conftest import planted_roles


def test_role_summary_hand_computed():
    summary = role_summary(planted_roles()).set_index("role")
    # roles in the figures' order; block (not tested) left out
    assert list(summary.index) == ["local", "delimiter", "delimiter_cls", "delimiter_sep", "syntactic",
                                   "syntactic:nsubj"]
    assert summary["n_heads"].to_dict() == {"local": 3, "delimiter": 2, "delimiter_cls": 3, "delimiter_sep": 3,
                                            "syntactic": 2, "syntactic:nsubj": 3}
    assert (summary["n_tested"] == 12).all() and (summary["n_layers"] == 6).all()
    assert summary.loc["local", "share"] == pytest.approx(0.25)
    # layers [0, 5, 5] -> 5; [1, 2] -> 1.5; [0, 0, 1] -> 0; [2, 3, 4] -> 3; [0, 3] -> 1.5; [3, 3, 5] -> 3
    assert summary["median_layer"].to_dict() == {"local": 5.0, "delimiter": 1.5, "delimiter_cls": 0.0,
                                                 "delimiter_sep": 3.0, "syntactic": 1.5, "syntactic:nsubj": 3.0}
    assert summary["layers_with_most"].to_dict() == {
        "local": "5 (2)", "delimiter": "1, 2 (1 each)", "delimiter_cls": "0 (2)", "delimiter_sep": "2, 3, 4 (1 each)",
        "syntactic": "0, 3 (1 each)", "syntactic:nsubj": "3 (2)"}


def test_multi_role_heads_count_kinds_not_roles():
    # head 0-0 holds local and delimiter_cls (two kinds); 3-0 holds delimiter_sep, syntactic and syntactic:nsubj
    # (two kinds: delimiter and syntactic); 3-1 holds syntactic:nsubj alone; 0-1 delimiter_cls and syntactic
    multi = dict(zip(zip(planted_roles()["layer"], planted_roles()["head"]), multi_role_heads(planted_roles())))
    assert multi[(0, 0)] and multi[(3, 0)] and multi[(0, 1)] and multi[(5, 1)]
    assert not multi[(3, 1)] and not multi[(1, 1)] and not multi[(4, 0)]
    assert sum(multi.values()) == 4  # as the built report says: "4 hold roles of two or more kinds"


def test_heads_by_role_set_groups_heads_that_do_the_same_most_common_first():
    each = pd.DataFrame({"head": ["0-0", "0-1", "1-0", "1-1"],
                         "roles": ["local", "delimiter_cls", "local", "local, delimiter_cls"], "n_roles": [1, 1, 1, 2]})
    sets = heads_by_role_set(each)
    assert sets.to_dict("list") == {"roles": ["local", "delimiter_cls", "local, delimiter_cls"],
                                    "heads": ["0-0, 1-0", "0-1", "1-1"], "n_heads": [2, 1, 1]}
    assert list(heads_by_role_set(each.iloc[:0]).columns) == ["roles", "heads", "n_heads"]


def test_each_role_count_has_its_random_init_controls_count_beside_it():
    summary = pd.DataFrame({"model": ["m", "m", "m@random0", "m@random0", "m@random1"],
                            "dataset": ["d", "d", "d", "e", "d"],
                            "role": ["local", "delimiter", "local", "delimiter", "local"], "n_heads": [5, 30, 1, 7, 0]})
    table = pd.DataFrame({"role": ["local", "delimiter"], "heads": [5, 30]})
    out = with_controls(table, summary, ["m@random0", "m@random1"], "d")
    assert out["heads in m@random0"].tolist() == [1, ""]  # delimiter's 7 heads are of another data set
    assert out["heads in m@random1"].tolist() == [0, ""]
    assert list(table.columns) == ["role", "heads"]  # the trained model's table itself is left as it was
