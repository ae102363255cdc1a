"""Options of the Clark et al. (2019) analyses (``analysis_options: {name: {...}}`` in a protocol).

They live apart from the collectors so that the statistics layer, which finishes these analyses' tables,
reads them without importing torch. This module registers no analysis.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from headstats.fields import Int, StrictModel


class DependencyOptions(StrictModel):
    """Options of the ``dependency`` analysis (METHODS 2.3)."""

    #: The row of a split word: the mean of its pieces' rows (the paper) or its first piece's (released code).
    from_word: Literal["mean", "first"] = "mean"
    #: ``base``: subtype names folded into their base (nsubjpass -> nsubj); ``canonical``: headstats' labels.
    labels: Literal["base", "canonical"] = "base"
    #: Offsets of the baseline (0, the word itself, is never a head).
    offsets: list[int] = Field(default_factory=lambda: [-3, -2, -1, 1, 2], min_length=1)
    #: Relations with fewer words are left out of ``dependency_table`` and its tests (kept in the heads table).
    min_count: Int = Field(100, ge=1)
    #: ``split``: the best head and offset are chosen on the inputs of even position and tested on those of
    #: odd position; ``same``: chosen and tested on all words (optimistic, the paper's way).
    selection: Literal["split", "same"] = "split"
    #: Alternative of the paired exact test: ``greater`` (the head beats the offset) or ``two-sided``.
    alternative: Literal["greater", "two-sided"] = "greater"


class GradientOptions(StrictModel):
    """Options of the ``gradients`` analysis (METHODS 2.1)."""

    #: Share of each input's non-special pieces masked for the masked-LM loss (at least one).
    mask_share: float = Field(0.15, gt=0, lt=1)


class ProbingOptions(StrictModel):
    """Options of the ``probing`` analysis (METHODS 2.5)."""

    from_word: Literal["mean", "first"] = "mean"
    #: A text file of ``word v1 v2 ...`` lines (GloVe's format); default: the model's own input embeddings.
    vectors: str | None = None
    #: Adam's learning rate (the paper's 0.002) and the hidden units of the distance-plus-words baseline.
    lr: float = Field(0.002, gt=0)
    hidden: Int = Field(200, ge=1)
