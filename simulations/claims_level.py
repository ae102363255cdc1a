"""Type I error of the claims' tests at the corrected level (docs/statistics.md, "Claims").

Reproduces the table of docs/statistics.md, section "Claims: every verdict a test":

    PYTHONPATH=src python -m simulations.claims_level     # about 1 CPU-minute

A run's claims are corrected together (Holm over the m claims whose test can reject); with m = 10 the
smallest claim p-value is compared with alpha / m = 0.005, so that is the level at which each test must hold.
Each family of claims is simulated on the boundary of its H0 (the configuration where a valid test rejects
most often), on a model of 6 layers x 12 heads, and the share of simulations whose claim p-value (both
directions where the claim has an opposite, as :func:`headstats.stats.claims.claim_p` combines them) is at most
0.05 and at most 0.005 is printed with its Monte Carlo standard error:

- heads, where they sit (``cls_early``, ``sep_middle_late``): k heads hold the role, a random subset of the
  72 (H0: layer labels exchangeable); exact permutation test of the layer labels (:func:`position_test`);
- heads, a share in two groups (``few_multi_role_late``, ``broad_first_layer``, ``sep_middle_layers``): every
  head holds the property with the same probability (H0: no difference between the last two layers and the
  others); Fisher's exact test (:func:`share_test`);
- heads, a share in a range (``local_syntactic``): each head both local and syntactic with probability 0.42,
  the range's edge (H0: share <= 0.42 or >= 0.88); two one-sided exact binomial tests (:func:`range_test`);
- heads, the largest kind (``delimiter_largest``): heads holding exactly one of two kinds split 50:50 (H0:
  P(b) = P(c)); exact binomial (McNemar) test;
- seeds (the four fine-tuning claims): k = 8 per-seed values, run effects normal (symmetric, H0 of the
  sign-flip test) and skewed (a centred exponential: mean 0 but not symmetric, outside the test's H0);
  exact sign-flip test over seeds (:func:`headstats.stats.seeds.signflip_test`).

The exact tests are conservative by construction (their p-values are valid at every level); the table shows by
how much at the corrected level, and what happens to the sign-flip test when the run effects are skewed.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
from scipy import stats as sps

from headstats.stats.claims import claim_p
from headstats.stats.exact import position_test, range_test, share_test
from headstats.stats.seeds import signflip_test

LAYERS = np.repeat(np.arange(6), 12)
LEVELS = (0.05, 0.005)


def _row(family: str, setting: str, p: np.ndarray) -> dict:
    p = np.asarray(p, dtype=float)
    row = {"family": family, "setting": setting, "n_sim": len(p)}
    for level in LEVELS:
        rate = float(np.mean(p <= level))
        row[f"rate_{level:g}"] = rate
        row[f"se_{level:g}"] = math.sqrt(max(rate, 1 / len(p)) * (1 - rate) / len(p))
    return row


def position_level(k: int, n_sim: int, rng: np.random.Generator) -> dict:
    p = []
    for _ in range(n_sim):
        held = np.zeros(len(LAYERS), bool)
        held[rng.choice(len(LAYERS), size=k, replace=False)] = True
        res = position_test(LAYERS, held)
        p.append(claim_p(res.p_lower, res.p_upper))
    return _row("heads: where they sit (layer permutation)", f"{k} of 72 heads, random", np.array(p))


def share_level(pi: float, n_sim: int, rng: np.random.Generator) -> dict:
    late = LAYERS >= 4
    p = []
    for _ in range(n_sim):
        has = rng.random(len(LAYERS)) < pi
        res = share_test(int(has[late].sum()), int(late.sum()), int(has[~late].sum()), int((~late).sum()))
        p.append(claim_p(res.p_less, res.p_greater))
    return _row("heads: a share in two groups (Fisher)", f"P(property) = {pi:g} in every layer", np.array(p))


def range_level(pi: float, n_sim: int, rng: np.random.Generator) -> dict:
    counts = rng.binomial(len(LAYERS), pi, size=n_sim)
    cache = {int(k): range_test(int(k), len(LAYERS), 0.42, 0.88).p_for for k in np.unique(counts)}
    return _row("heads: a share in 42-88 % (TOST, claimed direction)", f"share {pi:g} (edge of H0)",
                np.array([cache[int(k)] for k in counts]))


def largest_level(n_discordant: int, n_sim: int, rng: np.random.Generator) -> dict:
    b = rng.binomial(n_discordant, 0.5, size=n_sim)
    p_for = sps.binom.sf(b - 1, n_discordant, 0.5)
    p_against = sps.binom.cdf(b, n_discordant, 0.5)
    return _row("heads: the largest kind (McNemar binomial)", f"{n_discordant} discordant heads, 50:50",
                np.minimum(1, 2 * np.minimum(p_for, p_against)))


def signflip_level(k: int, shape: str, n_sim: int, rng: np.random.Generator) -> dict:
    if shape == "normal":
        values = rng.normal(size=(k, n_sim))
    else:
        values = rng.exponential(size=(k, n_sim)) - 1.0  # mean 0, skewness 2
    p = signflip_test(values, alternative="less")["p"]  # e.g. "delimiter heads are lost": H1 mean < 0
    return _row("seeds: sign-flip over seeds (one-sided)", f"{k} seeds, {shape} run effects, mean 0", p)


def main(n_sim: int = 2000, rng_seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(rng_seed)
    rows = [position_level(k, n_sim, rng) for k in (3, 12, 36)]
    rows += [share_level(pi, n_sim, rng) for pi in (0.1, 0.3)]
    rows += [range_level(0.42, 10 * n_sim, rng)]
    rows += [largest_level(n, 10 * n_sim, rng) for n in (10, 40)]
    rows += [signflip_level(8, shape, 10 * n_sim, rng) for shape in ("normal", "skewed")]
    rows += [signflip_level(12, shape, 10 * n_sim, rng) for shape in ("normal", "skewed")]
    return pd.DataFrame(rows)


if __name__ == "__main__":
    start = time.process_time()
    pd.set_option("display.width", 160)
    print(main().to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"\nCPU time {time.process_time() - start:.0f} s")
