"""The tables of ``peak``, declared once: the spec registers them, and the finish step, the claim and the section
name them by these specs (``tables[PEAK_SHARE]``), never by a string."""

from headstats.tables import TableSpec, declare_tables

DECLARED = declare_tables("peak", {
    "peak": TableSpec("per head, the mean over inputs of the mean row maximum of its attention",
                      columns=("model", "dataset", "layer", "head", "n", "peak", "peak_sd")),
    "peak_share": TableSpec("per model and data set, the share of heads whose mean peak exceeds the threshold, with "
                            "its Wilson interval",
                            columns=("model", "dataset", "n_heads", "n_peaked", "share", "ci_low", "ci_high",
                                     "threshold")),
})
PEAK, PEAK_SHARE = DECLARED.values()
