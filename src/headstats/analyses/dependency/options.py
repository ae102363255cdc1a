"""The options of the dependency analysis (``analysis_options: {dependency: {...}}``). No torch: the protocol
composes them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from headstats.engine.cache import AFTER_PASS
from headstats.fields import Int, StrictModel


class DependencyOptions(StrictModel):
    """Options of the ``dependency`` analysis (METHODS 2.3): ``from_word``, ``labels`` and ``offsets`` change its
    state; the others are read by its finish step (:data:`~headstats.engine.cache.AFTER_PASS`)."""

    #: The row of a split word: the mean of its pieces' rows (the paper) or its first piece's (released code).
    from_word: Literal["mean", "first"] = "mean"
    #: ``base``: subtype names folded into their base (nsubjpass -> nsubj); ``canonical``: headstats' labels.
    labels: Literal["base", "canonical"] = "base"
    #: Offsets of the baseline (0, the word itself, is never a head).
    offsets: list[int] = Field(default_factory=lambda: [-3, -2, -1, 1, 2], min_length=1)
    #: Relations with fewer words are left out of ``dependency_table`` and its tests (kept in the heads table).
    min_count: Int = Field(100, ge=1, json_schema_extra=AFTER_PASS)
    #: ``split``: the best head and offset are chosen on the inputs of even position and tested on those of
    #: odd position; ``same``: chosen and tested on all words (optimistic, the paper's way).
    selection: Literal["split", "same"] = Field("split", json_schema_extra=AFTER_PASS)
    #: Alternative of the paired test: ``greater`` (the head beats the offset) or ``two-sided``.
    alternative: Literal["greater", "two-sided"] = Field("greater", json_schema_extra=AFTER_PASS)
    #: The paired test of head against offset and the intervals: ``signflip_sentences`` (the sentence is the
    #: unit: sign flips of per-sentence differences, intervals clustered on sentences) or ``mcnemar_words``
    #: (McNemar's exact test and Wilson intervals on words taken as independent; METHODS 5.3).
    test: Literal["signflip_sentences", "mcnemar_words"] = Field("signflip_sentences", json_schema_extra=AFTER_PASS)
