"""Level and power of the tests over seeds at the corrected level: plain t, moderated t, sign-flip.

Reproduces the tables of docs/statistics.md, section "Seeds as replicates" (the moderated t):

    PYTHONPATH=src python -m simulations.moderated_t     # about 4 CPU-minutes (0.2 CPU-s per simulation)

720 head x role cells (a 6 x 12 model, 10 roles), k = 3, 5, 10 seeds; the cells' true seed-to-seed
variances follow limma's prior (scaled inverse chi-square, d0 = 4); run effects normal or skewed (a centred
exponential, skewness 2). Level: all cells null; the rate of p <= 0.05 / 720 among null cells against that
level, and the family-wise error of Holm. Power: 72 cells moved by 2 (and 4) run-to-run sds, the share Holm
finds. See simulations.seed_tests.simulate_moderated_level.
"""

from __future__ import annotations

import time

import pandas as pd

from simulations.seed_tests import simulate_moderated_level


def main(n_level: int = 150, n_power: int = 50) -> tuple[pd.DataFrame, pd.DataFrame]:
    level = pd.concat([simulate_moderated_level(seeds=k, n_sim=n_level, run_effect=shape, rng_seed=10 * k + i)
                       for k in (3, 5, 10) for i, shape in enumerate(("normal", "skewed"))], ignore_index=True)
    power = pd.concat([simulate_moderated_level(seeds=k, n_sim=n_power, effect=effect, planted=72,
                                                rng_seed=100 + k)
                       for k in (3, 5, 10) for effect in (2.0, 4.0)], ignore_index=True)
    return (level[["seeds", "run_effect", "method", "n_sim", "rate_at_level", "ratio", "fwer"]],
            power[["seeds", "effect", "method", "n_sim", "power", "fwer"]])


if __name__ == "__main__":
    start = time.process_time()
    level, power = main()
    pd.set_option("display.width", 120)
    print(level.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    print()
    print(power.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    print(f"\nCPU time {time.process_time() - start:.0f} s")
