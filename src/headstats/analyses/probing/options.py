"""The options of the probing analysis (``analysis_options: {probing: {...}}``): the word vectors, the probes'
training (after the pass). No torch: the protocol composes them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from headstats.engine.cache import AFTER_PASS
from headstats.fields import Int, StrictModel


class ProbingOptions(StrictModel):
    """Options of the ``probing`` analysis (METHODS 2.5): ``from_word`` changes its state (the features); the
    probes' training options are read after the pass (:data:`~headstats.engine.cache.AFTER_PASS`)."""

    from_word: Literal["mean", "first"] = "mean"
    #: A text file of ``word v1 v2 ...`` lines (GloVe's format); default: the model's own input embeddings.
    vectors: str | None = Field(None, json_schema_extra=AFTER_PASS)
    #: Adam's learning rate (the paper's 0.002) and the hidden units of the distance-plus-words baseline.
    lr: float = Field(0.002, gt=0, json_schema_extra=AFTER_PASS)
    hidden: Int = Field(200, ge=1, json_schema_extra=AFTER_PASS)
    #: Sentences per Adam step and passes over the training sentences
    #: (:func:`~headstats.analyses.probing.collect.run_probes`). ``batch_size: 1, epochs: 1`` is the former
    #: schedule (one sentence per step, one epoch); the default is 1.6x faster in CPU time with UAS within 3
    #: points of it (docs/guide.md, probing).
    batch_size: Int = Field(4, ge=1, json_schema_extra=AFTER_PASS)
    epochs: Int = Field(2, ge=1, json_schema_extra=AFTER_PASS)
