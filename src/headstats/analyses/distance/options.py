"""The options of the distance analysis (``analysis_options: {distance: {...}}``). No torch: the protocol
composes them."""

from __future__ import annotations

from pydantic import Field

from headstats.engine.cache import AFTER_PASS
from headstats.fields import StrictModel


class DistanceOptions(StrictModel):
    """``analysis_options: {distance: {locality: 0.5}}``: the threshold of the ``local`` hypothesis."""

    locality: float = Field(0.5, gt=0, lt=1, json_schema_extra=AFTER_PASS)
