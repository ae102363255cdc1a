"""``peak``: how much of each attention row its largest weight takes (1 = one key, 1/n = uniform), per head.

A user's analysis in its own package, with the file roles of headstats' own (options, collect, finish, claims,
figures, section); importing this package registers it.
"""

from headstats.analyses import TableSpec, register_analysis
from user_analysis.peak.options import PeakOptions

register_analysis(
    "peak", "user_analysis.peak.collect:PeakCollector", options=PeakOptions,
    finish="user_analysis.peak.finish:finish_peak", claims="user_analysis.peak.claims",
    section="user_analysis.peak.section:peak_section",
    tables={"peak": TableSpec("per head, the mean over inputs of the mean row maximum of its attention",
                              columns=("model", "dataset", "layer", "head", "n", "peak", "peak_sd")),
            "peak_share": TableSpec("per model and data set, the share of heads whose mean peak exceeds the "
                                    "threshold, with its Wilson interval",
                                    columns=("model", "dataset", "n_heads", "n_peaked", "share", "ci_low",
                                             "ci_high", "threshold"))},
    description="the share of each attention row that its largest weight takes, per head",
)
