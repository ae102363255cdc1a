r"""The claim of Clark et al. (2019, "What Does BERT Look At?") on the coreference analysis, registered as a test
(METHODS 2 and 5.1):

- ``coreference_head_beats_baselines`` (``coreference_tests``): some head selects antecedents better than every
  baseline; per head the largest uncorrected p over the baselines (it must beat each: intersection-union), then
  Holm over the heads and the smallest adjusted p (:func:`headstats.stats.existence.beats_every_p`). A baseline whose accuracy is 0 or 1 by construction (e.g. the same-head-word baseline on GAP) is left
  out and named: beating it means nothing.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.analyses.coreference.tables import COREFERENCE_TESTS
from headstats.stats.claims import ClaimSettings, Evidence, register_claim
from headstats.stats.existence import beats_every_p
from headstats.tables import RunTables

CLARK = "Clark et al. 2019"


def degenerate_baselines(table: pd.DataFrame, accuracy: str = "baseline_accuracy") -> list[str]:
    """The baselines whose accuracy is 0 or 1 on every row: constant by construction, never "beaten"."""
    out = []
    for name, part in table.groupby("baseline", sort=False):
        acc = part[accuracy].astype(float)
        if len(acc) and (np.allclose(acc, 0) or np.allclose(acc, 1)):
            out.append(str(name))
    return out


@register_claim(
    "coreference_head_beats_baselines", sentence="a head finds coreferent antecedents better than the baselines",
    source=CLARK,
    hypothesis="H0: no head is more accurate than every (non-degenerate) baseline; H1: some head is "
               "(accuracy_head > accuracy_baseline for every baseline)",
    unit="mentions", test="per head and baseline the sign-flip test over inputs (coreference_tests.csv, uncorrected "
                          "p); per head the largest p over the baselines (intersection-union), Holm over the heads, "
                          "claim p = the smallest adjusted p",
    measure="best head's accuracy minus the best baseline's", tables=(COREFERENCE_TESTS,))
def coreference_head_beats_baselines(tables: RunTables, settings: ClaimSettings) -> list[Evidence]:
    out = []
    tests = tables[COREFERENCE_TESTS]
    for (model, dataset), part in tests.groupby(["model", "dataset"], sort=False):
        flat = degenerate_baselines(part)
        note = (f"; left out (0 or 1 by construction, never beaten): {', '.join(flat)}" if flat else "")
        live = part[~part["baseline"].astype(str).isin(flat)]
        if live.empty:
            out.append(Evidence(str(model), str(dataset), reason="every baseline is 0 or 1 by construction" + note))
            continue
        keys = [c for c in ("mention_type", "layer", "head") if c in live.columns]
        wide = live.pivot_table(index=keys, columns="baseline", values="p_unc", aggfunc="first", dropna=False)
        if not np.isfinite(wide.to_numpy(float)).any():
            out.append(Evidence(str(model), str(dataset), reason="no mention took part" + note))
            continue
        p_some, at = beats_every_p(wide.to_numpy(float))
        if at < 0:
            out.append(Evidence(str(model), str(dataset), reason="no head was tested against every baseline" + note))
            continue
        unit = dict(zip(keys, wide.index[at] if len(keys) > 1 else (wide.index[at],)))
        rows = live
        for k, v in unit.items():
            rows = rows[rows[k] == v]
        best = {"acc": float(rows["accuracy"].iloc[0]), "base": float(rows["baseline_accuracy"].max()),
                "layer": unit.get("layer", -1), "head": unit.get("head", -1),
                "mention_type": unit.get("mention_type", "all")}
        out.append(Evidence(
            str(model), str(dataset), estimate=float(best["acc"]) - float(best["base"]), p_for=p_some, underflow_only=True,
            detail=f"head {int(best['layer'])}-{int(best['head'])} ({best.get('mention_type', 'all')} mentions): "
                   f"accuracy {float(best['acc']):.3f} against the best baseline's {float(best['base']):.3f}" + note))
    return out