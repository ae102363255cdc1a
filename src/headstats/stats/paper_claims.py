"""Pande et al. (2021, "The Heads Hypothesis"), as the claims about them name their source: the claims of the role
table are registered by the roles' analysis package, the fine-tuning claims over seeds by the pretrained-vs-fine-tuned
comparison's (each in its package's claims)."""

from __future__ import annotations

#: The source of Pande et al.'s claims (``register_claim(..., source=PANDE)``).
PANDE = "Pande et al. 2021"
