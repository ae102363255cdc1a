"""The claim of ``peak``: most heads are peaked (one-sided exact binomial test of the share against 1/2)."""

from scipy.stats import binomtest

from headstats.stats.claims import Evidence, register_claim
from user_analysis.peak.tables import PEAK_SHARE


@register_claim("most_heads_peaked", sentence="most heads put most of each row on one key", source="a user",
                hypothesis="H0: the share of peaked heads <= 1/2; H1: it is larger", unit="heads",
                test="one-sided exact binomial test", measure="share of peaked heads minus 1/2",
                tables=(PEAK_SHARE,))
def most_heads_peaked(tables, settings):
    out = []
    for r in tables[PEAK_SHARE].itertuples():
        p = binomtest(int(r.n_peaked), int(r.n_heads), 0.5, alternative="greater").pvalue
        out.append(Evidence(str(r.model), str(r.dataset), estimate=float(r.share) - 0.5, p_for=float(p),
                            detail=f"{r.n_peaked} of {r.n_heads} heads peaked"))
    return out
