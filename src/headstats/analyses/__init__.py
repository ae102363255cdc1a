"""Analyses: collectors registered by name, with their metadata and report section.

An analysis is one module of this package that defines a :class:`~headstats.engine.collector.Collector` and
registers it::

    from headstats.analyses import register_analysis

    register_analysis("entropy", EntropyCollector, description="...", report=entropy_section)

Every module of this package is imported the first time the registry is asked for a name, so adding an
analysis means adding its module (and its test): nothing else names it. A protocol then enables it with
``analyses: [entropy]``; the study runs it over every model and data set in the same forward passes as the
role scores, writes each of its tables as ``<table>.csv`` and adds its report section. Analyses defined
outside the package are registered the same way, from Python, before the study runs.

Built-in entries: ``role_scores`` (the sieve bias scores, always run), ``special_mass`` and ``similarity``
(used by comparisons), and ``entropy`` (an example of a protocol-selected analysis).
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
        section that draws figures lives in the report layer, which this layer may not import, so it is named
        and imported only when the report is built.
    selectable : bool
        Whether a protocol may name it in ``analyses:`` (built-ins that the study runs by itself are not).
    options : pydantic model class, optional
        The schema of the analysis' options (``analysis_options: {name: {...}}`` in a protocol), checked
        before any model loads; the collector reads them with :func:`analysis_options`.
    finish : str, optional
        ``"module:function"`` of ``finish(tables, protocol) -> tables``, run by the study on the tables
        concatenated over models and data sets before they are written: the place for tests and corrections,
        which live in the statistics layer above this one.
    """

    name: str
    collector: Callable[..., Any]
    description: str = ""
    report: ReportSection | str | None = None
    selectable: bool = True
    options: Any = None
    finish: str | None = None

    def report_section(self) -> ReportSection | None:
        """The report section, imported if it was named by reference."""
        return resolve(self.report) if isinstance(self.report, str) else self.report

    def finisher(self) -> Callable[..., Any] | None:
        """The ``finish`` function, imported, or None."""
        return None if self.finish is None else resolve(self.finish)


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
                      options: Any = None, finish: str | None = None,
                      overwrite: bool = False) -> AnalysisSpec:
    """Register an analysis under ``name`` (see :class:`AnalysisSpec`); returns its spec."""
    if not name.replace("_", "").isalnum():
        raise ValueError(f"analysis name {name!r} must be letters, digits and '_'")
    return ANALYSES.register(name, AnalysisSpec(name, collector, description, report, selectable, options, finish),
                             overwrite=overwrite)


def analysis_options(name: str, protocol: Any) -> Any:
    """The validated options of analysis ``name`` in ``protocol`` (its ``options`` model with the protocol's
    ``analysis_options[name]``; defaults when the protocol gives none or is None)."""
    spec = get_analysis(name)
    if spec.options is None:
        return None
    given = {} if protocol is None else (getattr(protocol, "analysis_options", None) or {}).get(name, {})
    try:
        return spec.options.model_validate(given)
    except Exception as exc:  # pydantic.ValidationError: one line naming the key
        from pydantic import ValidationError

        if not isinstance(exc, ValidationError):
            raise
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ProtocolError(f"invalid analysis_options.{name}.{where}: {err['msg']}; see the analysis' options "
                            "in the README") from None


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
