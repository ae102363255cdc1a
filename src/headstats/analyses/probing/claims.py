r"""The claim of Clark et al. (2019, "What Does BERT Look At?") on the probing analysis, registered as a test
(METHODS 2 and 5.1):

- ``probes_beat_baselines`` (``probes``): an attention probe beats both baselines (right-branching, distance and
  words); per probe the largest uncorrected p over the two baselines, then Holm over the attention probes and the
  smallest adjusted p.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.analyses.probing.tables import PROBES_TABLE
from headstats.stats.claims import ClaimSettings, Evidence, register_claim
from headstats.stats.existence import beats_every_p
from headstats.tables import RunTables

CLARK = "Clark et al. 2019"


@register_claim(
    "probes_beat_baselines", sentence="attention probes find syntax better than the baselines", source=CLARK,
    hypothesis="H0: no attention probe is more accurate (UAS) than both baselines; H1: some probe is",
    unit="words (held out)", test="per probe and baseline McNemar's exact test (probes.csv, uncorrected p); per "
                                  "probe the larger p of the two baselines, Holm over the probes, claim p = the "
                                  "smallest adjusted p",
    measure="best attention probe's UAS minus the better baseline's", tables=(PROBES_TABLE,))
def probes_beat_baselines(tables: RunTables, settings: ClaimSettings) -> list[Evidence]:
    out = []
    probes = tables[PROBES_TABLE]
    bases = [c.removeprefix("p_vs_") for c in probes.columns if c.startswith("p_vs_")]
    for (model, dataset), part in probes.groupby(["model", "dataset"], sort=False):
        attention = part[part["probe"].astype(str).str.startswith("attention")]
        if attention.empty or not bases:
            out.append(Evidence(str(model), str(dataset), reason="no attention probe was trained"))
            continue
        p_some, at = beats_every_p(attention[[f"p_vs_{b}" for b in bases]].astype(float).to_numpy())
        if at < 0:
            out.append(Evidence(str(model), str(dataset), reason="no held-out word took part"))
            continue
        best = attention.iloc[at]
        base_uas = part[part["probe"].astype(str).isin(bases)]["uas"].astype(float).max()
        out.append(Evidence(
            str(model), str(dataset), estimate=float(best["uas"]) - base_uas, p_for=p_some, underflow_only=True,
            detail=f"probe {best['probe']}: UAS {float(best['uas']):.3f} against the better baseline's "
                   f"{base_uas:.3f} on {int(best['n_words'])} held-out words"))
    return out