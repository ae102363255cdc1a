"""Seed-level tables of a comparison on planted scores: a change planted in a few heads among seed noise."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import DescrStatsW

from headstats.analyses.finetune_comparison.finish.replicates import (
    per_seed_changes,
    seed_change_tests,
    seed_metrics,
    seed_transitions,
    special_mass_change,
)
from headstats.stats.seeds import moderated_t_over_seeds, seeds_needed

ROLES = ["local", "delimiter_sep"]
PLANTED = {("local", 2, 1): 0.8, ("delimiter_sep", 3, 0): -1.5}


class Spec:
    alternative, correction, family, confidence = "two-sided", "holm", ("model", "dataset"), 0.95
    min_change, min_change_scale = 0.3, "score"


def planted_scores(n_inputs=60, k=4, seed=0):
    """Base scores ~ 2 + N(0, 0.5); seed s adds the planted change, a run effect N(0, 0.03) per cell and
    input noise N(0, 0.2)."""
    rng = np.random.default_rng(seed)
    cells = [(r, layer, h) for r in ROLES for layer in range(4) for h in range(3)]
    index = pd.MultiIndex.from_tuples([(r, layer, h, str(i)) for r, layer, h in cells for i in range(n_inputs)],
                                      names=["role", "layer", "head", "sentence_id"])
    base_score = 2 + rng.normal(0, 0.5, len(index))
    frame = index.to_frame(index=False).assign(dataset="d")

    def with_scores(model, score):
        return frame.assign(model=model, score=score)

    base = with_scores("base", base_score)
    seeds = {}
    for s in range(k):
        shift = np.array([PLANTED.get(c, 0.0) + rng.normal(0, 0.03) for c in cells]).repeat(n_inputs)
        seeds[f"ft@seed{s}"] = with_scores(f"ft@seed{s}", base_score + shift + rng.normal(0, 0.2, len(index)))
    return base, seeds, cells


def test_per_seed_changes_are_the_mean_paired_differences():
    base, seeds, _ = planted_scores()
    changes = per_seed_changes(base, seeds)
    row = changes[(changes.model_after == "ft@seed1") & (changes.role == "local") & (changes.layer == 2)
                  & (changes["head"] == 1)].iloc[0]
    b = base[(base.role == "local") & (base.layer == 2) & (base["head"] == 1)].score.to_numpy()
    a = seeds["ft@seed1"]
    a = a[(a.role == "local") & (a.layer == 2) & (a["head"] == 1)].score.to_numpy()
    assert row["n"] == 60 and row["mean_change"] == pytest.approx((a - b).mean())


@pytest.mark.parametrize("seed_test", ["t", "moderated_t"])
def test_planted_heads_exceed_the_margin_and_the_others_are_shown_unchanged(seed_test):
    base, seeds, cells = planted_scores()
    changes = per_seed_changes(base, seeds)
    out = seed_change_tests(changes, "ft", alternative="two-sided", correction="holm", family=("model", "dataset"),
                            alpha=0.05, min_change=0.3, seed_test=seed_test)
    assert len(out) == len(cells) == 24
    planted = out.set_index(["role", "layer", "head"])
    moved = {k for k, v in planted["exceeds"].items() if v}
    assert moved == set(PLANTED)
    assert set(k for k, v in planted["unchanged"].items() if v) == set(planted.index) - set(PLANTED)
    # against scipy / statsmodels on the per-seed means
    wide = changes.pivot_table(index=["role", "layer", "head"], columns="model_after", values="mean_change",
                               observed=True)
    t_p = sps.ttest_1samp(wide.to_numpy(), 0.0, axis=1).pvalue
    np.testing.assert_allclose(planted.loc[wide.index, "p_t"], t_p)
    if seed_test == "t":
        ref_p = t_p
        tost = [DescrStatsW(row).ttost_mean(-0.3, 0.3)[0] for row in wide.to_numpy()]
        np.testing.assert_allclose(planted.loc[wide.index, "p_equivalent"], tost)
        assert planted["seeds_needed_moderated"].isna().all()
    else:
        mod = moderated_t_over_seeds(wide.to_numpy().T)
        ref_p = mod["p"]
        assert (out["df_prior"] == mod["df_prior"]).all() and (out["s2_prior"] == mod["s2_prior"]).all()
        np.testing.assert_allclose(planted.loc[wide.index, "dof"], mod["dof"])
        assert (out["seeds_needed_moderated"] == seeds_needed(alpha=0.05, m=24, correction="holm",
                                                              test="moderated_t", df_prior=mod["df_prior"])).all()
    np.testing.assert_allclose(planted.loc[wide.index, "p_unc"], ref_p)
    np.testing.assert_allclose(planted.loc[wide.index, "p_corr"], multipletests(ref_p, method="holm")[1])
    assert (out["n_seeds"] == 4).all() and (out["signflip_floor"] == 2 / 16).all()
    assert (out["seeds_needed"] == 10).all()  # Holm over 24: 2/2^10 < 0.05/24 <= 2/2^9
    assert (out["seeds_needed_t"] == seeds_needed(alpha=0.05, m=24, correction="holm", test="t")).all()


def test_share_margin_scales_with_the_pretrained_mean():
    base, seeds, _ = planted_scores()
    changes = per_seed_changes(base, seeds)
    out = seed_change_tests(changes, "ft", min_change=0.1, min_change_scale="share")
    np.testing.assert_allclose(out["min_change"], 0.1 * out["base_mean"].abs())


def test_seed_metrics_spread():
    metrics = {"a@seed0": {"accuracy": 0.8}, "a@seed1": {"accuracy": 0.9}, "a@seed2": {"accuracy": 0.7}}
    out = seed_metrics(metrics, {"a": list(metrics)})
    acc = out[out.metric == "accuracy"].set_index("model")["value"]
    assert acc["(mean)"] == pytest.approx(0.8) and acc["(sd)"] == pytest.approx(0.1)
    assert acc["(min)"] == 0.7 and acc["(max)"] == 0.9


def test_sep_mass_falls_and_spreads_when_planted():
    rows = []
    rng = np.random.default_rng(1)
    for model, shift in [("base", 0.0), ("s0", -0.1), ("s1", -0.12), ("s2", -0.09)]:
        for layer in range(3):
            for head in range(2):
                sep = 0.5 + shift + rng.normal(0, 0.001)
                rows += [{"model": model, "dataset": "d", "layer": layer, "head": head, "target": "sep", "mass_mean": sep},
                         {"model": model, "dataset": "d", "layer": layer, "head": head, "target": "other",
                          "mass_mean": 0.9 - sep},
                         {"model": model, "dataset": "d", "layer": layer, "head": head, "target": "cls", "mass_mean": 0.1}]
    table, claims = special_mass_change(pd.DataFrame(rows), "base", "g", ["s0", "s1", "s2"])
    overall = table[(table.target == "sep") & (table.layer == -1)].iloc[0]
    frame = pd.DataFrame(rows)
    per_seed = [frame[(frame.model == m) & (frame.target == "sep")].mass_mean.mean()
                - frame[(frame.model == "base") & (frame.target == "sep")].mass_mean.mean() for m in ["s0", "s1", "s2"]]
    assert overall["p_unc"] == pytest.approx(sps.ttest_1samp(per_seed, 0.0, alternative="less").pvalue)
    # the t over 3 seeds is below 0.05, but the claim's exact sign-flip test cannot go below 1/8
    assert claims[0]["p_t"] < 0.05 and "0, 1, 2" in claims[0]["detail"]
    assert claims[0]["p"] == claims[0]["signflip_floor"] == 0.125
    assert overall["p_signflip"] == 0.125
    # per layer the exact test too, Holm over the 3 layers: 3 x 1/8 > alpha, never rejected
    layers = table[(table.target == "sep") & (table.layer >= 0)]
    assert layers["p_signflip_corr"].tolist() == pytest.approx([0.375] * 3)
    assert not layers["reject_signflip"].any()


def test_eight_seeds_decide_each_layer_by_the_exact_test():
    # 8 seeds all lower on [SEP] in every layer: one-sided sign-flip p = 1/256, Holm over 3 layers 3/256 < 0.05
    rows = []
    for model, shift in [("base", 0.0), *((f"s{i}", -0.1 - 0.01 * i) for i in range(8))]:
        for layer in range(3):
            rows += [{"model": model, "dataset": "d", "layer": layer, "head": 0, "target": t, "mass_mean": m}
                     for t, m in (("sep", 0.5 + shift), ("other", 0.4 - shift), ("cls", 0.1))]
    table, claims = special_mass_change(pd.DataFrame(rows), "base", "g", [f"s{i}" for i in range(8)])
    layers = table[(table.target == "sep") & (table.layer >= 0)]
    assert layers["p_signflip"].tolist() == pytest.approx([1 / 256] * 3)
    assert layers["p_signflip_corr"].tolist() == pytest.approx([3 / 256] * 3)
    assert layers["reject_signflip"].all()
    assert claims[0]["p"] == pytest.approx(1 / 256)


def test_transitions_count_heads_of_a_kind_per_seed():
    def roles(model, delim, syn):
        return pd.DataFrame({"model": model, "dataset": "d", "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1],
                             "delimiter": delim, "syntactic": syn})
    tables = {"base": roles("base", [True, True, True, False], [False, False, False, False]),
              "s0": roles("s0", [True, False, False, False], [True, False, False, False]),
              "s1": roles("s1", [False, True, False, False], [True, True, False, False]),
              "s2": roles("s2", [True, True, False, False], [False, True, False, False])}
    table, claims = seed_transitions(tables, "base", "g", ["s0", "s1", "s2"], ["d"])
    row = table[table.role == "delimiter (any)"].iloc[0]
    assert row["before"] == 3 and row["net_per_seed"] == "-2 -2 -1"
    assert row["p_t"] == pytest.approx(sps.ttest_1samp([-2, -2, -1], 0.0, alternative="less").pvalue)
    assert row["p"] == row["signflip_floor"] == 0.125  # every seed lost heads: the sign-flip floor, 1/2^3
    syn = table[table.role == "syntactic (any)"].iloc[0]
    assert syn["gained_mean"] == pytest.approx(4 / 3)
    assert {c["claim"] for c in claims} == {"delimiter heads are lost", "syntactic heads are gained"}


def test_a_claim_whose_seeds_all_moved_alike_never_rests_on_p_zero():
    """Issue 20: net -2, -2, -2 over three seeds read "delimiter heads are lost: holds" at p = 0."""
    def roles(model, delim):
        return pd.DataFrame({"model": model, "dataset": "d", "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1],
                             "delimiter": delim, "syntactic": [False] * 4})
    tables = {"base": roles("base", [True, True, True, False]), "s0": roles("s0", [True, False, False, False]),
              "s1": roles("s1", [False, True, False, False]), "s2": roles("s2", [False, False, True, False])}
    table, claims = seed_transitions(tables, "base", "g", ["s0", "s1", "s2"], ["d"])
    row = table[table.role == "delimiter (any)"].iloc[0]
    assert row["net_per_seed"] == "-2 -2 -2" and np.isnan(row["p_t"]) and row["p"] == 0.125
    lost = [c for c in claims if c["key"] == "delimiter_heads_lost"][0]
    assert lost["p"] == 0.125
