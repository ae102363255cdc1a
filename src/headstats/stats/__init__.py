"""Statistics: tables in, tables out. Never imports torch, matplotlib or rich.

:data:`FINISH_STEPS` holds the statistics layer's finish step of each analysis that has one (intervals, tests
and corrections over the analysis' tables, run by the study after the pass). The analyses sit below this layer
and never name it; each step is registered here, lazily, as the reference of its function, so importing
``headstats.stats`` imports none of them.
"""

from __future__ import annotations

from headstats.registry import Registry

#: ``finish(tables, protocol) -> {name: frame}`` of an analysis, by the analysis' name.
FINISH_STEPS: Registry = Registry("finish step", hint="register one with FINISH_STEPS.register(analysis, function)")
FINISH_STEPS.register_lazy("dependency", "headstats.stats.accuracy:finish_dependency")
FINISH_STEPS.register_lazy("coreference", "headstats.stats.accuracy:finish_coreference")
FINISH_STEPS.register_lazy("probing", "headstats.stats.accuracy:finish_probes")
FINISH_STEPS.register_lazy("clustering", "headstats.stats.grouping:finish_clustering")
FINISH_STEPS.register_lazy("importance", "headstats.stats.head_importance:finish_importance")

__all__ = ["FINISH_STEPS"]
