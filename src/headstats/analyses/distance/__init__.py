"""Attended distance per head against uniform attention (Clark et al. 2019; Vig and Belinkov 2019).

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import TableSpec, register_analysis
from headstats.analyses.distance.options import DistanceOptions

register_analysis(
    "distance", "headstats.analyses.distance.collect:AttentionDistance",
    options=DistanceOptions,
    section="headstats.analyses.distance.section:distance_section",
    tables={
        "distance": TableSpec(
            "per head, the mean distance attended over (pieces), against the uniform reference",
            columns=("model", "dataset", "layer", "head", "n", "distance_mean", "distance_sd", "uniform_mean",
                     "locality_mean")),
        "distance_tests": TableSpec(
            "one row per head: the one-sided test of the attended distance",
            columns=("model", "dataset", "role", "layer", "head", "test", "n", "mean", "sd", "statistic", "p_unc",
                     "p_corr", "reject", "measure", "threshold")),
    },
    description="mean attention-weighted token distance per head against uniform attention, and the heads that attend "
                "locally (Clark et al. 2019; Vig and Belinkov 2019)",
)
