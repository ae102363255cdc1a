"""The catalog of claims: the registry of :mod:`headstats.stats.claims` with every claim module imported: each
registered analysis' ``claims`` (the registry of analyses imports them: :func:`headstats.analyses.load_all_claims`;
Pande et al.'s on the roles and on fine-tuning are those of the roles' and the comparison's packages). Importing a
claim module registers its claims; this module sits above ``claims.py``, so that ``claims.py`` names none of them
and no import closes a circle.

A run asks the catalog (:func:`evaluate_all_claims`, the study's ``claims.csv``); a user's own claims,
registered with :func:`headstats.stats.claims.register_claim` before the run, are in the same registry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from headstats.analyses import load_all_claims
from headstats.stats.claims import CLAIMS, RUN_FAMILY, ClaimSettings, evaluate_claims

load_all_claims()


def evaluate_all_claims(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings | None = None, *,
                        claims: Iterable[str] | None = None, analyses: Sequence[str] = ()) -> pd.DataFrame:
    """:func:`headstats.stats.claims.evaluate_claims` over the whole catalog: every built-in claim and every claim
    registered by the user (or only ``claims``), whose tables are present, corrected together, in the order of
    :func:`ordered_claims` (``analyses``: the protocol's)."""
    return evaluate_claims(tables, settings, claims=ordered_claims(analyses) if claims is None else claims)


def ordered_claims(analyses: Sequence[str] = ()) -> list[str]:
    """Every registered claim, in the order ``claims.csv`` lists them: the claims of the analyses a protocol section
    turns on (the roles of Pande et al., ``scoring``), then Pande et al.'s fine-tuning claims, then each analysis'
    claims in the order of ``analyses`` (a protocol's) and then of the registry, then the claims registered outside
    any analysis; within each, the order they were registered in (an analysis' ``claims`` module, or the modules of
    its ``claims/`` package)."""
    from headstats.analyses import get_analysis, list_analyses, section_analyses

    load_all_claims()  # an analysis registered since this module was imported
    every = list_analyses(selectable=False)
    sections = section_analyses()
    order = list(dict.fromkeys([*sections, *analyses, *every]))
    owner = {}
    for rank, name in enumerate(order):
        module = get_analysis(name).claims
        if module:
            owner.setdefault(module, rank)

    def rank(key: str) -> int:
        module = CLAIMS.get(key).evaluate.__module__
        package = next((m for m in owner if module == m or module.startswith(m + ".")), None)
        return owner[package] if package is not None else len(order)

    return sorted(CLAIMS.names(), key=rank)


def list_claims() -> pd.DataFrame:
    """The claims of the catalog: ``claim, sentence, source, hypothesis, unit, test, measure, family, tables``
    (``family``: the family its verdicts are corrected in, declared up front; ``{model}`` is filled in per model,
    or per replicate group for the seed claims)."""
    return pd.DataFrame([{"claim": c.key, "sentence": c.sentence, "source": c.source, "hypothesis": c.hypothesis,
                          "unit": c.unit, "test": c.test, "measure": c.measure,
                          "family": c.family or RUN_FAMILY,
                          "tables": ", ".join(c.tables)}
                         for _, c in CLAIMS.items()])
