"""The options of the surface analysis (``analysis_options: {surface: {...}}``): its declared hypotheses and the
shares that name a head's dominant behaviour. No torch: the protocol composes them."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from headstats.engine.cache import AFTER_PASS
from headstats.fields import Float, Int, StrictModel


#: Per-input measures, in the order of the MeasureArray's last axis.
SURFACE_MEASURES: tuple[str, ...] = (
    "prev", "self", "next", "cls", "sep", "punct", "sep_to_sep", "other_to_sep", "entropy", "entropy_cls",
    "entropy_uniform", "entropy_ratio", "same_token", "same_token_other",
)
#: Default hypotheses (``analysis_options.surface.hypotheses`` of a protocol): name, measure, threshold,
#: layers (None = all).
DEFAULT_HYPOTHESES: tuple[dict, ...] = (
    {"name": "previous_token", "measure": "prev", "threshold": 0.5, "layers": None},
    {"name": "next_token", "measure": "next", "threshold": 0.5, "layers": None},
    {"name": "same_token", "measure": "self", "threshold": 0.5, "layers": None},
    {"name": "to_cls", "measure": "cls", "threshold": 0.5, "layers": None},
    {"name": "to_sep", "measure": "sep", "threshold": 0.5, "layers": None},
    {"name": "to_punct", "measure": "punct", "threshold": 0.5, "layers": None},
    {"name": "broad", "measure": "entropy_ratio", "threshold": 0.75, "layers": None},
)


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
    #: Read only after the pass (not part of the cache key: changing them reuses the states).
    hypotheses: list[MeasureHypothesis] = Field(
        default_factory=lambda: [MeasureHypothesis(**h) for h in DEFAULT_HYPOTHESES], json_schema_extra=AFTER_PASS)

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
