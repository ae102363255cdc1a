"""Declared hypotheses about any per-input measure, tested one-sided per head with the house tests.

An analysis that keeps per-input measures as a :class:`~headstats.measures.MeasureArray` (surface patterns,
Clark et al. 2019) declares hypotheses such as "the head puts more than half its mass on the previous
token": a name, the measure, a threshold and optionally the layers they concern. :func:`test_measures`
turns each into the hypotheses ``H0: mean(measure) <= threshold`` against ``H1: > threshold`` of every head
(of the layers named), runs the chosen one-sample test with ``tau = threshold``
(:func:`headstats.stats.onesample.run_test`, the same code as the role tests), and corrects over the
declared family (:func:`headstats.stats.onesample.apply_correction`) -- the family spans the hypotheses:
with ``family: [model, dataset]`` all heads x hypotheses of one model on one data set form one family.
No new test is written here; only the packing differs.

The table has the columns of ``tests.csv`` (``role`` holds the hypothesis' name) plus ``measure`` and
``threshold``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from headstats.errors import ProtocolError
from headstats.measures import MeasureArray
from headstats.stats.onesample import TEST_COLUMNS, test_roles
from headstats.stats.options import TestOptions

#: Columns of :func:`test_measures`: those of ``tests.csv``, then the measure and its threshold.
MEASURE_TEST_COLUMNS: tuple[str, ...] = (*TEST_COLUMNS, "measure", "threshold")


def _hypothesis(h: Mapping | object) -> tuple[str, str, float, list[int] | None]:
    get = h.get if isinstance(h, Mapping) else (lambda k, d=None: getattr(h, k, d))
    name, measure, threshold = get("name"), get("measure"), get("threshold")
    if not name or not measure or threshold is None:
        raise ProtocolError(f"hypothesis {h!r} needs 'name', 'measure' and 'threshold'")
    layers = get("layers", None)
    return str(name), str(measure), float(threshold), (None if layers is None else [int(x) for x in layers])


def test_measures(
    arrays: MeasureArray | Sequence[MeasureArray],
    hypotheses: Sequence[Mapping | object],
    *,
    options: TestOptions | None = None,
    alpha: float | None = None,
    test: str | None = None,
    correction: str | None = None,
    family: Sequence[str] | None = None,
    confidence: float | None = None,
    seed: int = 0,
    min_n: int | None = None,
    n_resamples: int | str | None = None,
    power_target: float | None = None,
    effect_of_interest: float | None = None,
    tau: object = None,
) -> pd.DataFrame:
    """Test every declared hypothesis for every head (of its layers) of every array.

    Each hypothesis becomes a "role" whose tau is its threshold, and the whole family goes through
    :func:`headstats.stats.onesample.test_roles` (the same tests, corrections, bounds and power as the role
    scores); heads of layers a hypothesis does not concern take no part (nor count in the family).

    Parameters
    ----------
    arrays : MeasureArray or list of them
        Per-input measures, one array per model and data set; NaN = the input takes no part.
    hypotheses : sequence of mappings (or objects) with ``name, measure, threshold`` and optional ``layers``
        ``H0: mean(measure) <= threshold`` per head, one-sided (upper tail), as the role tests (METHODS 1.4).
    options, alpha, test, correction, family, confidence, seed, min_n, n_resamples, power_target, effect_of_interest
        As :func:`headstats.stats.onesample.test_roles` (one :class:`~headstats.stats.options.TestOptions`, each
        field replaceable by its keyword); ``family`` may name ``role`` (= the hypothesis).
    tau : ignored
        Accepted so that the study's statistics keywords can be passed unchanged; each hypothesis has its
        own threshold.

    Returns
    -------
    pandas.DataFrame
        One row per (model, dataset, hypothesis, layer, head), columns :data:`MEASURE_TEST_COLUMNS`,
        sorted by model, dataset, hypothesis (declared order), layer, head.
    """
    arrays = [arrays] if isinstance(arrays, MeasureArray) else list(arrays)
    parsed = [_hypothesis(h) for h in hypotheses]
    names = [p[0] for p in parsed]
    if len(set(names)) != len(names):
        raise ProtocolError(f"hypothesis names must be unique; got {', '.join(names)}")
    if not parsed or not arrays:
        return pd.DataFrame(columns=list(MEASURE_TEST_COLUMNS))
    stacked = []
    for a in arrays:
        columns = []
        for name, measure, threshold, layers in parsed:
            if measure not in a.measures:
                raise ProtocolError(f"hypothesis {name!r} names measure {measure!r}, which {a.model}/{a.dataset} "
                                    f"does not have; choose among {', '.join(a.measures)}")
            v = a.values[..., a.measures.index(measure)].astype(np.float32, copy=True)
            if layers is not None:
                v[:, [layer not in layers for layer in range(v.shape[1])]] = np.nan
            columns.append(v)
        stacked.append(MeasureArray(a.model, a.dataset, a.sentence_ids, tuple(names), np.stack(columns, -1)))
    frame = test_roles(stacked, options=options, tau={name: threshold for name, _, threshold, _ in parsed},
                       alpha=alpha, test=test, correction=correction, family=family, confidence=confidence, seed=seed,
                       min_n=min_n, n_resamples=n_resamples, power_target=power_target,
                       effect_of_interest=effect_of_interest)
    wanted = {name: layers for name, _, _, layers in parsed}
    keep = [wanted[r] is None or layer in wanted[r] for r, layer in zip(frame["role"].astype(str), frame["layer"])]
    frame = frame[keep]
    measure_of = {name: measure for name, measure, _, _ in parsed}
    frame = frame.assign(measure=frame["role"].astype(str).map(measure_of), threshold=frame["tau"])
    order = {n: i for i, n in enumerate(names)}
    frame = frame.assign(_h=frame["role"].astype(str).map(order)).sort_values(
        ["model", "dataset", "_h", "layer", "head"], kind="stable").drop(columns="_h")
    return frame.loc[:, list(MEASURE_TEST_COLUMNS)].reset_index(drop=True)


def passing_heads(tests: pd.DataFrame) -> pd.DataFrame:
    """The heads that pass each hypothesis: ``model, dataset, role, n_heads, heads`` (``"layer-head"`` list)."""
    rows = []
    for (model, dataset, role), part in tests.groupby(["model", "dataset", "role"], sort=False):
        held = part[part["reject"].fillna(False).astype(bool)]
        rows.append((model, dataset, role, str(part["measure"].iloc[0]), float(part["threshold"].iloc[0]),
                     int(len(held)), int(len(part)),
                     ", ".join(f"{int(r.layer)}-{int(r.head)}" for r in held.itertuples())))
    return pd.DataFrame(rows, columns=["model", "dataset", "role", "measure", "threshold", "n_heads", "n_tested",
                                       "heads"])


test_measures.__test__ = False  # type: ignore[attr-defined]
__all__ = ["MEASURE_TEST_COLUMNS", "passing_heads", "test_measures"]
