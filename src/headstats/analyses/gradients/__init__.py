"""Gradient importance of attention (Clark et al. 2019, Figure 3): mean |dL/dA| per head and kind of token
attended to.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.gradients.options import GradientOptions
from headstats.analyses.gradients.tables import DECLARED

register_analysis(
    "gradients", "headstats.analyses.gradients.collect:GradientImportance",
    options=GradientOptions,
    section="headstats.analyses.gradients.section:gradients_section",
    fix="give a model with a masked-LM or classification head (e.g. one from `headstats finetune`), or leave "
        "`gradients` out of `analyses`",
    tables=DECLARED,
    description="gradient importance of attention to [CLS], [SEP], punctuation and other tokens (Clark et al. 2019, "
                "Figure 3); needs a classifier or masked-LM head",
)
