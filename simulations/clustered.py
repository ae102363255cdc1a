"""A simulation of the dependency analysis' tests (docs/statistics.md): the type I error of McNemar's test on words
and of the sentence-level tests when the words of a sentence share its difficulty. ``clustered_words.py``
prints the table of the docs from it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from headstats.stats.accuracy import cluster_bootstrap_interval, cluster_signflip_test, paired_exact_test
from headstats.stats.corrections import reject


def simulate_clustered_level(*, n_sentences: int = 100, words: int = 12, accuracy: float = 0.6, sd_sentence: float = 1.0,
                             n_sim: int = 1000, alpha: float = 0.05, n_resamples: int = 999, rng_seed: int = 0,
                             ) -> pd.DataFrame:
    r"""Type I error of the word-level McNemar test and the sentence-level tests when words cluster in sentences.

    Under H0 two predictors are equally accurate, but each gets whole sentences easier or harder: in sentence
    j predictor a is right on each word with probability :math:`\operatorname{expit}(\mu + u_j)` and b with
    :math:`\operatorname{expit}(\mu + v_j)`, :math:`u_j, v_j \sim N(0, \texttt{sd\_sentence}^2)` independent
    (``sd_sentence = 0``: independent words), ``mu`` set so the mean accuracy is about ``accuracy``. Each
    simulation draws ``n_sentences`` sentences of ``words`` words and tests "a is more accurate" one-sided with
    ``mcnemar_words`` (:func:`~headstats.stats.accuracy.paired_exact_test` on the discordant words) and ``signflip_sentences``
    (:func:`~headstats.stats.accuracy.cluster_signflip_test`); it also records whether the cluster bootstrap interval of the difference
    of accuracies (and the Wald interval that treats words as independent) covers 0 at ``1 - 2 alpha``.

    Returns
    -------
    DataFrame
        ``method, rejection_rate, mc_se`` (rejection rates at ``alpha``; for the intervals, the rate of
        intervals missing 0 on the side of a: comparable with alpha) with the design columns.
    """
    rng = np.random.default_rng(rng_seed)
    mu = np.log(accuracy / (1 - accuracy))
    rates = {"mcnemar_words": 0, "signflip_sentences": 0, "wald_words_interval": 0, "cluster_bootstrap_interval": 0}
    expit = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    for s in range(n_sim):
        u = rng.normal(0, sd_sentence, n_sentences)[:, None]
        v = rng.normal(0, sd_sentence, n_sentences)[:, None]
        a = rng.random((n_sentences, words)) < expit(mu + u)
        b = rng.random((n_sentences, words)) < expit(mu + v)
        only_a, only_b = int((a & ~b).sum()), int((b & ~a).sum())
        rates["mcnemar_words"] += bool(reject(paired_exact_test(only_a, only_b)[0], alpha))
        d = a.sum(1).astype(float) - b.sum(1)
        rates["signflip_sentences"] += bool(reject(cluster_signflip_test(d, n_resamples=n_resamples, seed=s), alpha))
        n_words = n_sentences * words
        diff = d.sum() / n_words
        wald_se = np.sqrt(((a.astype(float) - b).ravel().var(ddof=1)) / n_words)
        rates["wald_words_interval"] += diff - sps.norm.ppf(1 - alpha) * wald_se > 0
        low, _ = cluster_bootstrap_interval(d, np.full(n_sentences, words), confidence=1 - 2 * alpha,
                                            n_resamples=n_resamples, seed=s)
        rates["cluster_bootstrap_interval"] += low > 0
    rows = []
    for method, hits in rates.items():
        r = hits / n_sim
        rows.append({"method": method, "rejection_rate": r, "mc_se": float(np.sqrt(r * (1 - r) / n_sim)),
                     "alpha": alpha, "n_sim": n_sim, "n_sentences": n_sentences, "words": words,
                     "sd_sentence": sd_sentence})
    return pd.DataFrame(rows)
