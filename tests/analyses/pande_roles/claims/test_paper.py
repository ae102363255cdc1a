"""The claims of Pande et al. on the role table (headstats.analyses.pande_roles.claims.paper) on planted role tables,
against scipy."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from headstats.stats.claim_catalog import evaluate_all_claims
from headstats.stats.claims import CANNOT_TELL, CONTRADICTED, NOT_SHOWN, SUPPORTED, ClaimSettings
from headstats.analyses.pande_roles.claims.paper import cls_early, few_multi_role_late, local_syntactic

ROLES = ["local", "delimiter", "delimiter_cls", "delimiter_sep", "syntactic"]


def planted_roles(held: dict[str, set[tuple[int, int]]], *, layers: int = 6, heads: int = 12,
                  untested: tuple[str, ...] = ()) -> pd.DataFrame:
    rows = []
    for layer, head in itertools.product(range(layers), range(heads)):
        row = {"model": "m", "dataset": "d", "layer": layer, "head": head}
        for role in ROLES:
            row[role] = pd.NA if role in untested else (layer, head) in held.get(role, set())
        rows.append(row)
    frame = pd.DataFrame(rows)
    for role in ROLES:
        frame[role] = frame[role].astype("boolean")
    return frame


def ceilings(out_of_reach: tuple[str, ...] = ()) -> pd.DataFrame:
    return pd.DataFrame([{"model": "m", "dataset": "d", "role": r, "tau": 3.0,
                          "mean_ceiling": 2.71 if r in out_of_reach else 10.0, "tau_reachable": r not in out_of_reach}
                         for r in ROLES])


def run(roles, ceil=None, claims=None, alpha=0.05):
    return evaluate_all_claims({"roles": roles, "ceilings": ceil if ceil is not None else ceilings()},
                           ClaimSettings(alpha=alpha, correction="holm"), claims=claims).set_index("claim")


def test_local_out_of_reach_cannot_tell_the_local_syntactic_share():
    # the quickstart's demo_single: mean ceiling of local 2.71 <= tau = 3, no head can be local
    out = run(planted_roles({"syntactic": {(0, 0)}}), ceilings(("local",)), claims=["local_syntactic"])
    row = out.loc["local_syntactic"]
    assert row["verdict"] == CANNOT_TELL
    assert row["reason"] == "role out of reach: local out of reach (mean ceiling 2.71 <= tau 3)"


def test_local_syntactic_share_in_range_is_supported_with_the_tost_p():
    both = {(layer, head) for layer in range(6) for head in range(8)}  # 48 of 72 heads: 67 %
    ev = local_syntactic({"roles": planted_roles({"local": both, "syntactic": both}), "ceilings": ceilings()},
                         ClaimSettings())[0]
    assert ev.estimate == pytest.approx(48 / 72)
    assert ev.p_for == pytest.approx(max(sps.binomtest(48, 72, 0.42, alternative="greater").pvalue,
                                         sps.binomtest(48, 72, 0.88, alternative="less").pvalue), rel=1e-12)
    out = run(planted_roles({"local": both, "syntactic": both}), claims=["local_syntactic"])
    assert out.loc["local_syntactic", "verdict"] == SUPPORTED
    none = run(planted_roles({}), claims=["local_syntactic"])
    assert none.loc["local_syntactic", "verdict"] == CONTRADICTED  # 0 % is significantly below 42 %


def test_few_multi_role_late_is_fishers_exact_test_both_ways():
    # multi-role heads (local and syntactic): 1 of 24 in layers 4-5, 7 of 48 in layers 0-3 (issue 20's table)
    multi = {(4, 0)} | {(0, h) for h in range(7)}
    roles = planted_roles({"local": multi, "syntactic": multi})
    ev = few_multi_role_late({"roles": roles, "ceilings": ceilings()}, ClaimSettings())[0]
    grid = [[1, 23], [7, 41]]
    assert ev.p_for == pytest.approx(sps.fisher_exact(grid, alternative="less").pvalue, rel=1e-12)
    assert ev.p_against == pytest.approx(sps.fisher_exact(grid, alternative="greater").pvalue, rel=1e-12)
    out = run(roles, claims=["few_multi_role_late"])
    # 2 min(p) = 0.49: not significant. The claimed direction's floor (2 * 0.0631) is above alpha, but the other
    # direction could reach it (issue 32): "not shown", saying that only the other direction can
    assert out.loc["few_multi_role_late", "verdict"] == NOT_SHOWN
    assert "the claimed direction cannot reach alpha (its smallest p is 0.0631)" in out.loc["few_multi_role_late",
                                                                                              "reason"]


def test_cls_early_on_a_planted_grid_is_the_hand_counted_permutation_p():
    # [CLS] heads: the 12 heads of layer 0 and 2 of layer 1 -> exact permutation p of the mean layer
    held = {(0, h) for h in range(12)} | {(1, 0), (1, 1)}
    roles = planted_roles({"delimiter_cls": held})
    ev = cls_early({"roles": roles, "ceilings": ceilings()}, ClaimSettings())[0]
    # hand: the observed layer sum is 2. Fourteen heads with sum <= 2 need all 12 heads of layer 0 (11 would
    # leave three heads of layer >= 1, sum >= 3) and two of layer 1 (sum 2): C(12, 2) = 66 of C(72, 14) subsets.
    from math import comb
    hand = comb(12, 2) / comb(72, 14)
    assert ev.p_for == pytest.approx(hand, rel=1e-9)
    assert ev.floor == pytest.approx(hand, rel=1e-9)  # nothing sits lower
    assert run(roles, claims=["cls_early"]).loc["cls_early", "verdict"] == SUPPORTED


def test_one_sep_head_is_too_few():
    out = run(planted_roles({"delimiter_sep": {(0, 3)}}), claims=["sep_middle_late"])
    assert out.loc["sep_middle_late", "verdict"] == CANNOT_TELL
    assert out.loc["sep_middle_late", "reason"].startswith("too few heads: 1 [SEP] head(s)")


def test_untested_roles_cannot_tell():
    out = run(planted_roles({}, untested=("delimiter_cls",)), claims=["cls_early"])
    assert out.loc["cls_early", "reason"] == "role not tested: delimiter_cls"


def test_delimiter_largest_is_the_binomial_test_of_discordant_heads():
    delim = {(layer, h) for layer in range(6) for h in range(6)}  # 36 heads
    syn = {(layer, h) for layer in range(6) for h in range(4, 8)}  # 24 heads, 12 shared
    out = run(planted_roles({"delimiter": delim, "syntactic": syn}), claims=["delimiter_largest"])
    row = out.loc["delimiter_largest"]
    b, c = 24, 12  # delimiter only, syntactic only (local: no head; both kinds within reach)
    p_syn = sps.binomtest(b, b + c, 0.5, alternative="greater").pvalue
    p_local = sps.binomtest(36, 36, 0.5, alternative="greater").pvalue
    assert row["p_for"] == pytest.approx(max(p_syn, p_local), rel=1e-12)
    assert row["estimate"] == pytest.approx((b - c) / 72)
    assert row["verdict"] == NOT_SHOWN  # p = 2 * 0.0326 = 0.065 > 0.05
    assert np.isfinite(row["p"])


# ------------------------------------------------------------------ design floors in both directions (issue 32)

def test_all_multi_role_heads_late_is_contradicted_not_a_design_floor():
    # 8 multi-role heads, all in the last two layers of a 6 x 12 model: the claimed direction (fewer late) can
    # never reach alpha (its floor is 2 C(48, 8) / C(72, 8) = 0.0631), the other direction gives Fisher's p
    # C(24, 8) / C(72, 8) = 6.1e-5: the claim is contradicted, not "cannot tell"
    multi = {(4, h) for h in range(4)} | {(5, h) for h in range(4)}
    out = run(planted_roles({"local": multi, "syntactic": multi}), claims=["few_multi_role_late"])
    row = out.loc["few_multi_role_late"]
    against = sps.fisher_exact([[8, 16], [0, 48]], alternative="greater").pvalue
    assert against == pytest.approx(6.14e-5, rel=1e-2)
    assert row["p_unc"] == pytest.approx(2 * against, rel=1e-12)
    assert row["verdict"] == CONTRADICTED
    floor_greater = sps.hypergeom(72, 8, 24).pmf(8)
    assert row["floor"] == pytest.approx(2 * floor_greater, rel=1e-9)


def test_delimiter_against_twice_as_many_local_heads_is_contradicted():
    # 30 delimiter heads, 60 local heads; syntactic heads differ from the delimiter heads on 4 heads only, so
    # the claimed direction's floor is 2 * 0.5^4 = 0.125 > alpha; but local heads outnumber delimiter heads
    every = [(layer, head) for layer in range(6) for head in range(12)]
    delimiter = set(every[:30])
    local = set(every[12:72])
    syntactic = (delimiter - set(every[:2])) | set(every[30:32])
    out = run(planted_roles({"delimiter": delimiter, "local": local, "syntactic": syntactic}),
              claims=["delimiter_largest"])
    row = out.loc["delimiter_largest"]
    b, c = 12, 42  # delimiter only (heads 0-11), local only (heads 30-71)
    p_local = sps.binomtest(b, b + c, 0.5, alternative="less").pvalue
    p_syn = sps.binomtest(2, 4, 0.5, alternative="less").pvalue
    assert row["p_against"] == pytest.approx(min(1, 2 * min(p_local, p_syn)), rel=1e-12)
    assert row["verdict"] == CONTRADICTED
    assert row["floor"] == pytest.approx(min(1, 2 * 2 * 0.5 ** 54), rel=1e-12)  # the other direction's floor


def test_a_design_floor_verdict_states_the_smaller_floor_of_the_two_directions():
    # 2 multi-role heads among 72: the floors are 2 C(48, 2) / C(72, 2) = 0.88 (fewer late) and
    # 2 C(24, 2) / C(72, 2) = 0.216 (more late); the reason states 0.216, the true floor
    multi = {(0, 0), (1, 0)}
    out = run(planted_roles({"local": multi, "syntactic": multi}), claims=["few_multi_role_late"])
    row = out.loc["few_multi_role_late"]
    assert row["verdict"] == CANNOT_TELL
    floor = 2 * sps.hypergeom(72, 2, 24).pmf(2)
    assert row["floor"] == pytest.approx(floor, rel=1e-9)
    assert f"in either direction is {floor:.3g} > alpha" in row["reason"]


def test_cls_early_contradicted_on_a_shift_below_one_layer_says_the_effect_is_small():
    # 66 of 72 heads hold delimiter_cls (all but six of layer 0): mean layer 180 / 66 = 2.73 against 2.5
    held = {(layer, head) for layer in range(6) for head in range(12)} - {(0, h) for h in range(6)}
    out = run(planted_roles({"delimiter_cls": held}), claims=["cls_early"])
    row = out.loc["cls_early"]
    assert row["estimate"] == pytest.approx(180 / 66 - 2.5)
    assert row["verdict"] == CONTRADICTED
    assert row["smallest_effect"] == 1.0
    assert "effect below the stated size (|estimate| 0.227 < 1)" in row["reason"]


def test_each_models_pande_claims_are_corrected_in_their_own_family():
    # METHODS 5.4 / issue 32: the Pande claims of each model form one family (over its data sets), declared up
    # front; a second model in the protocol leaves the first's corrected p-values unchanged
    from statsmodels.stats.multitest import multipletests

    cls_m1 = {(0, h) for h in range(12)} | {(1, 0), (1, 1)}
    multi = {(4, 0)} | {(0, h) for h in range(7)}
    m1 = planted_roles({"delimiter_cls": cls_m1, "delimiter": cls_m1, "local": multi, "syntactic": multi})
    m2 = planted_roles({"delimiter_cls": {(5, h) for h in range(6)} | {(2, 0)}, "local": {(3, 3)},
                        "delimiter": {(h % 6, h) for h in range(12)}}).assign(model="m2")
    ceil = ceilings()
    both = pd.concat([m1, m2], ignore_index=True)
    ceil2 = pd.concat([ceil, ceil.assign(model="m2")], ignore_index=True)
    out = evaluate_all_claims({"roles": both, "ceilings": ceil2}, ClaimSettings(alpha=0.05, correction="holm"))
    assert set(out["family"].str.split(" [(]").str[0]) == {"Pande claims of m", "Pande claims of m2"}
    for model in ("m", "m2"):
        part = out[(out["model"] == model) & ~out["family"].str.contains("cannot reject")]
        assert len(part) >= 3 and part["family"].nunique() == 1
        assert part["family"].iat[0] == f"Pande claims of {model} ({len(part)} that can reject)"
        ref = multipletests(part["p_unc"].to_numpy(float), alpha=0.05, method="holm")[1]
        np.testing.assert_allclose(part["p"].to_numpy(float), ref, rtol=1e-12)
    alone = evaluate_all_claims({"roles": m1, "ceilings": ceil}, ClaimSettings(alpha=0.05, correction="holm"))
    joint = out[out["model"] == "m"].set_index("claim")
    np.testing.assert_allclose(joint["p"].to_numpy(float), alone.set_index("claim").loc[joint.index, "p"], rtol=1e-12)
    # one family over both models would have given m's claims larger corrected p-values
    pooled = out[~out["family"].str.contains("cannot reject")]
    pooled_p = multipletests(pooled["p_unc"].to_numpy(float), method="holm")[1]
    assert (pooled_p[pooled["model"].to_numpy() == "m"] > pooled["p"][pooled["model"] == "m"].to_numpy()).any()
