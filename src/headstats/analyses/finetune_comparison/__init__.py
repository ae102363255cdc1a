"""The pretrained-vs-fine-tuned comparison (Pande et al. 2021, section 6; Kovaleva et al. 2019): per ``compare:`` entry
of a protocol, the paired per-head tests of the change in the role scores, the role transitions, the attention
similarity and [CLS]/[SEP] mass of every compared model, and, for a replicate group of fine-tuning seeds, the changes
tested against the variation between seeds with Pande et al.'s claims over seeds.

Turned on by the protocol's ``compare:`` section (not by ``analyses:``); its options are that section's entries
(:class:`~headstats.analyses.finetune_comparison.options.CompareSpec`). The package's files: see
:mod:`headstats.analyses` (its ``finish`` is a subpackage: the per-input changes, the seed replicates, the seed
claims' evidence).
"""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.finetune_comparison.options import CompareSpec
from headstats.analyses.finetune_comparison.tables import DECLARED, OWNER, READS

register_analysis(
    OWNER, "headstats.analyses.finetune_comparison.collect:SpecialMass",
    selectable=False, protocol_field="compare", options=CompareSpec,
    plan="headstats.analyses.finetune_comparison.collect:comparison_jobs",
    finish="headstats.analyses.finetune_comparison.finish:finish_comparisons",
    claims="headstats.analyses.finetune_comparison.claims",
    section="headstats.analyses.finetune_comparison.section:comparison_section",
    answer="headstats.analyses.finetune_comparison.section:seeds_answer_section",
    tables=DECLARED, reads=READS,
    description="pretrained against fine-tuned models, head by head (Pande et al. 2021; Kovaleva et al. 2019)",
)
