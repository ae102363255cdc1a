"""The evidence of the fine-tuning claims over seeds (Pande et al. 2021, section 6), from the per-seed values the
seed-level tables of :mod:`headstats.assignment.replicates` computed: the exact sign-flip test over seeds, its
floor, the t interval of the mean and, with too few seeds, the reason no verdict can be reached. The registry of
claims (:mod:`headstats.stats.claims`) turns it into verdicts.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pandas as pd

from headstats.stats.claims import Evidence, evidence_fields
from headstats.stats.exact import signflip_claim

__all__ = ["seed_claims", "seed_evidence"]


def seed_evidence(c: dict, *, alpha: float, confidence: float) -> Evidence:
    """One claim over seeds as :class:`Evidence`: the exact sign-flip test of its per-seed values (both tests of
    ``sep_attention_falls``: the [SEP] fall and the rise on other tokens, p the larger of the two), with the
    t interval of the mean and, when the seeds are too few for any p-value to reach alpha, the reason."""
    level = alpha / 2
    values, alternative = c["values"], c["alternative"]
    if isinstance(alternative, tuple):  # both must hold: intersection-union, p = max; against: either reversed
        tests = [signflip_claim(v, alternative=a, confidence=confidence, level=level)
                 for v, a in zip(values, alternative)]
        st = tests[0]
        p_for = max(t.p_for for t in tests)
        p_against = min(1.0, 2 * min(t.p_against for t in tests))
    else:
        st = signflip_claim(values, alternative=alternative, confidence=confidence, level=level)
        p_for, p_against = st.p_for, st.p_against
    reason = ""
    if st.k and min(1.0, 2 * st.floor) > alpha:
        reason = (f"too few seeds: with {st.k} seeds the exact sign-flip test's smallest p-value is 1/2^{st.k} = "
                  f"{st.floor:.3g} one-sided ({min(1.0, 2 * st.floor):.3g} both ways) > alpha = {alpha:g}; "
                  f"{st.seeds_needed} seeds are needed")
    elif not st.k:
        reason = "no seed has a value"
    per_seed = np.concatenate([np.atleast_1d(np.asarray(v, float)) for v in
                               (values if isinstance(alternative, tuple) else [values])])
    return Evidence(
        c["group"], c["dataset"], estimate=st.mean, ci_low=st.ci_low, ci_high=st.ci_high, p_for=float(p_for),
        p_against=float(p_against), floor=st.floor,
        detectable=f"{st.k} seeds: smallest one-sided sign-flip p 1/2^{st.k} = {st.floor:.3g}; "
                   f"{st.seeds_needed} seeds needed for p <= alpha both ways",
        reason=reason, measure=f"{c['measure']}: mean over seeds", detail=(
            f"{c['detail']}; per-seed values {', '.join(f'{v:+.3g}' for v in per_seed)}"))


def seed_claims(claims: list[dict], *, alpha: float, confidence: float = 0.95) -> pd.DataFrame:
    """The evidence of each claim over seeds (``claim`` and the :class:`Evidence` fields; ``model`` is the
    replicate group), for the registry of claims (:mod:`headstats.stats.paper_claims` registers the keys):
    the exact sign-flip test over seeds, never a p-value of 0 (its floor is ``1/2^k`` one-sided)."""
    rows = [{"claim": c["key"], **asdict(seed_evidence(c, alpha=alpha, confidence=confidence))} for c in claims]
    return pd.DataFrame(rows, columns=["claim", *evidence_fields()])
