"""The ``peak`` finish step: the share of peaked heads per model and data set, with its Wilson interval."""

import pandas as pd

from headstats.stats.accuracy import proportion_interval
from user_analysis.peak.tables import PEAK, PEAK_SHARE


def finish_peak(tables, statistics, options, seed):
    rows = []
    for (model, dataset), part in tables[PEAK].groupby(["model", "dataset"], sort=False):
        peaked = int((part["peak"] > options.threshold).sum())
        rows.append({"model": model, "dataset": dataset, "n_heads": len(part), "n_peaked": peaked})
    share = pd.DataFrame(rows)
    share["share"] = share["n_peaked"] / share["n_heads"]
    share["ci_low"], share["ci_high"] = proportion_interval(share["n_peaked"], share["n_heads"],
                                                            confidence=statistics.confidence)
    share["threshold"] = options.threshold
    return {PEAK_SHARE.name: share}
