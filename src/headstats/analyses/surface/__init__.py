"""Surface patterns of attention (Clark et al. 2019, section 3): attention to the previous, same and next
token, [CLS], [SEP], punctuation and entropy per head and input, with one-sided tests of declared hypotheses.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import TableSpec, register_analysis
from headstats.analyses.surface.options import SurfaceOptions

register_analysis(
    "surface", "headstats.analyses.surface.collect:SurfacePatterns",
    options=SurfaceOptions,
    claims="headstats.analyses.surface.claims",
    section="headstats.analyses.surface.section:surface_section",
    requires=("entropy",),
    tables={
        "surface": TableSpec(
            "per head, mean attention to the previous, current and next piece, to [CLS], [SEP] and "
            "punctuation, and entropy (means over inputs)",
            columns=("model", "dataset", "layer", "head", "prev", "self", "next", "cls", "sep", "punct",
                     "sep_to_sep", "other_to_sep", "entropy", "entropy_cls", "entropy_uniform")),
        "surface_tests": TableSpec(
            "one row per head and declared hypothesis (`role`): the one-sided test of the surface measure",
            columns=("model", "dataset", "role", "layer", "head", "test", "n", "mean", "sd", "statistic", "p_unc",
                     "p_corr", "reject", "measure", "threshold")),
    },
    description="attention to previous/same/next token, [CLS], [SEP], punctuation, and entropy per head, per input, "
                "with one-sided tests of declared hypotheses (Clark et al. 2019)",
)
