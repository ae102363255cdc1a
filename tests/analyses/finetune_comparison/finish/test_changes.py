"""Comparison layer: planted role transitions, attention similarity and special mass, tokenizer check, summary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headstats.analyses.finetune_comparison.finish.changes import (
    change_direction,
    heads_per_role_per_layer_by_stage,
    layer_change_summary,
    role_changes,
    role_transitions,
    run_comparison,
    special_mass_per_layer,
)
from headstats.errors import HeadstatsError
from headstats.analyses.finetune_comparison.options import CompareSpec


def roles_frame(model: str, held: dict[tuple[int, int], set[str]], *, layers=2, heads=3,
                roles=("local", "delimiter")) -> pd.DataFrame:
    rows = []
    for layer in range(layers):
        for head in range(heads):
            have = held.get((layer, head), set())
            rows.append({"model": model, "dataset": "d", "layer": layer, "head": head,
                         **{r: r in have for r in roles}, "roles": "+".join(r for r in roles if r in have),
                         "n_roles": len(have)})
    return pd.DataFrame(rows)


@pytest.fixture
def planted_roles():
    before = roles_frame("base", {(0, 0): {"local"}, (0, 1): {"local", "delimiter"}, (1, 0): {"delimiter"},
                                  (1, 1): {"delimiter"}, (1, 2): {"delimiter"}})
    after = roles_frame("ft", {(0, 0): {"local"}, (0, 2): {"local"}, (1, 0): {"delimiter"}, (1, 1): {"local"}})
    return before, after


def test_role_transitions_planted_counts(planted_roles):
    before, after = planted_roles
    t = role_transitions(before, after).set_index(["role", "layer"])
    # layer 0, local: before {0,1}, after {0,2}: kept 1, gained 1, lost 1
    assert t.loc[("local", 0), ["before", "after", "kept", "gained", "lost", "net"]].tolist() == [2, 2, 1, 1, 1, 0]
    # layer 0, delimiter: before {1}, after {}: lost 1
    assert t.loc[("delimiter", 0), ["before", "after", "kept", "gained", "lost"]].tolist() == [1, 0, 0, 0, 1]
    # layer 1, delimiter: before {0,1,2}, after {0}: kept 1, lost 2
    assert t.loc[("delimiter", 1), ["before", "after", "kept", "gained", "lost", "net"]].tolist() == [3, 1, 1, 0, 2, -2]
    # layer 1, local: gained head 1
    assert t.loc[("local", 1), ["kept", "gained", "lost"]].tolist() == [0, 1, 0]
    assert (t["n_heads"] == 3).all()
    assert set(t["model_before"]) == {"base"} and set(t["model_after"]) == {"ft"}


def test_role_changes_per_head(planted_roles):
    before, after = planted_roles
    c = role_changes(before, after).set_index(["layer", "head"])
    assert c.loc[(0, 1), "lost"] == "local+delimiter" and c.loc[(0, 1), "gained"] == ""
    assert c.loc[(1, 1), "gained"] == "local" and c.loc[(1, 1), "lost"] == "delimiter"
    assert not c.loc[(0, 0), "changed"] and c.loc[(0, 2), "changed"]
    assert int(c["changed"].sum()) == 4


def test_heads_per_role_per_layer_before_after(planted_roles):
    before, after = planted_roles
    h = heads_per_role_per_layer_by_stage(before, after).set_index(["stage", "role", "layer"])
    assert h.loc[("before", "delimiter", 1), "n_heads"] == 3
    assert h.loc[("after", "delimiter", 1), "n_heads"] == 1
    assert h.loc[("after", "local", 0), "model"] == "ft"


def test_roles_must_be_shared(planted_roles):
    before, after = planted_roles
    with pytest.raises(HeadstatsError, match="not in both"):
        role_transitions(before, after, roles=["block"])


# ------------------------------------------------------------------------------------- attention maps


def test_special_mass_per_layer_is_the_mean_over_heads():
    special = pd.DataFrame({"model": "m", "dataset": "d", "layer": [0, 0, 0, 0, 1, 1], "head": [0, 1, 0, 1, 0, 0],
                            "target": ["cls", "cls", "sep", "sep", "cls", "sep"],
                            "mass_mean": [0.2, 0.4, 0.1, 0.3, 0.9, 0.05]})
    per_layer = special_mass_per_layer(special)
    assert list(per_layer.columns) == ["model", "dataset", "layer", "target", "mass"]
    assert per_layer[["layer", "target"]].values.tolist() == [[0, "cls"], [0, "sep"], [1, "cls"], [1, "sep"]]
    np.testing.assert_allclose(per_layer["mass"], [0.3, 0.2, 0.9, 0.05])


# --------------------------------------------------------------------------------- run_comparison


def scores(model: str, shift_head: tuple[int, int] | None, n: int = 30, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    base = np.random.default_rng(42).gamma(2.0, 1.0, (n, 2, 3, 2))
    noise = rng.normal(0, 0.05, base.shape) if shift_head is not None else 0.0
    values = base + noise
    if shift_head is not None:
        values[:, shift_head[0], shift_head[1], 1] += 1.0
    for s in range(n):
        for layer in range(2):
            for head in range(3):
                for r, role in enumerate(("local", "delimiter")):
                    rows.append((model, "d", str(s), layer, head, role, values[s, layer, head, r]))
    return pd.DataFrame(rows, columns=["model", "dataset", "sentence_id", "layer", "head", "role", "score"])


def test_run_comparison(planted_roles):
    before, after = planted_roles
    spec = CompareSpec(base="base", finetuned=["ft"])
    attention = {
        "similarity": pd.DataFrame({"model_a": "base", "model_b": "ft", "dataset": "d",
                                    "layer": [0, 0, 0, 1, 1, 1], "head": [0, 1, 2] * 2,
                                    "cosine_mean": [0.99, 0.98, 0.97, 0.6, 0.7, 0.8], "cosine_sd": 0.01, "n": 30}),
        "special_mass": pd.DataFrame([
            {"model": m, "dataset": "d", "layer": layer, "head": h, "target": t, "mass_mean": v, "mass_sd": 0.0, "n": 30}
            for m, v0 in (("base", 0.5), ("ft", 0.2)) for layer in range(2) for h in range(3)
            for t, v in (("cls", 0.1), ("sep", v0), ("other", 0.9 - v0))]),
    }
    tables = run_comparison(scores("base", None), {"ft": scores("ft", (1, 2))},
                            pd.concat([before, after]), spec=spec, attention=attention)
    assert {"paired_tests", "transitions", "role_changes", "heads_per_layer", "layer_summary", "similarity",
            "special_mass", "special_mass_per_layer"} <= set(tables)
    paired = tables["paired_tests"]
    sig = paired[paired["reject"]]
    assert (sig["layer"] == 1).all() and (sig["head"] == 2).any()
    summary = tables["layer_summary"].set_index("layer")
    assert summary.loc[1, "rank_abs_change"] == 1 and summary.loc[1, "cosine_mean"] == pytest.approx(0.7)
    assert summary.loc[1, "heads_changed"] >= 1


def test_run_comparison_needs_scores():
    with pytest.raises(HeadstatsError, match="no scores for fine-tuned model"):
        run_comparison(scores("base", None), {}, None, spec=CompareSpec(base="base", finetuned=["ft"]))


def test_layer_change_summary_ranks():
    paired = pd.DataFrame({
        "model_before": "b", "model_after": "a", "dataset": "d", "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1],
        "role": "local", "median_diff": [0.1, -0.1, 2.0, 1.0], "estimate": [0.1, -0.1, 2.0, 1.0],
        "ci_low": [-1.0, -1.0, 1.5, np.nan], "ci_high": [1.0, 1.0, 2.5, np.nan], "p_unc": [0.5, 0.5, 0.001, np.nan],
        "reject": [False, False, True, False],
    })
    s = layer_change_summary(paired).set_index("layer")
    assert s.loc[1, "n_tests"] == 1 and s.loc[1, "share_significant"] == 1.0 and s.loc[1, "n_up"] == 1
    assert s.loc[0, "rank_abs_change"] == 2 and s.loc[1, "share_heads_changed"] == 0.5


def test_direction_of_a_change_comes_from_the_tested_estimate_not_the_median(paired_up_up_down):
    # issue 8: a significant increase whose median difference is negative (most inputs fall a little, a few
    # rise a lot) was counted "down"; the test is about the pseudo-median / mean, whose interval is above 0
    paired = paired_up_up_down
    assert change_direction(paired).tolist() == ["up", "up", "down"]
    s = layer_change_summary(paired).set_index("layer")
    assert s.loc[0, "n_up"] == 2 and s.loc[0, "n_down"] == 0 and s.loc[1, "n_down"] == 1
    assert s.loc[0, "mean_abs_estimate"] == pytest.approx(0.535)
