"""``peak``: how much of each attention row its largest weight takes (1 = one key, 1/n = uniform), per head.

A user's analysis in its own package, with the file roles of headstats' own (tables, options, collect, finish,
claims, figures, section); importing this package registers it.
"""

from headstats.analyses import register_analysis
from user_analysis.peak.options import PeakOptions
from user_analysis.peak.tables import DECLARED

register_analysis(
    "peak", "user_analysis.peak.collect:PeakCollector", options=PeakOptions,
    finish="user_analysis.peak.finish:finish_peak", claims="user_analysis.peak.claims",
    section="user_analysis.peak.section:peak_section",
    tables=DECLARED,
    description="the share of each attention row that its largest weight takes, per head",
)
