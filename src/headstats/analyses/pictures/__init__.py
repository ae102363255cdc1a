"""Attention pictures: heat maps and an offline interactive view (with BertViz's line view) of the heads that best
show each BertViz pattern; ``figures.line_view`` draws a line view for print.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.pictures.options import PicturesOptions
from headstats.analyses.pictures.tables import DECLARED

register_analysis(
    "pictures", "headstats.analyses.pictures.collect:AttentionPictures",
    options=PicturesOptions,
    section="headstats.analyses.pictures.section:pictures_section",
    requires=("surface",),
    tables=DECLARED,
    description="heat maps and an offline interactive view (line views included) of the heads that best show each BertViz "
                "pattern (next/previous word, identical words, same word in the other sentence, delimiters, broad "
                "attention)",
)
