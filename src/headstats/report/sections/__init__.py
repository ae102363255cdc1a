"""The report's sections, one module per section: where a report section goes.

- The report's own sections, which :mod:`headstats.report.builder` assembles in their order: the claims
  (``claims_section``), what was not run (``skipped_section``), the inputs (``inputs_section``), p-values, power
  and sensitivity (``statistics_section``), pretrained against fine-tuned (``comparison_section``, with
  ``seeds_section``) and the files (``files_section``). The methods paragraph is :mod:`headstats.report.methods`.
  The parts of an analysis interleaved with them (the summary, the role figures and tables, the strongest heads of
  the roles of Pande et al.) come through the registry, in the builder's named slots
  (:func:`headstats.report.builder.slot_sections`).

The section of each analysis lives in its own package (``headstats/analyses/<name>/section.py``), named by its
spec (``register_analysis(..., section=...)``); the builder finds it only through the registry, and no module here
names an analysis. A section is ``section(report, root, tables)``: it adds blocks to a
:class:`headstats.report.blocks.Report` from the analysis' tables (name -> frame concatenated over models and data
sets, after its ``finish`` step), and saves figures under ``root / "figures"``, using the helpers below.

The report passes the run's claims (``claims.csv``) to every section as ``tables["claims"]``: a section states a
claim's verdict only from there (:func:`claim_lines`), never from its own rule.

This module holds the few words and helpers the sections share (and the methods paragraph uses).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    import pandas as pd

    from headstats.report.blocks import Report

def claim_family(row) -> str:
    """The family a claim's p is corrected in, as prose: ``claims.csv``'s ``family`` without its count (``"Pande
    claims of m"``, ``"seed claims of g"``, ``"the run's claims"``); the run's claims when the column is absent."""
    family = row.get("family", "") if hasattr(row, "get") else ""
    return family.split(" (")[0] if isinstance(family, str) and family else "the run's claims"


def claim_lines(tables, keys, *, model: str | None = None, dataset: str | None = None) -> list[str]:
    """The registry's verdicts of the claims ``keys`` (:mod:`headstats.stats.claims`; ``tables["claims"]``, i.e.
    ``claims.csv``), one Markdown line per (claim, model, data set), optionally of one model and data set::

        - *some heads attend mostly to the previous token* (m on d; min Holm-corrected p ...): **supported**,
          p = 0.003 after holm over the run's claims (its family). <detail>.

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
            text += f", p = {p:.2g} after {r['correction']} over {claim_family(r)}"
        if isinstance(r["reason"], str) and r["reason"]:
            text += f"; {r['reason']}"
        if isinstance(r["detail"], str) and r["detail"]:
            text += f". {r['detail']}"
        lines.append(text + ".")
    return lines


#: Paired tests by the id a table's ``test`` column holds, in words: one name per test in the report's prose.
TEST_NAMES = {"signflip_inputs": "the sign-flip test over inputs",
              "signflip_sentences": "the sign-flip test over sentences",
              "mcnemar": "McNemar's exact test"}


def test_name(test: object) -> str:
    """A test's one name in prose (:data:`TEST_NAMES`; an id without one as it is)."""
    return TEST_NAMES.get(str(test), str(test))


def detail_text(what: str, text: str) -> str:
    """Numbers behind a claim, labelled as detail (``what``: per baseline, per relation), so that the claim's line
    from the registry (:func:`claim_lines`) stays its one verdict."""
    return f"*Detail {what} (the verdict is the claim's line):* {text}"


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


def by_model_and_dataset(frame: pd.DataFrame, protocol=None):
    """``((model, dataset), rows)`` of a table, in the protocol's order of models and data sets when given
    (else in table order)."""
    groups = dict(list(frame.groupby(["model", "dataset"], sort=False)))
    if protocol is None:
        return list(groups.items())
    models = [m.name for m in protocol.models]
    datasets = [d.name for d in protocol.datasets]

    def rank(key):
        model, dataset = key
        return (models.index(model) if model in models else len(models),
                datasets.index(dataset) if dataset in datasets else len(datasets))

    return sorted(groups.items(), key=lambda item: rank(item[0]))


def tested_parameter(test: str) -> str:
    """The location a test's H0 is about, in words: ``mean``, ``median`` or ``pseudo-median`` (registry)."""
    from headstats.stats.onesample import ONE_SAMPLE_TESTS

    return ONE_SAMPLE_TESTS.get(test).parameter if test in ONE_SAMPLE_TESTS else "location"


def tau_words(st) -> str:
    """tau as written in the protocol: ``3`` or ``3 (block: 1.5)``."""
    return st.tau_text() if hasattr(st, "tau_text") else f"{st.tau:g}"


def role_test_sentence(protocol) -> str:
    """How a head is assigned a role, in one sentence (a LaTeX caption's method): ``A head holds a role when a
    one-sided t-test (ddof = 1) rejects H0: mean score ≤ τ = 3 after Holm correction over each model × dataset,
    α = 0.05.``"""
    from headstats.stats.corrections import CORRECTIONS
    from headstats.stats.onesample import ONE_SAMPLE_TESTS

    st = protocol.statistics
    family = " x ".join(st.family) if st.family else "the whole study"
    return (f"A head holds a role when a one-sided {ONE_SAMPLE_TESTS.describe(st.test)} rejects H0: "
            f"{tested_parameter(st.test)} score ≤ τ = {tau_words(st)} after "
            f"{CORRECTIONS.describe(st.correction, 'short')} correction over each {family.replace(' x ', ' × ')}, "
            f"α = {st.alpha:g}. ")


def adjusted_bound_words(correction: str) -> str:
    """What the adjusted lower bound ``ci_low_adj`` is under a correction (by the correction's kind in the
    registry: family-wise, false discovery rate or none), in words."""
    from headstats.stats.corrections import CORRECTIONS

    kind = CORRECTIONS.get(correction).kind if correction in CORRECTIONS else "none"
    return {"fwer": "Bonferroni-adjusted level 1 - (1 - confidence) / m, simultaneous over the family",
            "fdr": "Benjamini-Yekutieli false-coverage-rate level 1 - R (1 - confidence) / m, for the R "
                   "assigned heads only",
            }.get(kind, "equal to the marginal bound, as there is no correction")
