"""Analyses: each a package ``headstats/analyses/<name>/`` with fixed file roles, registered by name.

The registry (this module) is the one list of analyses: the study runs, finishes and writes each analysis, and the
report draws its section, only through its :class:`AnalysisSpec`; no other folder names an analysis
(``tests/test_layers.py``). A package's files, always the same roles:

========================  ============================================================================================
``__init__.py``           the spec: ``register_analysis(name, collector=..., options=..., finish=..., claims=...,
                          section=..., tables=DECLARED)``, each part named by the ``"module:attribute"`` reference
                          of a file of its own package (imported at first use), the options class and the tables
                          imported
``tables.py``             its tables, declared once (``DECLARED = declare_tables(name, {table: TableSpec(...)})``,
                          one constant per table: ``DEPENDENCY_TABLE``); the package's other files name a table by
                          its spec (``tables[DEPENDENCY_TABLE]``, ``register_claim(...,
                          tables=(DEPENDENCY_TABLE,))``, ``{DEPENDENCY_TABLE.name: frame}``), never by a string
                          (imports only :mod:`headstats.tables`)
``options.py``            its options (pydantic, no torch): the protocol's ``analysis_options: {name: {...}}``
``collect.py``            the collector (``update(view)``, ``merge(states)``, ``tables()``), torch allowed
``finish.py``             tables in, tables out after the pass: intervals, tests, corrections (no torch, no
                          matplotlib)
``claims.py``             its registered claims (:func:`headstats.stats.claims.register_claim`; no torch, no
                          matplotlib)
``figures.py``            its figures (matplotlib, :mod:`headstats.plots.style`; no statistics)
``section.py``            its report section, ``section(report, root, tables)``, from its tables (a
                          :class:`~headstats.tables.RunTables`, indexed by a table's spec)
========================  ============================================================================================

An analysis uses another's code only when its spec declares it (``requires=("surface",)``). Adding one::

    # headstats/analyses/distance/tables.py
    from headstats.tables import TableSpec, declare_tables

    DECLARED = declare_tables("distance", {
        "distance": TableSpec("per head, the mean distance attended over", columns=(...)),
        "distance_tests": TableSpec("one row per head: the one-sided test of the attended distance", ...)})
    DISTANCE, DISTANCE_TESTS = DECLARED.values()

    # headstats/analyses/distance/__init__.py
    from headstats.analyses import register_analysis
    from headstats.analyses.distance.options import DistanceOptions
    from headstats.analyses.distance.tables import DECLARED

    register_analysis(
        "distance", "headstats.analyses.distance.collect:AttentionDistance", options=DistanceOptions,
        section="headstats.analyses.distance.section:distance_section", tables=DECLARED, description="...")

    # headstats/analyses/distance/section.py reads them by their specs: tables[DISTANCE], tables.get(DISTANCE_TESTS)

Every package of this folder is imported the first time the registry is asked for a name. A protocol enables
it with ``analyses: [distance]``; the study runs its collector over every model and data set in the same forward
passes as the role scores, concatenates each of its ``tables()`` over models and data sets, then:

1. **declared hypotheses** (generic, for per-input measures): a collector whose ``result()`` is a
   :class:`~headstats.measures.MeasureArray` (a :class:`~headstats.engine.collector.PerInputCollector`) and
   that has a ``hypotheses()`` method (mappings ``name, measure, threshold, layers``) gets each hypothesis
   tested one-sided per head with the protocol's statistics, as the table ``<analysis>_tests``
   (:mod:`headstats.study.analysis_tests`);
2. **finish** (:attr:`AnalysisSpec.finish`): ``finish(tables, statistics, options, seed) -> {name: frame}`` gets
   the analysis' tables (with ``<analysis>_tests`` if any) and returns the tables to add or replace; a step that
   declares ``log``, ``jobs`` (its planned jobs, to test their per-input results), ``report`` (the report options)
   or ``warn`` (a warning for the manifest) gets it (:meth:`AnalysisSpec.finished`);
3. every table is written as ``<table>.csv``; its **claims** are tested with every registered claim
   (``claims.csv``), and its **section** is added to the report from the same tables.

Analyses defined outside the package are registered the same way, from Python, before the study runs; each
part may be given as a callable instead of a reference (:func:`headstats.testing.check_analysis` checks one).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from headstats.errors import ProtocolError
from headstats.registry import Registry
from headstats.tables import RunTables, TableSpec, declare_tables

#: ``part(report, root, tables, context)``: a part of the report an analysis places in one of the builder's named
#: slots (``section={"summary": ..., "results": ..., "closing": ...}``), for an analysis whose report is interleaved
#: with the report's own sections: ``summary`` after the claims (and the analyses that lead), ``results`` after the
#: methods and inputs, ``closing`` after the statistics. ``tables`` are the run's tables, ``context`` the builder's
#: :class:`~headstats.report.builder.SlotContext`.
ReportSlot = Callable[..., None]
#: ``section(report, root, tables)``: add a section to a :class:`headstats.report.blocks.Report` from the analysis'
#: tables (a :class:`~headstats.tables.RunTables`, each frame concatenated over models and data sets, indexed by a
#: declared spec or its name; with the run's ``claims``); figures go under ``root / "figures"``.
ReportSection = Callable[[Any, Path, Mapping[str, Any]], None]
#: ``finish(tables, statistics, options, seed) -> {name: frame}``: the tables to add to or replace in the
#: analysis' tables (by name: ``{DEPENDENCY_TABLE.name: frame}``), from its tables (a
#: :class:`~headstats.tables.RunTables`, indexed by a declared spec), the study's statistics options (alpha,
#: correction, confidence, ...),
#: the analysis' own options (an instance of its ``options`` model, or None) and the study's seed.
Finish = Callable[[Mapping[str, Any], Any, Any, int], Mapping[str, Any]]


@dataclass(frozen=True)
class AnalysisSpec:
    """A registered analysis: its package's parts (see the module docstring).

    Attributes
    ----------
    name : str
        The name a protocol uses (``analyses: [name]``).
    collector : callable or str
        ``collector(context) -> Collector`` (a :class:`~headstats.engine.collector.PairCollector` for analyses of
        two models), or the ``"module:attribute"`` reference of its class in ``collect.py``.
    description : str
    section : callable or str, or a mapping of slot -> callable or str, optional
        Its report section (see :data:`ReportSection`), or the reference of one in ``section.py``; or the parts it
        places in the report's named slots (``{"summary": ..., "results": ..., "closing": ...}``, see
        :data:`ReportSlot`), for an analysis whose report is interleaved with the report's own sections.
    selectable : bool
        Whether a protocol may name it in ``analyses:`` (built-ins that the study runs by itself are not).
    options : pydantic model class, optional
        The schema of the analysis' options (``analysis_options: {name: {...}}`` in a protocol), from
        ``options.py``, checked before any model loads; the collector reads them with :func:`collector_options`.
    finish : callable or str, or a tuple of them, optional
        ``finish(tables, statistics, options, seed) -> {name: frame}`` (see :data:`Finish`), or its reference:
        run by the study on the analysis' tables concatenated over models and data sets (with its declared
        hypotheses' ``<analysis>_tests``) before they are written; the tables it returns are added to them,
        replacing those of the same name. A tuple runs in order (e.g. probing: train the probes, then test them).
    claims : str, optional
        The module (``"headstats.analyses.<name>.claims"``) whose import registers the analysis' claims.
    tables : mapping of str to TableSpec
        The tables it writes, with their descriptions and schemas (declared in its package's ``tables.py`` and
        in :data:`headstats.tables.TABLES`, which :class:`~headstats.tables.RunTables` reads).
    requires : tuple of str
        The analyses whose code this one uses (a declared dependency; ``tests/test_layers.py`` checks that a
        package imports no other undeclared).
    needs : tuple of str
        What it needs of the models, checked before any model loads: ``"ablation"`` (heads ablated one by one;
        a model that shares one attention module across its layers is refused).
    fix : str
        How to make it run where it was skipped (its ``<name>_skipped`` table), for the report's **Not run** lines.
    protocol_field : str, optional
        For an analysis that a protocol turns on by a section of its own rather than by ``analyses:`` (not
        selectable): that top-level protocol field, whose value is the analysis' options; the analysis runs
        whenever the field is not empty (:meth:`headstats.config.protocol.Protocol.enabled_analyses`).
    plan : callable or str, optional
        ``plan(options, context) -> list of engine Jobs`` (or the reference of one in its ``collect.py``), for an
        analysis whose jobs are not one per model and data set (one per compared pair for a pair collector);
        ``context`` is a :class:`PlanContext`.
    reads : tuple of TableSpec
        The study's own tables (:mod:`headstats.tables.study_tables`: the role table, the scores, the models) that
        its finish step and its sections read besides its own: the study adds each to the analysis' tables under
        its name (``tables["roles"]``) and finishes such an analysis once the study's tables exist; what it
        reads is not written as its own.
    answer : callable or str, optional
        A second report section, drawn right after the run's claims (the answer to the analysis' question, before
        the detail of its :attr:`section`); same signature as :attr:`section`.
    """

    name: str
    collector: Callable[..., Any] | str
    description: str = ""
    section: ReportSection | str | None = None
    selectable: bool = True
    options: Any = None
    finish: Finish | str | tuple | None = None
    claims: str | None = None
    tables: Mapping[str, TableSpec] = field(default_factory=dict)
    requires: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    fix: str = ""
    protocol_field: str | None = None
    plan: Callable[..., Any] | str | None = None
    reads: tuple[TableSpec, ...] = ()
    answer: ReportSection | str | None = None

    def collector_class(self) -> Callable[..., Any]:
        """The collector, imported if it was named by reference."""
        return _load(self.collector)

    def section_function(self) -> ReportSection | None:
        """The report section, imported if it was named by reference (None for parts placed in the report's
        slots, :meth:`slot_function`)."""
        return None if isinstance(self.section, Mapping) else _load(self.section)

    def slot_function(self, slot: str) -> ReportSlot | None:
        """The part of the report this analysis places in the builder's slot ``slot`` (``summary``, ``results``,
        ``closing``: :data:`ReportSlot`), when its ``section`` is such a mapping; else None."""
        return _load(self.section.get(slot)) if isinstance(self.section, Mapping) else None

    def answer_function(self) -> ReportSection | None:
        """The report section drawn after the claims (:attr:`answer`), imported if it was named by reference."""
        return _load(self.answer)

    def plan_function(self) -> Callable[..., Any] | None:
        """The analysis' own planner (:attr:`plan`), imported if it was named by reference; None for the default."""
        return _load(self.plan)

    def load_claims(self) -> None:
        """Import the module that registers the analysis' claims (no-op without one)."""
        if self.claims:
            importlib.import_module(self.claims)

    def describe(self, table: str) -> str:
        """What the table ``table`` holds, in one line (its declared description, else a generic one)."""
        spec = self.tables.get(table)
        return spec.description if spec is not None else f"a table of the {self.name} analysis ({self.description})"

    def finished(self, tables: Mapping[str, Any], statistics: Any, options: Any, seed: int, *,
                 log: Callable[[str], None] | None = None, **context: Any) -> dict[str, Any]:
        """``tables`` with what :attr:`finish` returns added (replacing tables of the same name; a table it
        returns as None is dropped). A tuple of steps runs in order, each on the tables the previous left. A step
        with a ``log`` parameter gets ``log``, to say how a long step is going (a permutation test per data set).

        ``context``: what else the study may hand a step, each to a step that declares a parameter of that name:
        ``jobs`` (the analysis' planned jobs, whose collectors hold per-input results, for a step that tests them
        rather than tables), ``report`` (the protocol's report options, e.g. ``top_k``) and ``warn`` (records a
        warning in the manifest's ``warnings`` and the log)."""
        import inspect

        steps = self.finish if isinstance(self.finish, tuple) else (self.finish,)
        out = dict(tables)
        given = {"log": log, **context}
        for step in steps:
            finish = _load(step)
            if finish is not None:
                wanted = inspect.signature(finish).parameters
                extra = {name: value for name, value in given.items() if value is not None and name in wanted}
                out.update(finish(RunTables(out, owner=self.name), statistics, options, seed, **extra))
        return {name: table for name, table in out.items() if table is not None}


@dataclass(frozen=True)
class PlanContext:
    """What an analysis' planner (:attr:`AnalysisSpec.plan`) knows of the study besides its own options.

    Attributes
    ----------
    models : tuple of str
        The study's models, in protocol order.
    datasets : tuple of str
        The study's data sets, in protocol order.
    measure : mapping
        What every job adds to its options for the scoring's primary attention measure.
    seed : int
        The study's seed.
    extra : mapping
        Study facts an analysis reads (documented by the analysis that reads them), e.g. per data set the roles
        scored on it.
    """

    models: tuple[str, ...]
    datasets: tuple[str, ...]
    measure: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)


def _load(part: Any) -> Any:
    return resolve(part) if isinstance(part, str) else part


def resolve(reference: str) -> Callable[..., Any]:
    """The object named by ``"package.module:attribute"``."""
    module, _, attribute = reference.partition(":")
    if not module or not attribute:
        raise ValueError(f"a reference is 'package.module:function', not {reference!r}")
    return getattr(importlib.import_module(module), attribute)


ANALYSES: Registry[AnalysisSpec] = Registry(
    "analysis", hint="add one with headstats.analyses.register_analysis or a package in headstats/analyses/"
)
_discovered = False


def register_analysis(name: str, collector: Callable[..., Any] | str, *, description: str = "",
                      section: ReportSection | str | None = None, selectable: bool = True, options: Any = None,
                      finish: Finish | str | tuple | None = None, claims: str | None = None,
                      tables: Mapping[str, TableSpec | str] | None = None, requires: tuple[str, ...] = (),
                      needs: tuple[str, ...] = (), fix: str = "", protocol_field: str | None = None,
                      plan: Callable[..., Any] | str | None = None, reads: tuple[TableSpec, ...] = (),
                      answer: ReportSection | str | None = None, overwrite: bool = False) -> AnalysisSpec:
    """Register an analysis under ``name`` (see :class:`AnalysisSpec`; a table may be given by its description
    alone); returns its spec."""
    if not name.replace("_", "").isalnum():
        raise ValueError(f"analysis name {name!r} must be letters, digits and '_'")
    declared = declare_tables(name, tables or {}, overwrite=overwrite)
    spec = AnalysisSpec(name, collector, description, section, selectable, options, finish, claims, declared,
                        tuple(requires), tuple(needs), fix, protocol_field, plan, tuple(reads), answer)
    return ANALYSES.register(name, spec, overwrite=overwrite)


def load_all_claims() -> None:
    """Import every registered analysis' claims module, in the registry's order (their claims are registered)."""
    _discover()
    for _, spec in ANALYSES.items():
        spec.load_claims()


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
        if err["type"] == "extra_forbidden" and len(err["loc"]) == 1:
            from headstats.registry import did_you_mean

            known = list(options.model_fields)
            guess = did_you_mean(err["loc"][0], known) or f"; use one of {', '.join(known)}"
            raise ProtocolError(f"invalid analysis_options.{name}.{where}: unknown key{guess}") from None
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


def section_analyses() -> list[str]:
    """The analyses a protocol section turns on (a spec's ``protocol_field``), in the order the study runs, finishes
    and reports them: the registry's, but those that read the study's tables (``reads``, made from the others'
    results) after the others."""
    _discover()
    own = [n for n, spec in ANALYSES.items() if spec.protocol_field is not None]
    return sorted(own, key=lambda n: bool(ANALYSES.get(n).reads))


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
