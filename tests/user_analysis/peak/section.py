"""The report section of ``peak``: the share of peaked heads, the claim's verdict and the figure."""

from headstats.report.figures import draw_figure
from headstats.report.sections import claim_lines
from user_analysis.peak import figures
from user_analysis.peak.tables import PEAK, PEAK_SHARE


def peak_section(report, root, tables):
    report.heading("Peaked heads")
    report.table(tables[PEAK_SHARE], "share of heads whose mean row maximum exceeds the threshold")
    lines = claim_lines(tables, ["most_heads_peaked"])
    if lines:
        report.text("\n".join(lines))
    for (model, dataset), part in tables[PEAK].groupby(["model", "dataset"], sort=False):
        report.figure(draw_figure(root, f"peak_{model}_{dataset}", figures.peak_by_layer, part,
                                  title=f"{model} on {dataset}"), "each head's mean row maximum by layer")
