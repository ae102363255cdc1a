"""The roles and hypotheses of the offset-matched control (METHODS 6.2), torch-free: what the collector measures,
what the study tests, and what the role assignment's gate reads (:mod:`headstats.assignment.offset_gate`).

For the relations ``r_1..r_k`` the control measures the arc roles ``syntactic`` (arcs of any of them) and
``syntactic:<r_i>``; the hypothesis of arc role ``x`` is named ``x_beyond_offset``: H0: mean offset-matched
excess <= 0 against H1: > 0, one-sided, with the protocol's test and correction.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The suffix of a control hypothesis' name: ``syntactic:amod_beyond_offset`` tests the role ``syntactic:amod``.
SUFFIX = "_beyond_offset"


def control_roles(relations: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The arc roles of the control and the relations whose arcs each counts: ``syntactic`` over all of
    ``relations``, then ``syntactic:<r>`` for each."""
    relations = tuple(relations)
    return [("syntactic", relations)] + [(f"syntactic:{r}", (r,)) for r in relations]


def control_hypotheses(roles: Sequence[str]) -> list[dict]:
    """One per arc role: H0: the head's mean offset-matched excess <= 0 (declared hypotheses, as
    :func:`headstats.stats.hypotheses.test_measures` takes them)."""
    return [{"name": f"{name}{SUFFIX}", "measure": name, "threshold": 0.0, "layers": None} for name in roles]


def tested_role(hypothesis: str) -> str:
    """The arc role a control hypothesis tests (``syntactic:amod_beyond_offset`` -> ``syntactic:amod``)."""
    return hypothesis[: -len(SUFFIX)] if hypothesis.endswith(SUFFIX) else hypothesis
