"""The options of the roles of Pande et al.: the protocol's ``scoring:`` section (:class:`ScoreSettings`).

The schema lives in :mod:`headstats.analyses.sieves`, beside the sieves it configures, since the surface and offset
analyses score the same sieves with it; this module names it as the roles' options (the protocol composes it as
``scoring``)."""

from __future__ import annotations

from headstats.analyses.sieves import ScoreSettings

__all__ = ["ScoreSettings"]
