"""The claims about the roles of Pande et al. (their registration, in the order ``claims.csv`` lists them): the
paper's claims on the role table (:mod:`.paper`), the roles against random-init controls (:mod:`.controls`) and
under norm-weighted attention (:mod:`.measures`)."""

from __future__ import annotations

from headstats.analyses.pande_roles.claims import controls, measures, paper  # noqa: F401  (registers them)
