"""The report's first section: the claims table (claim by data set) from ``claims.csv``, the registry's verdicts
(:mod:`headstats.stats.claims`), and the words that say what a verdict is.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.report.blocks import Report
from headstats.report.latex import LatexTable, latex_escape
from headstats.stats.claims import p_text
from headstats.stats.corrections import CORRECTIONS


#: The verdicts of :mod:`headstats.stats.claims`, in the order a reader weighs them.
_VERDICT_ORDER = ("supported", "contradicted", "not shown", "cannot tell")


def _where(model: str, dataset: str, one_model: bool) -> str:
    return str(dataset) if one_model else f"{model} / {dataset}"


def _reason_kind(reason: str) -> str:
    """``role out of reach`` from ``role out of reach: local out of reach (mean ceiling 2.71 <= tau 3)``."""
    return str(reason).split(":", 1)[0].strip()


def _effect_text(row) -> str:
    reason = row.get("reason", "") if hasattr(row, "get") else ""
    return ", effect below the stated size" if isinstance(reason, str) and "effect below the stated size" in reason else ""


def claim_cell(row) -> str:
    """One cell of the claims table: ``supported (p = 0.0047)``, ``not shown (p = 0.31)`` or
    ``cannot tell (role out of reach)``; ``p`` is corrected within the claim's family."""
    verdict, p, reason = str(row["verdict"]), float(row["p"]), row["reason"]
    if verdict == "cannot tell":
        return f"cannot tell ({_reason_kind(reason)})" if isinstance(reason, str) and reason else verdict
    return f"{verdict}{_effect_text(row)} ({p_text(p)})" if np.isfinite(p) else verdict


def claims_by_dataset(claims: pd.DataFrame) -> pd.DataFrame:
    """The report's claims table: one row per claim (its sentence and source), one column per data set
    (``model / dataset`` when the run has several models or replicate groups), each cell :func:`claim_cell`.

    Parameters
    ----------
    claims : DataFrame
        ``claims.csv`` (:func:`headstats.stats.claims.evaluate_claims`).
    """
    if claims is None or claims.empty:
        return pd.DataFrame(columns=["claim", "source"])
    one_model = claims["model"].astype(str).nunique() == 1
    where = [_where(m, d, one_model) for m, d in zip(claims["model"], claims["dataset"])]
    cells = claims.assign(where=where, cell=[claim_cell(r) for _, r in claims.iterrows()])
    table = cells.pivot_table(index=["sentence", "source"], columns="where", values="cell", aggfunc="first",
                              sort=False).reset_index()
    table.columns.name = None
    order = list(dict.fromkeys(claims["sentence"]))
    table = table.set_index("sentence").loc[order].reset_index().rename(columns={"sentence": "claim"})
    return table[["claim", "source", *dict.fromkeys(where)]].fillna("")


def claim_line(row) -> str:
    """One claim as a line of the summary: the verdict in bold, the sentence, the numbers, the test and the
    corrected p-value (or the reason the data cannot decide)."""
    detail = f": {row['detail']}" if isinstance(row["detail"], str) and row["detail"] else ""
    line = f"- **{row['verdict']}**: {row['sentence']}{detail}"
    p = float(row["p"])
    if np.isfinite(p):
        line += f" ({row['test']}; {p_text(p)} after {CORRECTIONS.describe(row['correction'], 'short')})"
    reason = row["reason"]
    if isinstance(reason, str) and reason:
        line += f"; {reason}"
    return line + "."


def claims_family_text(claims: pd.DataFrame) -> str:
    """What the verdicts are: tests, with their family and correction."""
    if claims is None or claims.empty:
        return ("No claim was tested in this run (no `claims.csv`: a run folder written before claims were "
                "tested); rerun `headstats run` to test them.")
    alpha = float(claims["alpha"].iloc[0])
    correction = str(claims["correction"].iloc[0])
    inside = claims["family"].astype(str)
    inside = inside[~inside.str.contains("cannot reject")]
    families = "; ".join(dict.fromkeys(inside)) or "no claim of this run can reject"
    counts = claims["verdict"].value_counts()
    tally = ", ".join(f"{int(counts[v])} {v}" for v in _VERDICT_ORDER if v in counts)
    return (
        f"Each verdict is a test of a registered claim (`claims.csv`: its hypothesis H0/H1 with thresholds, unit of "
        f"replication, test, estimate with its interval, p-value and what the design could detect; "
        f"docs/statistics.md, 'Claims'). Families (each corrected on its own, the `family` column): {families}; "
        f"{CORRECTIONS.describe(correction)}, alpha = {alpha:g} (p <= alpha after correction). "
        "**supported**: significant in the claimed direction; **contradicted**: significant in the other "
        "direction; **not shown**: tested, not significant; **cannot tell**: the data cannot decide (a role out "
        "of reach or not tested, too few heads, a design whose smallest p-value is above alpha): a reason, never "
        f"a verdict. This run: {tally}."
    )


def _claims_latex(table: pd.DataFrame, claims: pd.DataFrame) -> LatexTable:
    """``claims.tex``: the claims table with its method sentence."""
    correction = CORRECTIONS.describe(str(claims["correction"].iloc[0]), "short")
    caption = (f"Each claim is a hypothesis tested by its own test (named in `claims.csv`), with p-values "
               f"{correction}-corrected within each family of claims (the `family` column) at alpha = "
               f"{float(claims['alpha'].iloc[0]):g}. "
               "Verdict and corrected p per data set, or why the data cannot tell.")
    columns = {"claim": "Claim", "source": "Source", **{c: latex_escape(c) for c in table.columns[2:]}}
    return LatexTable("claims.tex", caption, columns=columns)


def claims_section(report: Report, claims: pd.DataFrame | None) -> None:
    """The report's first section: the claims table (claim by data set) from ``claims.csv``."""
    report.heading("Claims, tested")
    report.text(claims_family_text(claims))
    if claims is None or claims.empty:
        return
    table = claims_by_dataset(claims)
    report.table(table, "The claims of the papers (and any registered claim) by data set: "
                 "verdict and p-value after correction within the claim's family, or why the data cannot tell.",
                 fold=False, latex=_claims_latex(table, claims))
    cols = ["claim", "model", "dataset", "unit", "test", "measure", "estimate", "ci_low", "ci_high", "p_unc", "p",
            "floor", "verdict", "reason", "detectable"]
    report.table(claims[[c for c in cols if c in claims.columns]], "Every claim's test: estimate with its interval, "
                 "p before (p_unc) and after correction (p), the smallest p the design can give (floor), and what it "
                 "could detect.", max_rows=200, csv="claims.csv", fold=True)
