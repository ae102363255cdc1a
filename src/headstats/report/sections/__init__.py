"""Report sections of the analyses, one module per section (``<analysis>_section.py``).

The section of a built-in analysis is registered in :data:`SECTIONS`, lazily, as the reference of its function
(``"headstats.report.sections.surface_section:surface_section"``), so it is imported only when the report is
built; the analyses layer sits below the figures (``headstats.plots``) and this layer, and never names them. An
analysis registered from outside the package may instead give its section to ``register_analysis(...,
report=...)``. A section is ``section(report, root, tables)``: it adds
blocks to a :class:`headstats.report.blocks.Report` from the analysis' tables (name -> frame concatenated over
models and data sets, after its ``finish`` step), and saves figures under ``root / "figures"``.

The report passes the run's claims (``claims.csv``) to every section as ``tables["claims"]``: a section states a
claim's verdict only from there (:func:`claim_lines`), never from its own rule.

This module holds the few words the sections share.
"""

from __future__ import annotations

import math

from headstats.registry import Registry

#: ``section(report, root, tables)`` of an analysis, by the analysis' name.
SECTIONS: Registry = Registry("report section", hint="register one with SECTIONS.register(analysis, function)")
for _analysis in ("surface", "clustering", "pictures", "distance", "dependency", "coreference", "probing",
                  "gradients", "importance"):
    SECTIONS.register_lazy(_analysis, f"headstats.report.sections.{_analysis}_section:{_analysis}_section")


def claim_lines(tables, keys, *, model: str | None = None, dataset: str | None = None) -> list[str]:
    """The registry's verdicts of the claims ``keys`` (:mod:`headstats.stats.claims`; ``tables["claims"]``, i.e.
    ``claims.csv``), one Markdown line per (claim, model, data set), optionally of one model and data set::

        - *some heads attend mostly to the previous token* (m on d; min Holm-corrected p ...): **supported**,
          p = 0.003 after holm over the run's claims. <detail>.

    Empty when the run tested none of them.
    """
    claims = tables.get("claims") if hasattr(tables, "get") else None
    if claims is None or not len(claims):
        return []
    part = claims[claims["claim"].astype(str).isin(list(keys))]
    if model is not None:
        part = part[part["model"].astype(str) == str(model)]
    if dataset is not None:
        part = part[part["dataset"].astype(str) == str(dataset)]
    lines = []
    for _, r in part.iterrows():
        p = float(r["p"])
        text = f"- *{r['sentence']}* ({r['model']} on {r['dataset']}; {r['test']}): **{r['verdict']}**"
        if math.isfinite(p):
            text += f", p = {p:.2g} after {r['correction']} over the run's claims"
        if isinstance(r["reason"], str) and r["reason"]:
            text += f"; {r['reason']}"
        if isinstance(r["detail"], str) and r["detail"]:
            text += f". {r['detail']}"
        lines.append(text + ".")
    return lines


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

