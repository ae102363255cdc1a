"""Tests of headstats.stats.corrections against statsmodels.stats.multitest.multipletests."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from headstats.errors import HeadstatsError
from headstats.stats.corrections import (
    check_correction,
    correct_pvalues,
    correct_pvalues_rows,
    list_corrections,
    reject,
)

RNG = np.random.default_rng(0)
P = RNG.random(25) ** 3


@pytest.mark.parametrize("method", ["holm", "bonferroni", "fdr_bh", "fdr_by"])
def test_matches_statsmodels(method):
    # matches statsmodels.stats.multitest.multipletests with the same method
    assert np.allclose(correct_pvalues(P, method), multipletests(P, method=method)[1])


def test_hand_computed_holm_and_bh():
    p = [0.01, 0.04, 0.03, 0.5]
    # holm: sorted .01*4=.04, .03*3=.09, .04*2=.08 -> cummax .09, .5*1 -> .5
    assert np.allclose(correct_pvalues(p, "holm"), [0.04, 0.09, 0.09, 0.5])
    # bh: .01*4/1=.04, .03*4/2=.06, .04*4/3=.0533, .5 -> reverse cummin: .04, .0533, .0533, .5
    assert np.allclose(correct_pvalues(p, "fdr_bh"), [0.04, 0.16 / 3, 0.16 / 3, 0.5])


def test_nans_stay_out_of_the_family():
    p = np.r_[P[:5], np.nan, P[5:10]]
    out = correct_pvalues(p, "bonferroni")
    assert np.isnan(out[5])
    assert np.allclose(np.delete(out, 5), np.minimum(1, np.delete(p, 5) * 10))
    assert np.isnan(correct_pvalues([np.nan, np.nan], "holm")).all()
    assert np.array_equal(correct_pvalues(P, "none"), P)


def test_unknown_correction_lists_known():
    with pytest.raises(HeadstatsError, match="holm, bonferroni, fdr_bh, fdr_by, none"):
        check_correction("hommel")
    assert list_corrections() == ["holm", "bonferroni", "fdr_bh", "fdr_by", "none"]


@pytest.mark.parametrize("method", ["holm", "bonferroni", "fdr_bh", "fdr_by", "none"])
def test_rows_version_equals_correct_pvalues_row_by_row(method):
    p = RNG.random((25, 30)) ** 3  # few rows: statsmodels' Holm runs gc.collect() on every call
    p[RNG.random(p.shape) < 0.1] = np.nan
    p[7] = np.nan
    rows = correct_pvalues_rows(p, method)
    ref = np.array([correct_pvalues(r, method) for r in p])  # each row via statsmodels multipletests
    assert np.allclose(rows, ref, equal_nan=True)


# ---------------------------------------------------------------------------------------------------------
# the registry: what a correction means sits in its entry
# ---------------------------------------------------------------------------------------------------------
def test_entries_carry_kind_method_and_description():
    from headstats.stats.corrections import describe_corrections, get_correction

    table = describe_corrections().set_index("correction")
    assert table["kind"].to_dict() == {"holm": "fwer", "bonferroni": "fwer", "fdr_bh": "fdr", "fdr_by": "fdr",
                                       "none": "none"}
    assert table.loc["fdr_by", "statsmodels_method"] == "fdr_by" and pd.isna(table.loc["none", "statsmodels_method"])
    assert "false discovery rate" in get_correction("fdr_bh").description


def test_unknown_correction_raises_everywhere_with_the_nearest_name():
    from headstats.errors import UnknownNameError

    for call in (lambda: check_correction("holmm"), lambda: correct_pvalues(P, "holmm"),
                 lambda: correct_pvalues_rows(P[None, :], "holmm")):  # rows used to fall through to BH
        with pytest.raises(UnknownNameError, match="did you mean 'holm'.*holm, bonferroni, fdr_bh, fdr_by, none"):
            call()


@pytest.fixture
def sidak():
    """A user's correction: Sidak, 1 - (1 - p)^m, without a vectorised version or a power rule."""
    from headstats.stats.corrections import register_correction, unregister_correction

    entry = register_correction("sidak_user", lambda p, alpha: 1 - (1 - p) ** p.size, kind="fwer",
                                description="Sidak correction (family-wise error rate)")
    yield entry
    unregister_correction("sidak_user")


def test_a_registered_correction_is_used_by_every_table(sidak):
    from headstats.stats.corrections import next_discovery_alpha
    from headstats.stats.onesample import test_roles
    from headstats.stats.sensitivity import robustness, tau_sensitivity
    from simulations.planted import planted_scores, simulate_error_rates

    scores = planted_scores(seed=4, effect=0.7)
    out = test_roles(scores, correction="sidak_user")
    ref = multipletests(out["p_unc"], method="sidak")[1]  # matches statsmodels' Sidak
    assert np.allclose(out["p_corr"], ref) and (out["correction"] == "sidak_user").all()
    m = out["p_unc"].notna().sum()
    assert np.allclose(out["power_alpha"], 0.05 / m)  # no rule given: Bonferroni's level
    assert next_discovery_alpha("sidak_user", 0.05, 10, 3) == 0.005
    # no vectorised version given: the rows are corrected one by one, to the same values
    rows = RNG.random((4, 12))
    rows[1, 3] = np.nan
    assert np.allclose(correct_pvalues_rows(rows, "sidak_user"),
                       [correct_pvalues(r, "sidak_user") for r in rows], equal_nan=True)
    grid = tau_sensitivity(scores, taus=[3.0], alphas=[0.05], correction="sidak_user")
    assert grid["n_heads_assigned"].sum() == out["reject"].sum()
    rob = robustness(scores, tests=("t",), corrections=("sidak_user",))
    assert rob["t_sidak_user"].tolist() == out["reject"].tolist()
    sim = simulate_error_rates(tests=("t",), corrections=("sidak_user",), n_replications=20, m_null=5, m_alt=1)
    assert sim["controls"].tolist() == ["FWER"]


def test_register_checks_its_arguments(sidak):
    from headstats.stats.corrections import register_correction

    with pytest.raises(HeadstatsError, match="already registered"):
        register_correction("sidak_user", lambda p, a: p, kind="fwer", description="")
    with pytest.raises(HeadstatsError, match="kind must be one of fwer, fdr, none"):
        register_correction("x_rate", lambda p, a: p, kind="fdx", description="")
    with pytest.raises(HeadstatsError, match="identifier"):
        register_correction("not a name", lambda p, a: p, kind="fwer", description="")


@pytest.mark.parametrize("method", ["holm", "bonferroni", "fdr_bh", "fdr_by"])
def test_built_ins_are_statsmodels_bit_for_bit(method):
    rng = np.random.default_rng(21)
    for trial in range(12):  # few: statsmodels' Holm runs gc.collect() on every call
        m = int(rng.integers(1, 400))
        p = rng.random(m) ** int(rng.integers(1, 8))
        if trial % 3 == 0:
            p = np.round(p, 2)  # ties
        assert np.array_equal(correct_pvalues(p, method), multipletests(p, method=method)[1]), (method, trial)


# ------------------------------------------------------------------------------------------ one reject rule

SRC = Path(__file__).resolve().parents[2] / "src" / "headstats"


def _alpha_comparisons(path: Path) -> list[str]:
    """``x < alpha`` / ``x <= alpha`` (or ``alpha > x``...) written in ``path``, as ``file:line``."""
    def is_alpha(node: ast.AST) -> bool:
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        return name.endswith("alpha")

    hits = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, sides, sides[1:]):
            if isinstance(left, ast.Constant) or isinstance(right, ast.Constant):
                continue  # a range check such as 0 < alpha < 1
            if (isinstance(op, (ast.Lt, ast.LtE)) and is_alpha(right)) or \
                    (isinstance(op, (ast.Gt, ast.GtE)) and is_alpha(left)):
                hits.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return hits


def test_the_reject_rule_is_written_once():
    # The drift this catches: grouping.py and the probing section said ``p < alpha`` where every other table
    # said ``p_corr <= alpha``. Every decision at level alpha goes through corrections.reject.
    hits = [h for p in sorted(SRC.rglob("*.py")) if p.name != "corrections.py" for h in _alpha_comparisons(p)]
    assert not hits, f"use headstats.stats.corrections.reject instead of comparing with alpha at {hits}"


def test_reject_is_inclusive_at_alpha_and_false_on_nan():
    # a discrete p-value can equal alpha exactly (a sign test's 1/32 at alpha 1/32): statsmodels rejects it
    p = np.array([1 / 32, 1 / 32 + 1e-12, np.nan, 0.0])
    assert reject(p, 1 / 32).tolist() == [True, False, False, True]
    # statsmodels' decision on each finite p alone (a family of one)
    assert [bool(multipletests([x], alpha=1 / 32, method="bonferroni")[0][0]) for x in p[[0, 1, 3]]] == \
        [True, False, True]
    assert bool(reject(0.05, 0.05)) and not bool(reject(float("nan"), 0.05))
