"""Error rate at nominal level of the tests of "fine-tuning moves this head", seeds as replicates.

Reproduces the table of docs/statistics.md, section "Seeds as replicates":

    PYTHONPATH=src python -m simulations.seeds_type1   # ~2-4 minutes on one core (MixedLM is slow)

Under H0 each simulated head has per-input changes d_si = u_s + e_si (run effect u_s ~ N(0, sd_seed^2),
input noise e_si ~ N(0, 1)), true mean change 0; see simulations.seed_tests.simulate_seed_type1.
"""

from __future__ import annotations

import pandas as pd

from simulations.seed_tests import simulate_seed_type1


def main() -> pd.DataFrame:
    frames = []
    for seeds in (3, 5):
        for sd_seed in (0.0, 0.1):
            frames.append(simulate_seed_type1(n_sim=4000, seeds=seeds, inputs=300, sd_seed=sd_seed, sd_input=1.0,
                                              alpha=0.05, mixed=True, mixed_sims=150, rng_seed=2026))
    table = pd.concat(frames, ignore_index=True)
    return table[["seeds", "sd_seed", "method", "n_sim", "rejection_rate", "mc_se"]]


if __name__ == "__main__":
    pd.set_option("display.width", 120)
    print(main().to_string(index=False, float_format=lambda x: f"{x:.3f}"))
