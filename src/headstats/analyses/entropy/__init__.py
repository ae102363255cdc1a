"""Attention entropy per head (Clark et al. 2019, section 3.3): a running mean and spread.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import TableSpec, register_analysis

register_analysis(
    "entropy", "headstats.analyses.entropy.collect:AttentionEntropy",
    section="headstats.analyses.entropy.section:entropy_section",
    tables={
        "entropy": TableSpec(
            "per head, the mean row entropy of attention and its ratio to ln n",
            columns=("model", "dataset", "layer", "head", "n", "entropy", "entropy_sd", "entropy_cls",
                     "entropy_cls_sd", "entropy_uniform")),
    },
    description="mean attention entropy per head, with the uniform reference (Clark et al. 2019)",
)
