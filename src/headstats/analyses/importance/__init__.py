"""Head importance (Michel et al. 2019): the task's loss change when a head is ablated, the gradient
importance, a pruning curve, and their tests over seeds.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.importance.options import ImportanceOptions
from headstats.analyses.importance.tables import DECLARED

register_analysis(
    "importance", "headstats.analyses.importance.collect:ImportanceCollector",
    options=ImportanceOptions,
    finish="headstats.analyses.importance.finish:finish_importance",
    claims="headstats.analyses.importance.claims",
    section="headstats.analyses.importance.section:importance_section",
    requires=("gradients", "finetune_comparison"),
    needs=("ablation",),
    tables=DECLARED,
    description="head importance: the task's loss change when a head is mean- or zero-ablated, the gradient "
                "importance of Michel et al. 2019, a pruning curve; needs a classifier or masked-LM head (else the "
                "task-free cosine distance)",
)
