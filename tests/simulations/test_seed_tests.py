"""simulations.seed_tests: the tests over seeds keep their level where the per-input tests do not; the exact
sign-flip test cannot reject over three seeds at a corrected level."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from simulations.seed_tests import simulate_moderated_level, simulate_seed_type1


def test_type1_simulation_seeds_keep_the_level_and_inputs_do_not():
    """Under H0 with run-to-run noise (sd 0.1) the per-input test of one run rejects far too often; the
    t-test over 3 seeds keeps the level within Monte Carlo error; the sign-flip test never rejects (floor 0.25)."""
    sim = simulate_seed_type1(n_sim=4000, seeds=3, inputs=300, sd_seed=0.1, sd_input=1.0, mixed=False,
                              rng_seed=1).set_index("method")
    t = sim.loc["t_over_seeds"]
    assert abs(t["rejection_rate"] - 0.05) < 3.5 * np.sqrt(0.05 * 0.95 / 4000)
    assert sim.loc["signflip_over_seeds", "rejection_rate"] == 0.0
    # one run: p < 0.05 when |u_1| > 1.96 * sqrt(0.1^2/... ) -- the run effect is not input noise
    se_input = 1.0 / np.sqrt(300)
    expected = 2 * sps.norm.sf(1.96 * se_input / np.sqrt(se_input ** 2 + 0.1 ** 2))
    assert sim.loc["paired_inputs_one_seed", "rejection_rate"] == pytest.approx(expected, abs=0.03)


def test_over_three_seeds_only_the_t_tests_can_find_a_planted_change_at_holms_level():
    """The sign-flip floor over 3 seeds is 2/8 two-sided, far above alpha / 720: it never rejects (power and FWER
    exactly 0); the moderated t borrows the cells' variances and finds more planted cells than the plain t."""
    out = simulate_moderated_level(seeds=3, cells=720, n_sim=4, effect=40.0, planted=72, rng_seed=1)
    out = out.set_index("method")
    assert out.loc["signflip", "power"] == 0 and out.loc["signflip", "fwer"] == 0
    assert out.loc["signflip", "level"] == pytest.approx(0.05 / 720)
    assert out.loc["moderated_t", "power"] > out.loc["t", "power"]
    assert np.isfinite(out["ratio"]).all()
