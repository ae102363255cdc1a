"""How many resamples a family needs: the floor of a resampling p-value, resamples_needed and auto."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from headstats.stats import onesample as os_
from headstats.stats.onesample import test_roles
from simulations.planted import planted_scores

from onesample_cases import RNG, long_table


def test_bootstrap_p_has_floor_one_over_b_plus_one():
    xs = {("local", 0, 0): list(10 + RNG.standard_normal(50))}
    out = test_roles(long_table(xs), test="bootstrap", n_resamples=99, correction="none")
    assert out["p_unc"].iloc[0] == pytest.approx(1 / 100)



def test_resampling_floor_is_noted_when_family_too_large():
    scores = planted_scores(n_layers=4, n_heads=4, roles=("local", "delimiter"), effect=3.0, seed=2)
    out = test_roles(scores, test="permutation", n_resamples=99, correction="bonferroni")
    assert out["note"].str.contains("n_resamples too small for this family of 32").all()
    assert not out["reject"].any()



def test_resamples_needed_and_auto_by_hand():
    # Holm/Bonferroni/BH: one p = 1/(B+1) among m is corrected to m/(B+1) <= alpha  =>  B >= m/alpha - 1
    assert os_.resamples_needed(720, alpha=0.05, correction="holm") == 14399
    assert os_.resamples_needed(720, alpha=0.05, correction="bonferroni") == 14399
    assert os_.resamples_needed(648, alpha=0.05, correction="fdr_bh") == 12959
    c_m = sum(1 / i for i in range(1, 101))
    assert os_.resamples_needed(100, alpha=0.05, correction="fdr_by") == math.ceil(100 * c_m / 0.05) - 1
    assert os_.resamples_needed(720, alpha=0.05, correction="none") == 19
    # auto: the floor is alpha / 10, at least 9,999
    assert os_.auto_resamples(720, alpha=0.05, correction="holm") == 143999
    assert os_.auto_resamples(10, alpha=0.05, correction="holm") == 9999
    for m in (50, 720, 5000):
        b = os_.auto_resamples(m, alpha=0.05, correction="holm")
        assert multipletests(np.r_[1 / (b + 1), np.ones(m - 1)], method="holm")[1][0] <= 0.005



@pytest.mark.parametrize("test", ["permutation", "bootstrap"])
def test_auto_resamples_assign_where_the_old_default_could_not(test):
    # a family of 150 hypotheses: 5 heads far above tau, 145 below; with B = 999 the smallest Holm p is
    # 150/1000 > alpha (noted, nothing assigned); 'auto' draws enough for the five to be assigned
    rng = np.random.default_rng(2)
    values = {("local", h // 10, h % 10): list((4.5 if h < 5 else 2.0) + rng.normal(0, 0.5, 30)) for h in range(150)}
    table = long_table(values)
    few = test_roles(table, test=test, n_resamples=999)
    assert not few["reject"].any() and few["note"].str.contains("n_resamples too small").all()
    auto = test_roles(table, test=test)
    b = os_.auto_resamples(150, alpha=0.05, correction="holm")
    # sequential (the default with auto): every head stops at the first look; the five assigned through the
    # test's draw-free bound on its p-value (Hoeffding / Chernoff), which is far below their level
    assert (auto["n_resamples"] == 250).all()
    assert auto.loc[auto["reject"], "note"].str.contains("without drawing|none of the 29,999 would").all()
    assert auto["reject"].sum() == 5 and not auto["note"].str.contains("too small").any()
    full = test_roles(table, test=test, sequential=False)
    assert (full["n_resamples"] == b).all() and (full["reject"] == auto["reject"]).all()

