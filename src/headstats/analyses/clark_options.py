"""Options of the Clark et al. (2019) analyses (``analysis_options: {name: {...}}`` in a protocol).

Each model is registered with its analysis (``register_analysis(..., options=Model)``) and read with
:func:`headstats.analyses.analysis_options`. They live apart from the collectors so that the statistics layer,
which finishes these analyses' tables, reads them without importing torch. This module registers no analysis.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from headstats.analyses.surface_measures import DEFAULT_HYPOTHESES, SURFACE_MEASURES
from headstats.fields import Float, Int, StrictModel


class MeasureHypothesis(StrictModel):
    """A declared hypothesis about a per-input measure: ``H0: mean(measure) <= threshold`` per head, one-sided."""

    name: str
    measure: str
    threshold: Float
    #: The layers it concerns (0-indexed); all layers when left out.
    layers: list[Int] | None = None


class SurfaceOptions(StrictModel):
    """Options of the ``surface`` analysis (METHODS 2.1)."""

    #: Tested with the protocol's ``statistics`` (test, correction, family, alpha); ``surface_tests.csv``.
    hypotheses: list[MeasureHypothesis] = Field(
        default_factory=lambda: [MeasureHypothesis(**h) for h in DEFAULT_HYPOTHESES])

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, value):
        if isinstance(value, dict) and "broad_share" in value:
            raise ValueError("broad_share colours the clustering figure; move it to analysis_options: "
                             "{clustering: {broad_share: ...}}")
        return value

    @field_validator("hypotheses")
    @classmethod
    def _known_measures(cls, value):
        names = [h.name for h in value]
        if len(set(names)) != len(names):
            raise ValueError(f"hypothesis names must be unique; got {', '.join(names)}")
        for h in value:
            if h.measure not in SURFACE_MEASURES:
                raise ValueError(f"hypothesis {h.name!r}: unknown measure {h.measure!r}; choose among "
                                 f"{', '.join(SURFACE_MEASURES)}")
        return value


class ClusteringOptions(StrictModel):
    """Options of the ``clustering`` analysis (JS divergence between heads, MDS; METHODS 2.6)."""

    #: Inputs used for the divergence matrix (the first ones of each data set); null for all. The cost is
    #: (layers x heads)^2 / 2 x n^2 logarithms per input: about 0.1 s of CPU per input of 128 pieces for 72 heads,
    #: about the forward pass's (Clark et al. used 1000 inputs).
    max_inputs: Int | None = Field(100, ge=1)
    #: Resamples of the permutation test of "heads of one layer sit together".
    n_permutations: Int = Field(9999, ge=99)
    #: A head's dominant behaviour (the colours of the MDS figure) is ``broad`` when no pattern holds more than
    #: half its mass and its entropy is at least this share of the uniform reference ln n
    #: (:func:`headstats.analyses.surface.dominant_behaviour`). The test of broad attention is the surface
    #: analysis' ``broad`` hypothesis.
    broad_share: Float = Field(0.75, gt=0, le=1)


class PicturesOptions(StrictModel):
    """Options of the ``pictures`` analysis (heat maps, line views, gallery of BertViz patterns; METHODS 3)."""

    #: Inputs whose maps are kept (the first ones of each data set, or the ``sentence_ids`` given).
    n_inputs: Int = Field(3, ge=1, le=50)
    sentence_ids: list[str] | None = None
    #: Heads always drawn, as [layer, head] (0-indexed), beside the gallery's choice.
    heads: list[tuple[Int, Int]] = Field(default_factory=list)
    #: Inputs longer than this many pieces are cut for the pictures (the measures use the whole input).
    max_pieces: Int = Field(64, ge=4)


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
    #: Alternative of the paired test: ``greater`` (the head beats the offset) or ``two-sided``.
    alternative: Literal["greater", "two-sided"] = "greater"
    #: The paired test of head against offset and the intervals: ``signflip_sentences`` (the sentence is the
    #: unit: sign flips of per-sentence differences, intervals clustered on sentences) or ``mcnemar_words``
    #: (McNemar's exact test and Wilson intervals on words taken as independent; METHODS 5.3).
    test: Literal["signflip_sentences", "mcnemar_words"] = "signflip_sentences"


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
