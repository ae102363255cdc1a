"""Attention pictures: heat maps and an offline interactive view (with BertViz's line view) of the heads that best
show each BertViz pattern; ``figures.line_view`` draws a line view for print.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import TableSpec, register_analysis
from headstats.analyses.pictures.options import PicturesOptions

register_analysis(
    "pictures", "headstats.analyses.pictures.collect:AttentionPictures",
    options=PicturesOptions,
    section="headstats.analyses.pictures.section:pictures_section",
    requires=("surface",),
    tables={
        "gallery": TableSpec(
            "per BertViz pattern, the head that shows it best and the input drawn",
            columns=("model", "dataset", "pattern", "measure", "layer", "head", "mean", "strength", "weak",
                     "sentence_id", "value")),
        "attention_maps": TableSpec(
            "the attention weights drawn in the pictures (model, data set, input, layer, head, query, key)",
            columns=("model", "dataset", "sentence_id", "layer", "head", "query", "key", "weight")),
        "attention_tokens": TableSpec(
            "the pieces of every input drawn, with their positions and segments",
            columns=("model", "dataset", "sentence_id", "position", "token", "segment", "special")),
    },
    description="heat maps and an offline interactive view (line views included) of the heads that best show each BertViz "
                "pattern (next/previous word, identical words, same word in the other sentence, delimiters, broad "
                "attention)",
)
