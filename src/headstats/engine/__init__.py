"""The engine: one forward pass per (model, batch) feeds every collector of a study.

``records -> encode -> batches -> forward (once per model and batch) -> BatchView -> collectors -> state -> tables``

- :mod:`headstats.engine.batch`: :class:`BatchView` (padded attention, masks, alignment, cached derived views);
- :mod:`headstats.engine.collector`: :class:`Collector`, :class:`PairCollector`, mergeable :class:`Moments`;
- :mod:`headstats.engine.runner`: :class:`Runner`, which loads each model once and passes every input through
  every model once.

Analyses (the collectors themselves) live in :mod:`headstats.analyses`.
"""

from headstats.engine.batch import BatchLayout, BatchView, forward_view, view_of
from headstats.engine.collector import Collector, Context, Moments, PairCollector
from headstats.engine.runner import Job, Runner, build_collector, feed, plan_groups

__all__ = ["BatchLayout", "BatchView", "Collector", "Context", "Job", "Moments", "PairCollector", "Runner", "build_collector", "feed",
           "forward_view", "plan_groups", "view_of"]
