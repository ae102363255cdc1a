"""simulations.clustered: words that share their sentence's difficulty, and the tests that hold or lose their level."""

from __future__ import annotations

import numpy as np

from simulations.clustered import simulate_clustered_level


def test_words_clustered_in_sentences_make_mcnemar_anti_conservative_not_the_sentence_test():
    """METHODS 5.3 on simulated data: under H0 with sentence effects (sd 1.5 on the logit), McNemar on words
    rejects far above alpha, the sign-flip test over sentences near it; with independent words both hold."""
    out = simulate_clustered_level(n_sentences=60, words=12, sd_sentence=1.5, n_sim=200, n_resamples=199,
                                   rng_seed=3).set_index("method")["rejection_rate"]
    assert out["mcnemar_words"] > 0.12 and out["wald_words_interval"] > 0.12
    assert out["signflip_sentences"] < 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200)
    assert out["cluster_bootstrap_interval"] < 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200) + 0.02
    flat = simulate_clustered_level(n_sentences=60, words=12, sd_sentence=0.0, n_sim=200, n_resamples=199,
                                    rng_seed=4).set_index("method")["rejection_rate"]
    assert flat["mcnemar_words"] < 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200)
