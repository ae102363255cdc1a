"""Cosine similarity of two models' attention maps per head (Kovaleva et al. 2019; the comparison's).

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import TableSpec, register_analysis

register_analysis(
    "similarity", "headstats.analyses.similarity.collect:AttentionSimilarity",
    selectable=False,
    tables={
        "similarity": TableSpec("per head, the similarity of its attention before and after fine-tuning"),
    },
    description="cosine similarity of two models' attention maps per head (Kovaleva et al. 2019)",
)
