"""The report's last section, "Files and reproduction": each file of the run folder with its own description, and how
to rerun the study or rebuild the report.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from headstats.report.blocks import Report


#: The tables every run writes beside the tests, each with what it holds.
RUN_TABLES = {
    "claims.csv": "one row per claim and (model, data set): hypothesis, test, estimate and interval, p before "
                  "and after correction over the run's claims, the design's floor, verdict and reason",
    "heads_per_layer.csv": "heads holding each role in each layer",
    "colocation.csv": "heads per exact combination of roles and per pair of roles",
    "strongest_heads.csv": "the heads with the largest mean score minus tau, per role",
    "ceilings.csv": "per role and data set the mean, smallest and largest ceiling and whether tau is reachable",
    "tau_sensitivity.csv": "heads assigned each role at other tau and alpha",
    "robustness.csv": "heads whose assignment changes with the test or the correction",
    "participation.csv": "inputs taking part in each role's test (an input with no key in the sieve takes none)",
    "power_summary.csv": "per role the heads not assigned whose test could not have seen the effect of interest, "
                         "and the median minimum detectable effect",
    "underpowered.csv": "those heads, one row each, with their power and the inputs they would need",
    "measure_agreement.csv": "with several attention measures: per head and role, whether it holds the role under "
                             "each measure and under all (robust_across_measures)",
    "*.tex": "the main tables as LaTeX (booktabs) for a paper, each caption with its own method sentence",
}


def files_section(report: Report, analysis_files: dict[str, str] | None = None, *,
                  formats: Sequence[str] | None = None, tables: Collection[str] | None = None) -> None:
    """The files of the run folder, each described: the run's own tables (:data:`RUN_TABLES`; those of
    ``tables``, the run's table names, when given), the analyses' (``analysis_files``), figures and how to
    rerun."""
    from headstats.plots.style import FORMATS

    others = [f.upper() for f in (FORMATS if formats is None else formats) if f != "png"]
    papers = f" and {', '.join(others)} (for papers)" if others else ""
    report.heading("Files and reproduction")
    report.text(
        "- `scores.parquet`: one row per input, layer, head and role (column `score`)\n"
        "- `tests.csv` / `tests.parquet`: one row per model, data set, role, layer and head; on the syntactic roles' "
        "rows the offset-matched control's test too (`offset_excess`, `offset_ci_low`/`offset_ci_high`, "
        "`offset_p_unc`/`offset_p_corr`, `offset_reject`, `gate_removed`; NaN on the other roles' rows and where "
        "the control was not computed)\n"
        "- `roles.csv`: one row per head, a boolean column per role\n"
        + "".join(f"- `{name}`: {what}\n" for name, what in RUN_TABLES.items()
                  if tables is None or name.removesuffix(".csv") in tables or name == "*.tex")
        + "".join(f"- `{name}.csv`: {what}\n" for name, what in (analysis_files or {}).items()) +
        f"- `figures/`: every figure as PNG (shown here){papers}\n"
        "- `manifest.json`: versions, model weight hashes, data hashes, seed, counts\n"
        "- `protocol.resolved.yaml`: rerun with `headstats run protocol.resolved.yaml`; rebuild this report from "
        "the tables with `headstats report RUN_DIR`"
    )
