"""Attended distance per head against uniform attention (Clark et al. 2019; Vig and Belinkov 2019).

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.distance.options import DistanceOptions
from headstats.analyses.distance.tables import DECLARED

register_analysis(
    "distance", "headstats.analyses.distance.collect:AttentionDistance",
    options=DistanceOptions,
    section="headstats.analyses.distance.section:distance_section",
    tables=DECLARED,
    description="mean attention-weighted token distance per head against uniform attention, and the heads that attend "
                "locally (Clark et al. 2019; Vig and Belinkov 2019)",
)
