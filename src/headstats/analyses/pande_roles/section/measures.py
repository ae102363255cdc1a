"""Across measures (METHODS 6.1): with ``scoring: {measures: [weights, norm]}``, how many heads hold each role under
each attention measure and under all of them, and the registry's verdicts of the claims that read it
(``survives_norm:<role>``, from ``claims.csv``) beside each role's counts.
"""

from __future__ import annotations

import pandas as pd

from headstats.tables.study_tables import Analysis
from headstats.plots.style import order_roles
from headstats.report.blocks import Report
from headstats.report.sections.claims_section import claim_cell


def measure_counts(agreement: pd.DataFrame) -> pd.DataFrame:
    """Per (model, data set, role): the heads tested, the heads holding the role under each measure (a column per
    measure, named ``under <measure>``) and under every one (``under all``), from ``measure_agreement``."""
    keys = ["model", "dataset", "role"]
    measures = [c for c in agreement.columns if c not in (*keys, "layer", "head", "robust_across_measures")]
    grouped = agreement.groupby(keys, sort=False)
    out = grouped.size().rename("heads").to_frame()
    for m in measures:
        out[f"under {m}"] = grouped[m].sum().astype(int)
    out["under all"] = grouped["robust_across_measures"].sum().astype(int)
    out = out.reset_index()
    rank = {r: i for i, r in enumerate(order_roles(out["role"].astype(str)))}
    return out.assign(_r=out["role"].astype(str).map(rank)).sort_values(["model", "dataset", "_r"],
                                                                        kind="stable").drop(columns="_r")


def measures_section(report: Report, analysis: Analysis, claims: pd.DataFrame | None) -> None:
    """The section "Across measures", when the run scored more than one attention measure."""
    measures = analysis.measures
    agreement = analysis.tables.get("measure_agreement")
    if len(measures) < 2 or agreement is None or agreement.empty:
        return
    report.heading("Across measures")
    report.text(
        f"Each role was tested on {len(measures)} attention measures of the same forward pass ({', '.join(measures)}; "
        f"the Methods paragraph defines them). A head *robust across measures* holds a role under every one "
        f"(`robust_across_measures` in `roles.csv` per head, `measure_agreement.csv` per head and role). Kobayashi "
        f"et al. (2020) found that attention to [CLS], [SEP] and punctuation carries vectors of small norm: a "
        f"delimiter head under `weights` that is not one under `norm` sends little to the tokens it looks at.")
    counts = measure_counts(agreement)
    verdicts = survives_cells(claims)
    if verdicts:
        counts["remains under norm (claim)"] = [verdicts.get((str(m), str(d), str(r)), "") for m, d, r in
                                                zip(counts["model"], counts["dataset"], counts["role"])]
    report.table(counts, "Heads holding each role under each measure and under all of them; the last column is "
                 "the verdict of the claim `survives_norm:<role>` in the claims table (of the heads holding the role "
                 "under weights, do most hold it under norm? exact binomial test against 1/2, corrected with the "
                 "run's other claims). Per head and role: `measure_agreement.csv`.", max_rows=200)


def survives_cells(claims: pd.DataFrame | None) -> dict[tuple[str, str, str], str]:
    """``(model, dataset, role)`` -> the claims table's cell of ``survives_norm:<role>`` (``contradicted (p = ...)``)."""
    if claims is None or not len(claims):
        return {}
    part = claims[claims["claim"].astype(str).str.startswith("survives_norm:")]
    return {(str(r["model"]), str(r["dataset"]), str(r["claim"]).split(":", 1)[1]): claim_cell(r)
            for _, r in part.iterrows()}
