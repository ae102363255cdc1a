"""The strongest heads per role: the top-k heads by their effect in score units (mean - tau), with the share of the
ceiling and the marginal and adjusted lower bounds.
"""

from __future__ import annotations

from headstats.tables.study_tables import Analysis
from headstats.plots.style import order_roles
from headstats.report.blocks import Report
from headstats.report.sections import adjusted_bound_words, tested_parameter
from headstats.stats.corrections import CORRECTIONS


def strongest_section(report: Report, analysis: Analysis, protocol) -> None:
    """The top-k heads per role by their effect in score units (mean - tau), with the share of the ceiling."""
    report.heading("Strongest heads per role")
    strongest = analysis.tables["strongest_heads"]
    keys = ["model", "dataset", "role", "layer", "head"]
    if "ci_low_adj" in analysis.tests.columns and "ci_low_adj" not in strongest.columns:
        adj = analysis.tests[[*keys, "ci_low_adj"]].astype({k: str for k in keys[:3]})
        strongest = strongest.astype({k: str for k in keys[:3]}).merge(adj, on=keys, how="left")
        cols = list(strongest.columns)
        cols.insert(cols.index("ci_low") + 1, cols.pop(cols.index("ci_low_adj")))
        strongest = strongest[cols]
    rank = {r: i for i, r in enumerate(order_roles(strongest["role"]))}
    ranked_by = "mean_minus_tau" if "mean_minus_tau" in strongest else "mean"  # older run folders: by mean
    strongest = strongest.assign(_r=strongest["role"].map(rank)).sort_values(
        ["model", "dataset", "_r", ranked_by], ascending=[True, True, True, False], kind="stable").drop(columns="_r")
    st = protocol.statistics
    report.table(strongest, f"The {protocol.report.top_k} heads with the largest effect in score units per model, "
                 f"data set and role (ranked by `{ranked_by}`, the mean score minus tau; `ceiling_share`: the mean "
                 f"over the mean ceiling of the head's inputs, the share of what a perfect head would score; not "
                 f"Cohen's d, which a head with almost constant scores inflates), with their corrected p-value and "
                 f"two one-sided lower bounds of the {tested_parameter(st.test)}: `ci_low`, marginal at "
                 f"{st.confidence:.0%} (each head on its own), "
                 f"and `ci_low_adj`, adjusted to the {CORRECTIONS.describe(st.correction, 'short')} "
                 f"correction ({adjusted_bound_words(st.correction)}); read `ci_low_adj` beside the assignments.",
                 max_rows=400, csv="strongest_heads.csv", fold=True)
