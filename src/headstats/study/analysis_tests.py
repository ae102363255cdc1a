"""What the study does with an analysis' tables after the pass: declared hypotheses, then the analysis' ``finish``.

The one mechanism is the analysis' registry entry (:mod:`headstats.analyses`), applied to the tables of each
analysis concatenated over models and data sets, in this order:

1. **Declared hypotheses about per-input measures** (generic, no code of the analysis' own): a collector
   with a ``hypotheses()`` method (mappings ``name, measure, threshold, layers``) whose ``result()`` is a
   :class:`~headstats.measures.MeasureArray` has each hypothesis tested one-sided per head with the
   protocol's statistics (test, correction over the declared family, alpha, power:
   :func:`headstats.stats.hypotheses.test_measures`), added as the table ``<analysis>_tests``.
2. **The analysis' finish step** (``register_analysis(..., finish=...)``): ``finish(tables, statistics,
   options, seed)`` (the study's statistics options, the analysis' own options, the seed) returns the tables to add or replace, merged into the analysis' tables.

The result is what is written (``<table>.csv``) and what the analysis' report section receives.
"""

from __future__ import annotations

from collections.abc import Callable

from typing import Mapping

import pandas as pd

from headstats.measures import MeasureArray


def hypothesis_tests(jobs, protocol) -> dict[str, pd.DataFrame]:
    """``<analysis>_tests`` per analysis whose collectors declare hypotheses (see the module docstring)."""
    from headstats.stats.options import statistics_kwargs
    from headstats.stats.hypotheses import test_measures

    arrays: dict[str, list[MeasureArray]] = {}
    declared: dict[str, list] = {}
    for job in jobs:
        collector = job.collector
        if collector is None or not callable(getattr(collector, "hypotheses", None)):
            continue
        result = collector.result()
        if not isinstance(result, MeasureArray):
            continue
        arrays.setdefault(job.name, []).append(result)
        declared.setdefault(job.name, collector.hypotheses())
    kwargs = statistics_kwargs(protocol.statistics, protocol.seed)
    return {name: test_measures(arrays[name], declared[name], **kwargs) for name in arrays if declared[name]}


def finish_analyses(jobs, tables: Mapping[str, Mapping[str, pd.DataFrame]], protocol, *,
                    log: Callable[[str], None] = lambda message: None) -> dict[str, dict[str, pd.DataFrame]]:
    """Every analysis' tables with its hypothesis tests and its ``finish`` step's tables (module docstring);
    ``log`` says when each finish step starts and how long it took."""
    import time

    from headstats.analyses import get_analysis

    out = {name: dict(per) for name, per in tables.items()}
    for name, frame in hypothesis_tests(jobs, protocol).items():
        out.setdefault(name, {})[f"{name}_tests"] = frame
    finished = {}
    for name, per in out.items():
        if get_analysis(name).reads:  # it reads the study's tables: finished once they exist (finish_study)
            finished[name] = per
            continue
        log(f"finishing {name}: its tests and tables")
        clock = time.perf_counter()
        finished[name] = get_analysis(name).finished(per, protocol.statistics, protocol.options_of(name),
                                                     protocol.seed, log=log)
        log(f"finished {name} in {time.perf_counter() - clock:.1f} s")
    return finished
