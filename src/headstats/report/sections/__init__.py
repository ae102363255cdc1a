"""Report sections of the analyses, one module per section (``<analysis>_section.py``).

The section of a built-in analysis is registered in :data:`SECTIONS`, lazily, as the reference of its function
(``"headstats.report.sections.surface_section:surface_section"``), so it is imported only when the report is
built; the analyses layer sits below the figures (``headstats.plots``) and this layer, and never names them. An
analysis registered from outside the package may instead give its section to ``register_analysis(...,
report=...)``. A section is ``section(report, root, tables)``: it adds
blocks to a :class:`headstats.report.blocks.Report` from the analysis' tables (name -> frame concatenated over
models and data sets, after its ``finish`` step), and saves figures under ``root / "figures"``.

This module holds the few words the sections share.
"""

from __future__ import annotations

import pandas as pd

from headstats.registry import Registry

#: ``section(report, root, tables)`` of an analysis, by the analysis' name.
SECTIONS: Registry = Registry("report section", hint="register one with SECTIONS.register(analysis, function)")
for _analysis in ("surface", "clustering", "pictures", "distance", "dependency", "coreference", "probing",
                  "gradients"):
    SECTIONS.register_lazy(_analysis, f"headstats.report.sections.{_analysis}_section:{_analysis}_section")


def verdict(holds) -> str:
    """``**holds**``, ``**does not hold**`` or, when there is no answer (None, NA), ``**cannot tell**``: how the
    report states a finding's outcome, in its summary and in every section."""
    if holds is None or holds is pd.NA:
        return "**cannot tell**"
    return "**holds**" if bool(holds) else "**does not hold**"


def head_label(layer: int, head: int) -> str:
    """``layer-head``, both 0-based."""
    return f"{int(layer)}-{int(head)}"


def head_list(frame) -> str:
    """The heads of a frame with ``layer`` and ``head`` columns as ``l-h, l-h, ...`` (``none`` when empty)."""
    return ", ".join(head_label(r.layer, r.head) for r in frame.itertuples()) or "none"


def tested_how(tests) -> str:
    """How a table of declared-hypothesis tests (:func:`headstats.stats.hypotheses.test_measures`) was tested:
    ``one-sided t test per head, holm correction over <family>, alpha = 0.05``, from its first row."""
    row = tests.iloc[0]
    return (f"one-sided {row['test']} test per head, {row['correction']} correction over {row['family']}, "
            f"alpha = {row['alpha']:g}")

