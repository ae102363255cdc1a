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
    report : callable, optional
        Its report section (see :data:`ReportSection`).
    selectable : bool
        Whether a protocol may name it in ``analyses:`` (built-ins that the study runs by itself are not).
    """

    name: str
    collector: Callable[..., Any]
    description: str = ""
    report: ReportSection | None = None
    selectable: bool = True


ANALYSES: Registry[AnalysisSpec] = Registry(
    "analysis", hint="add one with headstats.analyses.register_analysis or a module in headstats/analyses/"
)
_discovered = False


def register_analysis(name: str, collector: Callable[..., Any], *, description: str = "",
                      report: ReportSection | None = None, selectable: bool = True,
                      overwrite: bool = False) -> AnalysisSpec:
    """Register an analysis under ``name`` (see :class:`AnalysisSpec`); returns its spec."""
    if not name.replace("_", "").isalnum():
        raise ValueError(f"analysis name {name!r} must be letters, digits and '_'")
    return ANALYSES.register(name, AnalysisSpec(name, collector, description, report, selectable),
                             overwrite=overwrite)


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
