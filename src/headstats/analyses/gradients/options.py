"""The options of the gradients analysis (``analysis_options: {gradients: {...}}``). No torch: the protocol
composes them."""

from __future__ import annotations

from pydantic import Field

from headstats.fields import StrictModel


class GradientOptions(StrictModel):
    """Options of the ``gradients`` analysis (METHODS 2.1)."""

    #: Share of each input's non-special pieces masked for the masked-LM loss (at least one).
    mask_share: float = Field(0.15, gt=0, lt=1)
