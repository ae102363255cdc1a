"""probes_beat_baselines: per attention probe the larger uncorrected p of the two baselines, then Holm over the
probes and the smallest adjusted p."""

import numpy as np
import pandas as pd

from headstats.analyses.probing.claims import probes_beat_baselines
from headstats.stats.claims import ClaimSettings


def probes(p: dict[str, tuple[float, float]]) -> pd.DataFrame:
    uas = {"right_branching": 0.26, "distance_and_words": 0.58, "attention_only": 0.61, "attention_and_words": 0.77}
    return pd.DataFrame([{"model": "m", "dataset": "d", "probe": name, "uas": uas[name], "n_words": 500,
                          "p_vs_right_branching": p.get(name, (np.nan, np.nan))[0],
                          "p_vs_distance_and_words": p.get(name, (np.nan, np.nan))[1]} for name in uas])


def test_a_probe_must_beat_both_baselines():
    [evidence] = probes_beat_baselines({"probes": probes({"attention_only": (0.001, 0.4),
                                                          "attention_and_words": (0.01, 0.02)})}, ClaimSettings())
    # attention_and_words: max(0.01, 0.02) < attention_only's max(0.001, 0.4); Holm over the 2 probes: 2 x 0.02
    assert evidence.p_for == 2 * 0.02
    assert np.isclose(evidence.estimate, 0.77 - 0.58) and "attention_and_words" in evidence.detail


def test_no_held_out_word_cannot_tell():
    [evidence] = probes_beat_baselines({"probes": probes({})}, ClaimSettings())
    assert evidence.reason == "no held-out word took part"
