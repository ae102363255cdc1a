"""Report sections of the analyses, one module per section (``<analysis>_section.py``).

An analysis names its section in its registry entry, ``register_analysis(..., report=...)``: a callable, or the
``"module:function"`` reference of one, e.g. ``"headstats.report.sections.surface_section:surface_section"``.
The analyses layer sits below the figures (``headstats.plots``) and this layer, so a section that draws lives
here and is imported only when the report is built. A section is ``section(report, root, tables)``: it adds
blocks to a :class:`headstats.report.blocks.Report` from the analysis' tables (name -> frame concatenated over
models and data sets, after its ``finish`` step), and saves figures under ``root / "figures"``.

This module holds the few words the sections share.
"""

from __future__ import annotations


def verdict(holds: bool) -> str:
    """``**holds**`` or ``**does not hold**``: how a section states a claim's outcome."""
    return "**holds**" if holds else "**does not hold**"


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

