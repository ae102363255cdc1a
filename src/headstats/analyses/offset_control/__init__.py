"""The offset-matched control of the syntactic sieves (METHODS 6.2): per head, arc role and input, the bias toward
an arc's other end minus the mean bias toward the words at the same word offset, tested one-sided (H0: mean
excess <= 0) with the protocol's statistics; and the claim that the syntactic heads track syntax beyond position.

Enable it with ``analyses: [offset_control]`` on parsed data. The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.offset_control.options import OffsetControlOptions
from headstats.analyses.offset_control.tables import DECLARED

register_analysis(
    "offset_control", "headstats.analyses.offset_control.collect:OffsetControl",
    options=OffsetControlOptions,
    claims="headstats.analyses.offset_control.claims",
    tables=DECLARED,
    description="offset-matched control of the syntactic roles: bias toward an arc's other end minus the bias at "
                "the same word offset, per head (METHODS 6.2; Clark et al.'s fixed-offset baseline per sentence)",
)
