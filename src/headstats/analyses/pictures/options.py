"""The options of the pictures analysis (``analysis_options: {pictures: {...}}``). No torch: the protocol
composes them."""

from __future__ import annotations

from pydantic import Field

from headstats.fields import Int, StrictModel


class PicturesOptions(StrictModel):
    """Options of the ``pictures`` analysis (heat maps, line views, gallery of BertViz patterns; METHODS 3)."""

    #: Inputs whose maps are kept (the first ones of each data set, or the ``sentence_ids`` given).
    n_inputs: Int = Field(3, ge=1, le=50)
    sentence_ids: list[str] | None = None
    #: Heads always drawn, as [layer, head] (0-indexed), beside the gallery's choice.
    heads: list[tuple[Int, Int]] = Field(default_factory=list)
    #: Inputs longer than this many pieces are cut for the pictures (the measures use the whole input).
    max_pieces: Int = Field(64, ge=4)
