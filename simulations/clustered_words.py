"""Type I error when words cluster in sentences: McNemar on words against the sentence-level tests.

Reproduces the table of docs/statistics.md, section "Words and mentions cluster in sentences":

    PYTHONPATH=src python -m simulations.clustered_words     # about 2 CPU-minutes

Two predictors equally accurate on average (H0), each with its own sentence effect on the logit of being
right (sd 0, 0.5, 1, 1.5); 100 sentences of 12 words, 1000 simulations, one-sided at alpha 0.05. See
simulations.clustered.simulate_clustered_level.
"""

from __future__ import annotations

import time

import pandas as pd

from simulations.clustered import simulate_clustered_level


def main(n_sim: int = 1000) -> pd.DataFrame:
    frames = [simulate_clustered_level(n_sentences=100, words=12, sd_sentence=sd, n_sim=n_sim, n_resamples=999,
                                       rng_seed=int(10 * sd)) for sd in (0.0, 0.5, 1.0, 1.5)]
    table = pd.concat(frames, ignore_index=True)
    return table.pivot(index="method", columns="sd_sentence", values="rejection_rate")


if __name__ == "__main__":
    start = time.process_time()
    print(main().to_string(float_format=lambda x: f"{x:.3f}"))
    print(f"\nCPU time {time.process_time() - start:.0f} s")
