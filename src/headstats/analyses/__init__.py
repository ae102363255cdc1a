"""Analyses: collectors registered by name, with what the study does after the pass and their report section.

Adding an analysis is one module of this package (or of your own code), its test, and its report section::

    from headstats.analyses import register_analysis

    register_analysis("distance", AttentionDistance, description="...")

and, in the layers above, its finish step and its report section, each by the reference of its function
(imported at first use)::

    # headstats/stats/__init__.py                                                      (optional)
    FINISH_STEPS.register_lazy("distance", "headstats.stats.mine:finish_distance")
    # headstats/report/sections/__init__.py                                            (optional)
    SECTIONS.register_lazy("distance", "headstats.report.sections.distance_section:distance_section")

A layer never names one above it, by import or by reference (``tests/test_layers.py`` reads both). Every
module of this package is imported the first time the registry is asked for a name, so nothing else
names it: no registry, runner, protocol or report edit. A protocol enables it with ``analyses: [distance]``;
the study runs its collector over every model and data set in the same forward passes as the role scores,
concatenates each of its ``tables()`` over models and data sets, then, in this order:

1. **declared hypotheses** (generic, for per-input measures): a collector whose ``result()`` is a
   :class:`~headstats.measures.MeasureArray` (a :class:`~headstats.engine.collector.PerInputCollector`) and
   that has a ``hypotheses()`` method (mappings ``name, measure, threshold, layers``) gets each hypothesis
   tested one-sided per head with the protocol's statistics, as the table ``<analysis>_tests``
   (:mod:`headstats.study.analysis_tests`);
2. **finish** (:attr:`AnalysisSpec.finish`, then :data:`headstats.stats.FINISH_STEPS`): ``finish(tables,
   statistics, options, seed) -> {name: frame}`` gets the analysis' tables (with ``<analysis>_tests`` if any)
   and returns the tables to add or replace, merged into them: the analysis' own steps (e.g. training probes)
   first, then the statistics layer's, the place for intervals, tests and corrections (registered there, as
   this layer may not name the one above it);
3. every table is written as ``<table>.csv``, and **report** (:data:`headstats.report.sections.SECTIONS`, or
   :attr:`AnalysisSpec.report`) adds the analysis' section to the report from the same tables.

Analyses defined outside the package are registered the same way, from Python, before the study runs; their
``finish`` and ``report`` may be given to :func:`register_analysis` as callables (or references).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from headstats.errors import ProtocolError
from headstats.registry import Registry

#: ``report(report, root, tables)``: add a section to a :class:`headstats.report.blocks.Report` from the analysis'
#: tables (name -> frame concatenated over models and data sets); figures go under ``root / "figures"``.
ReportSection = Callable[[Any, Path, Mapping[str, Any]], None]
#: ``finish(tables, statistics, options, seed) -> {name: frame}``: the tables to add to or replace in the
#: analysis' tables, from its tables, the study's statistics options (alpha, correction, confidence, ...),
#: the analysis' own options (an instance of its ``options`` model, or None) and the study's seed.
Finish = Callable[[Mapping[str, Any], Any, Any, int], Mapping[str, Any]]


@dataclass(frozen=True)
class AnalysisSpec:
    """A registered analysis.

    Attributes
    ----------
    name : str
        The name a protocol uses (``analyses: [name]``).
    collector : callable
        ``collector(context) -> Collector``; a :class:`~headstats.engine.collector.PairCollector` for
        analyses of two models.
    description : str
    report : callable or str, optional
        Its report section (see :data:`ReportSection`), or the ``"module:function"`` reference of one: a
        section that draws figures lives in the report layer (:mod:`headstats.report.sections`), which this
        layer may not import, so it is named and imported only when the report is built.
    selectable : bool
        Whether a protocol may name it in ``analyses:`` (built-ins that the study runs by itself are not).
    options : pydantic model class, optional
        The schema of the analysis' options (``analysis_options: {name: {...}}`` in a protocol), checked
        before any model loads; the collector reads them with :func:`analysis_options`.
    finish : callable or str, or a tuple of them, optional
        ``finish(tables, statistics, options, seed) -> {name: frame}`` (see :data:`Finish`), or its ``"module:function"``
        reference: run by the study on the analysis' tables concatenated over models and data sets (with its
        declared hypotheses' ``<analysis>_tests``) before they are written; the tables it returns are added to
        them, replacing those of the same name. The place for intervals, tests and corrections, which live in
        the statistics layer above this one.
    """

    name: str
    collector: Callable[..., Any]
    description: str = ""
    report: ReportSection | str | None = None
    selectable: bool = True
    options: Any = None
    finish: Finish | str | tuple | None = None

    def report_section(self) -> ReportSection | None:
        """The report section, imported if it was named by reference."""
        return resolve(self.report) if isinstance(self.report, str) else self.report

    def finished(self, tables: Mapping[str, Any], statistics: Any, options: Any, seed: int, *,
                 then: Finish | None = None) -> dict[str, Any]:
        """``tables`` with what :attr:`finish` returns added (replacing tables of the same name; a table it
        returns as None is dropped). A tuple of steps runs in order, each on the tables the previous left
        (e.g. the probes trained in the analysis' own module), and ``then`` last: the statistics layer's step,
        :data:`headstats.stats.FINISH_STEPS`, which the study passes (this layer may not import it)."""
        steps = self.finish if isinstance(self.finish, tuple) else (self.finish,)
        out = dict(tables)
        for step in (*steps, then):
            finish = resolve(step) if isinstance(step, str) else step
            if finish is not None:
                out.update(finish(out, statistics, options, seed))
        return {name: table for name, table in out.items() if table is not None}


def resolve(reference: str) -> Callable[..., Any]:
    """The object named by ``"package.module:attribute"``."""
    module, _, attribute = reference.partition(":")
    if not module or not attribute:
        raise ValueError(f"a reference is 'package.module:function', not {reference!r}")
    return getattr(importlib.import_module(module), attribute)


ANALYSES: Registry[AnalysisSpec] = Registry(
    "analysis", hint="add one with headstats.analyses.register_analysis or a module in headstats/analyses/"
)
_discovered = False


def register_analysis(name: str, collector: Callable[..., Any], *, description: str = "",
                      report: ReportSection | str | None = None, selectable: bool = True,
                      options: Any = None, finish: Finish | str | tuple | None = None,
                      overwrite: bool = False) -> AnalysisSpec:
    """Register an analysis under ``name`` (see :class:`AnalysisSpec`); returns its spec."""
    if not name.replace("_", "").isalnum():
        raise ValueError(f"analysis name {name!r} must be letters, digits and '_'")
    return ANALYSES.register(name, AnalysisSpec(name, collector, description, report, selectable, options, finish),
                             overwrite=overwrite)


def analysis_options(name: str, given: Any = None, schema: Any = None) -> Any:
    """The validated options of analysis ``name``: its registered ``options`` model built from ``given`` (a
    protocol's ``analysis_options[name]`` mapping, an instance of the model, or None for the defaults); None
    for an analysis without options.

    ``schema`` (the options model) skips the registry, whose first use imports every analysis module.
    """
    options = schema if schema is not None else get_analysis(name).options
    if options is None:
        return None
    if isinstance(given, options):
        return given
    try:
        return options.model_validate(dict(given or {}))
    except Exception as exc:  # pydantic.ValidationError: one line naming the key
        from pydantic import ValidationError

        if not isinstance(exc, ValidationError):
            raise
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ProtocolError(f"invalid analysis_options.{name}.{where}: {err['msg']}; see the analysis' options "
                            "in the README") from None


def collector_options(context: Any, schema: Any) -> Any:
    """A collector's own options (an instance of ``schema``): what the study put in the job
    (``context.options["options"]``), else built from the context's options that are fields of ``schema``
    (a collector built by hand, e.g. ``{"max_inputs": 5}``), else the defaults."""
    options = context.options
    given = options.get("options")
    if given is None:
        given = {k: v for k, v in options.items() if k in schema.model_fields}
    return analysis_options("", given, schema)


def _discover() -> None:
    """Import every module of this package once, so that each registers its analyses."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def get_analysis(name: str) -> AnalysisSpec:
    """The spec of a registered analysis; unknown names list the valid ones and suggest the nearest."""
    _discover()
    return ANALYSES.get(name)


def list_analyses(*, selectable: bool = True) -> list[str]:
    """Names of registered analyses (only those a protocol may name, unless ``selectable=False``)."""
    _discover()
    return [n for n, spec in ANALYSES.items() if spec.selectable or not selectable]


def check_analyses(names: list[str]) -> list[str]:
    """Refuse an unknown analysis name, or one that a protocol may not name; return the names."""
    _discover()
    for name in names:
        spec = ANALYSES.get(name)
        if not spec.selectable:
            raise ProtocolError(
                f"analysis {name!r} is run by the study itself and cannot be named in 'analyses'; choose among "
                f"{', '.join(list_analyses()) or 'none'}"
            )
    return names
