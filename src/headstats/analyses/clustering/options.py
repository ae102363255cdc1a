"""The options of the clustering analysis (``analysis_options: {clustering: {...}}``). No torch: the protocol
composes them."""

from __future__ import annotations

from pydantic import Field

from headstats.engine.cache import AFTER_PASS
from headstats.fields import Float, Int, StrictModel


class ClusteringOptions(StrictModel):
    """Options of the ``clustering`` analysis (JS divergence between heads, MDS; METHODS 2.6): ``max_inputs``
    changes its state; ``datasets`` chooses its jobs; the others are read after the pass
    (:data:`~headstats.engine.cache.AFTER_PASS`)."""

    #: Inputs used for the divergence matrix (the first ones of each data set); null for all. The cost is
    #: (layers x heads)^2 / 2 x n^2 logarithms per input: about 0.05 s of CPU per input of 128 pieces for 72
    #: heads, about 0.4 x the forward pass's (Clark et al. used 1000 inputs).
    max_inputs: Int | None = Field(100, ge=1)
    #: The data sets (their names in the protocol's ``datasets``) whose inputs are clustered; null for every data
    #: set. Clark et al. cluster their 1,000 WikiText segments only. Read when the study plans its jobs (an
    #: analysis' ``datasets`` option: :func:`headstats.study.plan.study_jobs`), not by the collector, so it is not
    #: part of the states' cache keys.
    datasets: list[str] | None = Field(None, min_length=1, json_schema_extra=AFTER_PASS)
    #: Resamples of the permutation test of "heads of one layer sit together".
    n_permutations: Int = Field(9999, ge=99, json_schema_extra=AFTER_PASS)
    #: A head's dominant behaviour (the colours of the MDS figure) is ``broad`` when no pattern holds more than
    #: half its mass and its entropy is at least this share of the uniform reference ln n
    #: (:func:`headstats.analyses.surface.collect.dominant_behaviour`). The test of broad attention is the surface
    #: analysis' ``broad`` hypothesis.
    broad_share: Float = Field(0.75, gt=0, le=1, json_schema_extra=AFTER_PASS)
