"""The tables of the pictures analysis, declared once (:func:`headstats.tables.declare_tables`): its spec registers
them (``register_analysis(..., tables=DECLARED)``) and its other files name them by these specs
(``tables[GALLERY]``), never by a string."""

from __future__ import annotations

from headstats.tables import TableSpec, declare_tables

DECLARED = declare_tables("pictures", {
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
})
GALLERY, ATTENTION_MAPS, ATTENTION_TOKENS = DECLARED.values()
