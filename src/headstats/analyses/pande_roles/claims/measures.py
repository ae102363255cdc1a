r"""Claims across attention measures (METHODS 6.1): do the heads that hold a role under the attention weights keep it
when the weights are scaled by what each key passes on (``norm``, Kobayashi et al. 2020)?

Kobayashi et al. (EMNLP 2020) found that much of BERT's attention to [CLS], [SEP] and punctuation carries vectors of
small norm, so that delimiter patterns largely disappear under norm weighting. ``survives_norm:<role>`` states the
opposite as the hypothesis to test, so that their finding reads as its contradiction:

- Unit: the heads of one (model, data set) that hold ``role`` under ``weights`` (``n``, from ``measure_agreement``,
  the run's per head and role assignment under each measure); ``k`` of them hold it under ``norm`` too.
- H0: a head assigned under the weights keeps the role under norm with probability 1/2 (``pi = 1/2``); H1 (claimed,
  "the role survives"): ``pi > 1/2``, most of them keep it; the opposite: ``pi < 1/2``, most lose it.
- Test: the exact binomial test of ``k`` successes in ``n`` against ``pi = 1/2`` (``scipy.stats.binomtest``), each
  direction one-sided, decided two-sided (METHODS 5.4): ``p = min(1, 2 min(p_for, p_against))``. Its floor is
  ``2^-n`` each way. The estimate is ``k / n`` with its Clopper-Pearson interval.

Heads are tested on the same inputs under both measures, so a head is its own control; the heads of a model are
not independent draws of a population of heads, and the verdict is about this model's heads (as every count claim
of Pande et al. is). The claim reads nothing but ``measure_agreement``, written only by a run of both measures.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
from scipy import stats as sps

from headstats.analyses.sieves import DEFAULT_ROLES
from headstats.stats.claims import ClaimSettings, Evidence, register_claim
from headstats.tables.study_tables import MEASURE_AGREEMENT

SOURCE = "Kobayashi et al. 2020 (norm-weighted attention, METHODS 6.1)"
#: The measure the heads are assigned under, and the one they must keep the role under.
FROM, TO = "weights", "norm"


def survives_evidence(agreement: pd.DataFrame, role: str, settings: ClaimSettings) -> list[Evidence]:
    """One :class:`Evidence` per (model, data set) of ``measure_agreement`` that tested ``role`` under both
    measures: ``k`` of the ``n`` heads holding it under the weights hold it under norm (see the module)."""
    if agreement is None or not {FROM, TO} <= set(agreement.columns):
        return []
    part = agreement[agreement["role"].astype(str) == role]
    out = []
    for (model, dataset), group in part.groupby(["model", "dataset"], sort=False):
        before = group[FROM].astype(bool).to_numpy()
        after = group[TO].astype(bool).to_numpy()
        n, k, n_after = int(before.sum()), int((before & after).sum()), int(after.sum())
        counts = (f"{k} of the {n} heads holding {role} under {FROM} hold it under {TO} ({n_after} of "
                  f"{len(group)} heads hold it under {TO})")
        if n == 0:
            out.append(Evidence(str(model), str(dataset), reason=f"too few heads: no head holds {role} under {FROM}",
                                detail=counts))
            continue
        floor = 0.5 ** n
        ci = sps.binomtest(k, n).proportion_ci(settings.confidence, method="exact")
        out.append(Evidence(
            str(model), str(dataset), estimate=k / n, ci_low=float(ci.low), ci_high=float(ci.high),
            p_for=float(sps.binomtest(k, n, 0.5, alternative="greater").pvalue),
            p_against=float(sps.binomtest(k, n, 0.5, alternative="less").pvalue), floor=floor, floor_against=floor,
            detectable=f"with {n} heads assigned under {FROM}, the smallest p either direction can reach is "
                       f"{min(1.0, 2 * floor):.3g}",
            detail=counts, underflow_only=True))
    return out


def _register(role: str) -> None:
    @register_claim(
        f"survives_{TO}:{role}", sentence=f"{role} heads remain under norm weighting (most heads holding it under "
                                          f"the weights hold it under norm)",
        source=SOURCE,
        hypothesis=f"H0: a head holding {role} under the weights keeps it under norm with probability 1/2; "
                   f"H1: with probability > 1/2 (the opposite, < 1/2, is Kobayashi et al.'s finding for delimiters)",
        unit="heads",
        test="exact binomial test of the k of n heads assigned under weights that keep the role under norm, "
             "against 1/2; one-sided each way",
        measure=f"share of the heads holding {role} under weights that hold it under norm",
        tables=(MEASURE_AGREEMENT,))
    def evaluate(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
        return survives_evidence(tables.get(MEASURE_AGREEMENT), role, settings)


for _role in DEFAULT_ROLES:
    _register(_role)
