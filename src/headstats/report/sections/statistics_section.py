"""The statistics that qualify the roles: the distribution of the p-values, power (the smallest detectable effect,
the underpowered heads) and the sensitivity of the assignment to tau, the test and the correction.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from headstats.tables.study_tables import Analysis
from headstats.report.blocks import Report, figure_tag
from headstats.report.figures import FigureRenderer
from headstats.report.sections import by_model_and_dataset


def statistics_sections(report: Report, root: Path, analysis: Analysis, protocol, *,
                        formats: Sequence[str] | None = None, figures: FigureRenderer | None = None) -> None:
    """p-values, power and sensitivity (figures from :mod:`headstats.plots.stats_plots`, drawn by ``figures``,
    default: here, now)."""
    from headstats.plots import stats_plots

    figures = figures or FigureRenderer(root, formats=formats, workers=1)

    tests = analysis.tests
    st = protocol.statistics
    report.heading("p-values, power and sensitivity")
    report.figure(figures.add("pvalue_ecdf", stats_plots.plot_pvalue_ecdf, tests, alpha=st.alpha),
                  f"Every uncorrected p-value of the {len(tests)} hypotheses, as the share of each role's hypotheses "
                  "with p at most x, on a log axis (dotted: uniform p-values, H0 at its boundary; dashed: alpha; "
                  "solid: the largest p-value the correction rejected). A role whose line rises at the left has "
                  "heads far above tau; a line that stays at 0 until p = 1 is heads far below it.",
                  alt="p-value distribution")
    summary = analysis.tables.get("power_summary")
    d0 = st.effect_of_interest
    if summary is not None:
        report.table(summary, f"Per role: heads assigned, not assigned, and underpowered (not assigned, with "
                     f"less than {st.power_target:.0%} power to detect the effect of interest d = {d0:g} at their "
                     f"N and corrected level); median_mde is the median minimum detectable effect (standardised, "
                     f"{st.power_target:.0%} power), max_n_for_power the inputs a protocol would need for "
                     f"{st.power_target:.0%} power at d = {d0:g}.", max_rows=200, csv="power_summary.csv")
    if "mde" in tests.columns and tests["mde"].notna().any():
        report.figure(figures.add("power_mde", stats_plots.plot_mde, tests, effect_of_interest=d0),
                      f"The smallest standardised effect each head's test could detect with {st.power_target:.0%} "
                      f"power at its N and corrected level (filled: assigned; with several data sets, one marker and place in "
                      f"each role's column per data set, as the legend says); dashed: the effect of interest "
                      f"d = {d0:g}. Heads above the line could not have shown an effect of that size.",
                      alt="smallest detectable effect per head")
    weak = analysis.tables.get("underpowered")
    if weak is not None and len(weak):
        report.text(
            f"{len(weak)} head-role pairs were not assigned by a test that had less than {st.power_target:.0%} "
            f"power to detect an effect of d = {d0:g} (the protocol's `effect_of_interest`) at their N and "
            f"corrected level: their minimum detectable effect `mde` is larger, so their non-assignment says "
            f"little about effects of that size. `n_for_power` is the number of inputs that would give "
            f"{st.power_target:.0%} power at d = {d0:g}. These are design quantities (Hoenig & Heisey 2001): "
            "they do not depend on the observed effect."
        )
        cols = ["model", "dataset", "role", "layer", "head", "n", "mean", "mde", "mde_score", "power",
                "n_for_power", "power_note"]
        report.table(weak[[c for c in cols if c in weak.columns]], f"Heads not assigned with power below "
                     f"{st.power_target:.0%} at d = {d0:g}: minimum detectable effect and inputs needed.",
                     max_rows=40, csv="underpowered.csv")
    if "tau_sensitivity" in analysis.tables:
        sens = analysis.tables["tau_sensitivity"]
        for (model, dataset), _ in by_model_and_dataset(sens, protocol):
            tag = figure_tag(model, dataset)
            tau_used = st.tau_of("default") if hasattr(st, "tau_of") else st.tau
            one = sens[(sens["model"] == model) & (sens["dataset"] == dataset)]
            report.figure(figures.add(f"tau_sensitivity_{tag}", stats_plots.plot_tau_sensitivity, one, model=model,
                                      dataset=dataset, alpha=st.alpha, tau_used=tau_used),
                          f"Heads assigned per role as tau varies ({model} on {dataset}, alpha = {st.alpha:g}; "
                          "dashed: the tau used). Look for roles whose count changes steeply near the tau used.",
                          alt=f"tau sensitivity of {model} on {dataset}")
        rob = analysis.tables.get("robustness")
        if rob is not None:
            unstable = rob[~rob["stable"].astype(bool)] if "stable" in rob else rob
            report.text(
                f"Robustness: {len(unstable)} of {len(rob)} head-role pairs change assignment between tests or "
                "corrections (`robustness.csv`)."
            )
            report.table(unstable, "Heads whose assignment depends on the test or correction (one column per "
                         "test x correction).", max_rows=40, csv="robustness.csv")
