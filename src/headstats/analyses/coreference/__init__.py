"""Coreference (Clark et al. 2019, section 4.3): antecedent selection accuracy of every head against the
nearest-mention and same-head-word baselines.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import TableSpec, register_analysis

register_analysis(
    "coreference", "headstats.analyses.coreference.collect:AntecedentSelection",
    finish="headstats.analyses.coreference.finish:finish_coreference",
    claims="headstats.analyses.coreference.claims",
    section="headstats.analyses.coreference.section:coreference_section",
    tables={
        "coreference": TableSpec(
            "antecedent selection: accuracy of every head per mention type, and of the baselines",
            columns=("model", "dataset", "mention_type", "predictor", "layer", "head", "n", "accuracy", "correct",
                     "ci_low", "ci_high")),
        "coreference_tests": TableSpec(
            "every head against each baseline (McNemar), corrected",
            columns=("model", "dataset", "mention_type", "baseline", "layer", "head", "n", "accuracy",
                     "baseline_accuracy", "test", "p_unc", "p_corr", "reject")),
        "coreference_notes": TableSpec(
            "per model and data set, the queries left out",
            columns=("model", "dataset", "queries_dropped")),
    },
    description="antecedent selection accuracy of every head against nearest-mention and same-head-word baselines "
                "(Clark et al. 2019)",
)
