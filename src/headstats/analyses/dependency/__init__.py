"""Dependency heads (Clark et al. 2019, section 4.2, Table 1): the accuracy of every head at finding each
word's dependency head, against fixed offsets.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import TableSpec, register_analysis
from headstats.analyses.dependency.options import DependencyOptions

register_analysis(
    "dependency", "headstats.analyses.dependency.collect:DependencyAccuracy",
    options=DependencyOptions,
    finish="headstats.analyses.dependency.finish:finish_dependency",
    claims="headstats.analyses.dependency.claims",
    section="headstats.analyses.dependency.section:dependency_section",
    tables={
        "dependency_table": TableSpec(
            "Table 1 of Clark et al.: per relation the best head and the best offset, with the test",
            columns=("model", "dataset", "relation", "n", "layer", "head", "direction", "accuracy", "offset",
                     "offset_accuracy", "p_unc", "p_corr", "reject")),
        "dependency_heads": TableSpec(
            "accuracy of every head, direction and relation (the rows Table 1 chooses from)",
            columns=("model", "dataset", "relation", "layer", "head", "direction", "n", "accuracy", "correct",
                     "ci_low", "ci_high")),
        "dependency_counts": TableSpec(
            "per head, relation and half of the inputs, the counts Table 1 is computed from",
            columns=("model", "dataset", "relation", "layer", "head", "direction", "offset")),
        "dependency_notes": TableSpec(
            "per model and data set, the words left out, counted by reason",
            columns=("model", "dataset")),
    },
    description="accuracy of every head at finding each word's dependency head, against fixed offsets (Clark et al. "
                "2019, Table 1)",
)
