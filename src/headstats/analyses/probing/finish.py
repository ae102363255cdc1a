"""The probing analysis' finish step: the UAS of each probe with its interval, and the tests of the attention probes
against the baselines (Clark et al. 2019, section 5; METHODS 2.3), words clustered by sentence
(:mod:`headstats.stats.accuracy`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.analyses.probing.options import ProbingOptions
from headstats.analyses.probing.tables import PROBES_TABLE
from headstats.stats.accuracy import counted_only, paired_exact_test, proportion_interval
from headstats.stats.corrections import correct_within_families, family_labels
from headstats.stats.options import TestOptions
from headstats.tables import RunTables


def finish_probes(tables: RunTables, statistics: TestOptions, options: ProbingOptions | None = None,
                  seed: int = 0) -> dict[str, pd.DataFrame]:
    """The study's ``finish`` step of the ``probing`` analysis: Wilson intervals of each UAS, and McNemar's exact
    one-sided test of each probe against each baseline on the same held-out words (``p_vs_<baseline>``,
    uncorrected: a handful of planned comparisons; ``p_corr_vs_<baseline>`` Holm-corrected over the probes of
    one model and data set with the ``statistics``' correction), on the data sets with parsed held-out words.
    Returns the table to replace (``probes``)."""
    st = statistics
    out: dict[str, pd.DataFrame] = {}
    probes = counted_only(tables[PROBES_TABLE], "n_words").copy()
    probes["ci_low"], probes["ci_high"] = proportion_interval(probes["correct"], probes["n_words"],
                                                              confidence=st.confidence)
    for base in ("right_branching", "distance_and_words"):
        p = paired_exact_test(probes[f"only_vs_{base}"], probes[f"{base}_only"]).astype(float)
        p[(probes["probe"] == base).to_numpy()] = np.nan
        probes[f"p_vs_{base}"] = p
        labels = family_labels(probes, ["model", "dataset"])
        probes[f"p_corr_vs_{base}"], _ = correct_within_families(p, labels, correction=st.correction, alpha=st.alpha)
    probes["correction"], probes["alpha"] = st.correction, st.alpha
    out[PROBES_TABLE.name] = probes
    return out
