"""Attention mass on [CLS], [SEP] and other tokens per head, before and after fine-tuning (the comparison's).

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import TableSpec, register_analysis

register_analysis(
    "special_mass", "headstats.analyses.special_mass.collect:SpecialMass",
    selectable=False,
    tables={
        "special_mass": TableSpec("per layer, the mass on [CLS], [SEP] and punctuation before and after fine-tuning"),
    },
    description="attention mass on [CLS], [SEP] and other tokens per head (used by comparisons)",
)
