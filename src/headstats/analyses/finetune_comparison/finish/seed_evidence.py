"""The evidence of the fine-tuning claims over seeds (Pande et al. 2021, section 6), from the per-seed values the
seed-level tables of :mod:`.replicates` computed: the exact sign-flip test over seeds, its
floor, the t interval of the mean and, with too few seeds, the reason no verdict can be reached. The registry of
claims (:mod:`headstats.stats.claims`) turns it into verdicts.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pandas as pd

from headstats.analyses.finetune_comparison.claims import SEED_CLAIMS, SEED_FAMILY, seed_hypothesis
from headstats.stats.claims import Evidence, evidence_fields
from headstats.stats.exact import signflip_bound, signflip_claim
from headstats.stats.seeds import corrected_level, seeds_needed

__all__ = ["seed_claims", "seed_evidence"]


def seed_evidence(c: dict, *, alpha: float, confidence: float, m: int = 1, correction: str = "holm") -> Evidence:
    """One claim over seeds as :class:`Evidence`: the exact sign-flip test of its per-seed values, one-sided in the
    claimed direction (METHODS 5.1: a directional claim over seeds; the other direction is stated in the detail,
    not part of the verdict), in the family of the ``m`` seed claims of its comparison (``correction`` over them).
    Both tests of ``sep_attention_falls`` (the [SEP] fall and the rise on other tokens) must hold: p the larger.
    The interval is the one-sided bound that inverts the sign-flip test (:func:`headstats.stats.exact.
    signflip_bound`) on the claimed side, so that it excludes 0 exactly when the test rejects at ``1 - confidence``."""
    level = corrected_level(alpha, m, correction)
    values, alternative = c["values"], c["alternative"]
    if isinstance(alternative, tuple):  # both must hold: intersection-union, p = max
        tests = [signflip_claim(v, alternative=a, confidence=confidence, level=level)
                 for v, a in zip(values, alternative)]
        st = tests[0]
        p_for = max(t.p_for for t in tests)
        p_other = min(1.0, 2 * min(t.p_against for t in tests))
        first, first_values = alternative[0], values[0]
    else:
        st = signflip_claim(values, alternative=alternative, confidence=confidence, level=level)
        p_for, p_other = st.p_for, st.p_against
        first, first_values = alternative, values
    need_alone = seeds_needed(alpha=alpha, m=1, correction="none", alternative=first)
    need_family = seeds_needed(alpha=alpha, m=m, correction=correction, alternative=first)
    reason = ""
    if st.k and st.floor > alpha:
        reason = (f"too few seeds: with {st.k} seeds the exact sign-flip test's smallest one-sided p-value is "
                  f"1/2^{st.k} = {st.floor:.3g} > alpha = {alpha:g}; {need_alone} seeds are needed")
    elif not st.k:
        reason = "no seed has a value"
    per_seed = np.concatenate([np.atleast_1d(np.asarray(v, float)) for v in
                               (values if isinstance(alternative, tuple) else [values])])
    bound = signflip_bound(first_values, alternative=first, confidence=confidence) if st.k else math.nan
    low, high = (bound, math.inf) if first == "greater" else (-math.inf, bound)
    return Evidence(
        c["group"], c["dataset"], estimate=st.mean, ci_low=low, ci_high=high, p_for=float(p_for),
        floor=st.floor, family=SEED_FAMILY.format(model=c["group"]),
        detectable=f"{st.k} seeds: smallest one-sided sign-flip p 1/2^{st.k} = {st.floor:.3g}; seeds needed: "
                   f"{need_alone} for one claim at alpha = {alpha:g}, {need_family} in this family of {m} seed "
                   f"claims under {correction} (smallest p <= {level:.3g})",
        reason=reason, measure=f"{c['measure']}: mean over seeds", hypothesis=_hypothesis(c), detail=(
            f"{c['detail']}; per-seed values {', '.join(f'{v:+.3g}' for v in per_seed)}; the other direction: "
            f"sign-flip p = {p_other:.3g} (not part of the verdict)"))


def _hypothesis(c: dict) -> str:
    """The H0/H1 text of the test this evidence ran, in the direction it ran (``c["alternative"]``); ``""`` (the
    registry's text) for a claim the registry does not know."""
    return seed_hypothesis(c["key"], c["alternative"]) if c.get("key") in SEED_CLAIMS else ""


def seed_claims(claims: list[dict], *, alpha: float, confidence: float = 0.95,
                correction: str = "holm") -> pd.DataFrame:
    """The evidence of each claim over seeds (``claim`` and the :class:`Evidence` fields; ``model`` is the
    replicate group), for the registry of claims (:mod:`..claims` registers the keys):
    the exact sign-flip test over seeds, one-sided in the claimed direction, never a p-value of 0 (its floor is
    ``1/2^k``). The seed claims of one replicate group form one family (``family``), corrected with
    ``correction`` (the claims' correction: :func:`headstats.stats.existence.claims_correction`)."""
    sizes: dict[str, int] = {}
    for c in claims:
        sizes[c["group"]] = sizes.get(c["group"], 0) + 1
    rows = [{"claim": c["key"], **asdict(seed_evidence(c, alpha=alpha, confidence=confidence, m=sizes[c["group"]],
                                                         correction=correction))} for c in claims]
    return pd.DataFrame(rows, columns=["claim", *evidence_fields()])
