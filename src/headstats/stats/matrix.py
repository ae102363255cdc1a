"""Scores in, one matrix of hypotheses x inputs out: what every test, correction and table works on.

The statistics accept the per-input scores in three forms and turn each into a :class:`ScoreMatrix`:

* a list of :class:`~headstats.measures.MeasureArray` (one per model and data set, float32
  ``(inputs, layers, heads, roles)``, NaN = not taking part) -- what a run holds; reshaped, never pivoted;
* the long table ``model, dataset, sentence_id, layer, head, role, score`` (``scores.parquet``);
* a :class:`ScoreMatrix` already built, so that a study packs its scores once for all its tables.

Both paths give the same matrix: hypotheses sorted by ``(model, dataset, role, layer, head)`` (text keys in
lexical order, also when a column is categorical), and each hypothesis' finite scores ordered by
``sentence_id``, packed to the left. So the tables do not depend on which form came in.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Union

import numpy as np
import pandas as pd

from headstats.errors import HeadstatsError
from headstats.measures import MeasureArray

#: The columns of the scores table that a test needs.
SCORE_COLUMNS: tuple[str, ...] = ("model", "dataset", "sentence_id", "layer", "head", "role", "score")
#: One hypothesis per distinct value of these columns.
HYPOTHESIS_KEYS: tuple[str, ...] = ("model", "dataset", "role", "layer", "head")

@dataclass
class ScoreMatrix:
    """The scores of all hypotheses, one row each, NaNs removed and packed to the left.

    Attributes
    ----------
    keys : pandas.DataFrame
        One row per hypothesis, columns :data:`HYPOTHESIS_KEYS`, sorted.
    values : numpy.ndarray
        ``(G, max_n)`` float64; row g holds the ``n[g]`` participating scores of hypothesis g ordered by
        ``sentence_id``, then NaN.
    n, n_missing : numpy.ndarray
        Participating inputs and NaN scores (inputs that did not take part) per hypothesis.
    """

    keys: pd.DataFrame
    values: np.ndarray
    n: np.ndarray
    n_missing: np.ndarray
    _moments: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)

    def blocks(self, min_n: int = 1) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(rows, x)``: the hypotheses with the same n (>= ``min_n``) and their ``(k, n)`` scores."""
        for m in np.unique(self.n):
            if m < max(min_n, 1):
                continue
            rows = np.nonzero(self.n == m)[0]
            yield rows, self.values[rows, :m]

    def moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mean, sd (ddof = 1) and median of each hypothesis (NaN where undefined); computed once."""
        if self._moments is None:
            g = self.values.shape[0]
            mean, sd, median = np.full(g, np.nan), np.full(g, np.nan), np.full(g, np.nan)
            for rows, x in self.blocks():
                mean[rows] = x.mean(axis=1)
                median[rows] = np.median(x, axis=1)
                if x.shape[1] > 1:
                    sd[rows] = x.std(axis=1, ddof=1)
            self._moments = (mean, sd, median)
        return self._moments


#: What the statistics accept as scores (see the module docstring).
ScoresLike = Union[pd.DataFrame, MeasureArray, Sequence[MeasureArray], ScoreMatrix]


def score_matrix(scores: ScoresLike) -> ScoreMatrix:
    """Validate the scores, in any of the forms of the module docstring, and pack them.

    Raises
    ------
    HeadstatsError
        When a column is missing, ``score`` is not numeric or holds +-inf, a (model, dataset, sentence_id,
        layer, head, role) appears twice, or two arrays are of the same model and data set.
    TypeError
        For anything else than the forms above.
    """
    if isinstance(scores, ScoreMatrix):
        return scores
    if isinstance(scores, MeasureArray):
        return score_matrix_from_arrays([scores])
    if isinstance(scores, pd.DataFrame):
        return score_matrix_from_frame(scores)
    if isinstance(scores, (list, tuple)) and all(isinstance(a, MeasureArray) for a in scores):
        return score_matrix_from_arrays(scores)
    raise TypeError(
        "scores must be a pandas DataFrame (the long scores table), a MeasureArray or a list of them, "
        f"got {type(scores).__name__}"
    )


# ----------------------------------------------------------------------------------------------------------
# arrays
# ----------------------------------------------------------------------------------------------------------
def score_matrix_from_arrays(arrays: Sequence[MeasureArray]) -> ScoreMatrix:
    """Pack ``(inputs, layers, heads, roles)`` arrays into a :class:`ScoreMatrix` by reshaping them."""
    arrays = sorted(arrays, key=lambda a: (a.model, a.dataset))
    seen = [(a.model, a.dataset) for a in arrays]
    for i in range(1, len(seen)):
        if seen[i] == seen[i - 1]:
            raise HeadstatsError(
                f"two score arrays for model={seen[i][0]!r}, dataset={seen[i][1]!r}; give one array per "
                "model and data set"
            )
    parts = [_array_rows(a) for a in arrays]
    if not parts:
        empty = pd.DataFrame({k: pd.Series([], dtype=object if k in ("model", "dataset", "role") else np.int16)
                              for k in HYPOTHESIS_KEYS})
        return ScoreMatrix(empty, np.empty((0, 0)), np.zeros(0, int), np.zeros(0, int))
    width = max(p[1].shape[1] for p in parts)
    g = sum(p[1].shape[0] for p in parts)
    values = np.full((g, width), np.nan)
    start = 0
    for _, x, _ in parts:
        values[start:start + x.shape[0], :x.shape[1]] = x
        start += x.shape[0]
    keys = pd.concat([p[0] for p in parts], ignore_index=True)
    n = np.concatenate([p[2] for p in parts])
    n_inputs = np.concatenate([np.full(p[1].shape[0], p[1].shape[1]) for p in parts])
    return ScoreMatrix(keys, values, n.astype(int), (n_inputs - n).astype(int))


def _array_rows(a: MeasureArray) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Keys, packed ``(roles x layers x heads, inputs)`` scores and n of one array, in sorted key order."""
    n_inputs, layers, heads, _ = a.values.shape
    order = np.argsort(a.sentence_ids, kind="stable")
    roles = np.asarray(a.measures, dtype=object)
    role_order = np.argsort(roles.astype(str), kind="stable")
    x = a.values[order].transpose(3, 1, 2, 0)[role_order].reshape(-1, n_inputs).astype(np.float64)
    if np.isinf(x).any():
        raise HeadstatsError(
            f"the scores of {a.model}/{a.dataset} hold {int(np.isinf(x).sum())} infinite value(s); "
            "use NaN for an input that did not take part"
        )
    missing = np.isnan(x)
    n = n_inputs - missing.sum(axis=1)
    if missing.any():
        x = np.take_along_axis(x, np.argsort(missing, axis=1, kind="stable"), axis=1)
    per_role = layers * heads
    keys = pd.DataFrame({
        "model": np.full(x.shape[0], a.model, dtype=object),
        "dataset": np.full(x.shape[0], a.dataset, dtype=object),
        "role": np.repeat(roles[role_order].astype(str).astype(object), per_role),
        "layer": np.tile(np.repeat(np.arange(layers, dtype=np.int16), heads), len(roles)),
        "head": np.tile(np.arange(heads, dtype=np.int16), layers * len(roles)),
    })
    for k in ("model", "dataset", "role"):
        keys[k] = keys[k].astype(str)
    return keys, x, n


# ----------------------------------------------------------------------------------------------------------
# the long table
# ----------------------------------------------------------------------------------------------------------
def score_matrix_from_frame(scores: pd.DataFrame) -> ScoreMatrix:
    """Validate a long scores table and pack it into a :class:`ScoreMatrix`."""
    missing = [c for c in SCORE_COLUMNS if c not in scores.columns]
    if missing:
        raise HeadstatsError(
            f"scores table lacks column(s) {', '.join(missing)}; it needs {', '.join(SCORE_COLUMNS)}"
        )
    try:
        score = scores["score"].to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise HeadstatsError(f"column 'score' must be numeric: {exc}") from None
    if np.isinf(score).any():
        raise HeadstatsError(
            f"column 'score' holds {int(np.isinf(score).sum())} infinite value(s); "
            "use NaN for an input that did not take part"
        )
    keys = list(HYPOTHESIS_KEYS)
    if len(scores) == 0:
        empty = pd.DataFrame({k: scores[k].iloc[:0] for k in keys})
        return ScoreMatrix(empty, np.empty((0, 0)), np.zeros(0, int), np.zeros(0, int))
    codes = []
    uniques = []
    for k in keys:
        c, u = _factorize_sorted(scores[k])
        codes.append(c)
        uniques.append(u)
    sid, _ = _factorize_sorted(scores["sentence_id"])
    # one integer per hypothesis, in sorted key order
    radix = np.ones(len(keys), dtype=np.int64)
    for i in range(len(keys) - 2, -1, -1):
        radix[i] = radix[i + 1] * len(uniques[i + 1])
    combined = sum(c.astype(np.int64) * r for c, r in zip(codes, radix, strict=True))
    hyp, gid = np.unique(combined, return_inverse=True)
    g = hyp.size
    order = np.lexsort((sid, gid))
    gid_s, sid_s = gid[order], sid[order]
    dup = (np.diff(gid_s) == 0) & (np.diff(sid_s) == 0)
    if dup.any():
        first = order[np.nonzero(dup)[0][0]]
        row = scores.iloc[first]
        raise HeadstatsError(
            "scores table has duplicate rows for one (model, dataset, sentence_id, layer, head, role), e.g. "
            + ", ".join(f"{c}={row[c]!r}" for c in SCORE_COLUMNS[:-1])
        )
    finite = ~np.isnan(score)
    n = np.bincount(gid[finite], minlength=g)
    n_missing = np.bincount(gid[~finite], minlength=g)
    keep = order[finite[order]]
    gk = gid[keep]
    starts = np.concatenate([[0], np.cumsum(n)[:-1]])
    pos = np.arange(keep.size) - starts[gk]
    values = np.full((g, int(n.max()) if g else 0), np.nan)
    values[gk, pos] = score[keep]
    key_cols = {}
    rem = hyp.copy()
    for k, u, r in zip(keys, uniques, radix, strict=True):
        key_cols[k] = u.take(rem // r) if hasattr(u, "take") else np.asarray(u)[rem // r]
        rem = rem % r
    key_frame = pd.DataFrame(key_cols)
    for k in keys:
        dtype = scores[k].dtype
        if dtype != object and not isinstance(dtype, pd.CategoricalDtype) and key_frame[k].dtype != dtype:
            try:
                key_frame[k] = key_frame[k].astype(dtype)
            except (TypeError, ValueError):
                pass
    return ScoreMatrix(key_frame, values, n.astype(int), n_missing.astype(int))


def _factorize_sorted(col: pd.Series) -> tuple[np.ndarray, object]:
    """Codes and uniques in sorted order of the *values* (a categorical's categories sorted too)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes, uniques = pd.factorize(col, sort=False, use_na_sentinel=False)
        values = np.asarray(uniques)
        try:
            order = np.argsort(values, kind="stable")
        except TypeError:
            order = np.argsort(values.astype(str), kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        return rank[codes], pd.Index(values[order])
    try:
        return pd.factorize(col, sort=True, use_na_sentinel=False)
    except TypeError:  # mixed types: order by their text
        return pd.factorize(col.astype(str), sort=True, use_na_sentinel=False)
