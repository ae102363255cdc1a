"""Head importance (Michel et al. 2019): the task's loss change when a head is ablated, the gradient
importance, a pruning curve, and their tests over seeds.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import TableSpec, register_analysis
from headstats.analyses.importance.options import ImportanceOptions

register_analysis(
    "importance", "headstats.analyses.importance.collect:ImportanceCollector",
    options=ImportanceOptions,
    finish="headstats.analyses.importance.finish:finish_importance",
    claims="headstats.analyses.importance.claims",
    section="headstats.analyses.importance.section:importance_section",
    requires=("gradients",),
    needs=("ablation",),
    tables={
        "importance_tests": TableSpec(
            "one row per head: the one-sided test of its declared hypothesis (mean loss change > 0), "
            "corrected",
            columns=("model", "dataset", "role", "layer", "head", "test", "n", "mean", "sd", "statistic", "p_unc",
                     "p_corr", "reject", "measure", "threshold")),
        "importance": TableSpec(
            "per head, its importance by each measure (ablation, gradient, cosine distance)",
            columns=("model", "dataset", "task", "ablation", "importance_measure", "n", "layer", "head", "importance")),
        "importance_notes": TableSpec(
            "per model and data set, whether it ran task-free or was skipped, with the reason",
            columns=("model", "dataset", "status", "reason")),
        "importance_pruning_inputs": TableSpec(
            "per input and share of heads removed, the task metric (the pruning curve's inputs)"),
        "importance_seeds": TableSpec("per head, its importance over fine-tuning seeds, with the test"),
        "importance_pruning": TableSpec(
            "the pruning curve: the task metric per share of heads removed, with intervals"),
        "importance_removable": TableSpec("the share of heads removable within the tolerance, with its interval"),
    },
    description="head importance: the task's loss change when a head is mean- or zero-ablated, the gradient "
                "importance of Michel et al. 2019, a pruning curve; needs a classifier or masked-LM head (else the "
                "task-free cosine distance)",
)
