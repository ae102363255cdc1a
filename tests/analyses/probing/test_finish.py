"""finish_probes: Wilson intervals of each UAS and McNemar's exact test of each probe against each baseline."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
from scipy.stats import binomtest
from statsmodels.stats.proportion import proportion_confint

from headstats.analyses.probing.finish import finish_probes
from headstats.tables import RunTables

STATISTICS = SimpleNamespace(confidence=0.95, correction="holm", alpha=0.05)


def probes() -> pd.DataFrame:
    rows = []
    for probe, correct, only in [("right_branching", 130, (0, 0)), ("distance_and_words", 290, (0, 0)),
                                 ("attention_only", 305, (120, 20)), ("attention_and_words", 385, (260, 40))]:
        rows.append({"model": "m", "dataset": "d", "probe": probe, "n_words": 500, "correct": correct,
                     "only_vs_right_branching": only[0], "right_branching_only": only[1] // 2,
                     "only_vs_distance_and_words": only[1], "distance_and_words_only": only[1] // 4})
    rows.append({**rows[-1], "dataset": "nothing", "n_words": 0, "correct": 0})  # no parsed held-out word
    return pd.DataFrame(rows)


def test_intervals_and_tests_match_statsmodels_and_scipy_and_holm_over_the_probes():
    out = finish_probes(RunTables({"probes": probes()}), STATISTICS)["probes"]
    assert out["dataset"].tolist() == ["d"] * 4  # the data set with nothing counted is left out, not given p = 1
    low, high = proportion_confint(out["correct"], out["n_words"], alpha=0.05, method="wilson")
    assert np.allclose(out["ci_low"], low) and np.allclose(out["ci_high"], high)
    row = out.set_index("probe").loc["attention_only"]
    b, c = row["only_vs_right_branching"], row["right_branching_only"]
    assert np.isclose(row["p_vs_right_branching"], binomtest(b, b + c, 0.5, alternative="greater").pvalue)
    assert np.isnan(out.set_index("probe").loc["right_branching", "p_vs_right_branching"])  # not against itself
    p = out["p_vs_distance_and_words"].dropna().sort_values().to_numpy()
    holm = np.minimum(1, np.maximum.accumulate(p * np.arange(len(p), 0, -1)))
    assert np.allclose(np.sort(out["p_corr_vs_distance_and_words"].dropna()), holm)
