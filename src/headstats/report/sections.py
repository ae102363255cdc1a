"""Report sections of analyses that draw figures, registered in the report layer.

An analysis registers its collector in :mod:`headstats.analyses`, a layer below the figures, so a section
that draws (``headstats.plots``) cannot live beside it. It is registered here instead, under the analysis'
name, from a module of this package whose name ends in ``_section`` (imported the first time a section is
looked up)::

    from headstats.report.sections import register_section

    register_section("surface", surface_section)   # section(report, root, tables)

The builder uses the section registered here when there is one, else the analysis' own ``report`` hook.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any, Callable, Mapping

from headstats.registry import Registry

Section = Callable[[Any, Path, Mapping[str, Any]], None]
REPORT_SECTIONS: Registry[Section] = Registry("report section", hint="register one with register_section")
_discovered = False


def register_section(analysis: str, section: Section, *, overwrite: bool = False) -> Section:
    """Use ``section(report, root, tables)`` for the report of ``analysis``."""
    return REPORT_SECTIONS.register(analysis, section, overwrite=overwrite)


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    import headstats.report as package

    for module in pkgutil.iter_modules(package.__path__):
        if module.name.endswith("_section"):
            importlib.import_module(f"{package.__name__}.{module.name}")


def report_section(analysis: str) -> Section | None:
    """The section registered for ``analysis`` here, or None."""
    _discover()
    return REPORT_SECTIONS.get(analysis) if analysis in REPORT_SECTIONS else None
