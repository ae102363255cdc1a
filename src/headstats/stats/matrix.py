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

from collections.abc import Iterator, Mapping, Sequence
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
    #: Draw-free bounds computed for this matrix, by (row, statistic): the tests and tables of one study (the
    #: test table, the tau grid) compute each once (:func:`~headstats.stats.onesample.tailbound.bootstrap_t_tail`)
    bounds: dict = field(default_factory=dict, repr=False, compare=False)

    def blocks(self, min_n: int = 1) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(rows, x)``: the hypotheses with the same n (>= ``min_n``) and their ``(k, n)`` scores.

        ``x`` is read-only: a view of :attr:`values` when the rows are adjacent (the usual case: the heads of
        one role share their inputs), else a copy.
        """
        for m in np.unique(self.n):
            if m < max(min_n, 1):
                continue
            rows = np.nonzero(self.n == m)[0]
            if rows[-1] - rows[0] + 1 == rows.size:
                x = self.values[rows[0]:rows[-1] + 1, :m]
            else:
                x = self.values[rows, :m]
            x.flags.writeable = False
            yield rows, x

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


    def take(self, rows: np.ndarray) -> "ScoreMatrix":
        """The hypotheses ``rows`` (in that order) as a matrix of their own."""
        rows = np.asarray(rows)
        return ScoreMatrix(self.keys.iloc[rows].reset_index(drop=True), self.values[rows], self.n[rows],
                           self.n_missing[rows])


def tau_rows(keys: pd.DataFrame, tau) -> float | np.ndarray:
    """tau per hypothesis: a number stays a number; a mapping ``role -> tau`` (``default`` for the roles it
    does not name, else 3) becomes one float per row of ``keys``."""
    if not isinstance(tau, Mapping):
        return tau
    default = float(tau.get("default", 3.0))
    roles = keys["role"].astype(str).to_numpy()
    return np.array([float(tau.get(r, default)) for r in roles], dtype=float) if len(roles) else np.zeros(0)


def by_tau(tau: np.ndarray) -> Iterator[tuple[float, np.ndarray]]:
    """``(tau, rows)`` for each distinct value of a per-hypothesis tau."""
    for value in np.unique(tau):
        yield float(value), np.flatnonzero(tau == value)


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
    """Pack ``(inputs, layers, heads, roles)`` arrays into a :class:`ScoreMatrix` by reshaping them.

    Arrays are taken in ``(model, dataset)`` order, roles in lexical order, inputs in ``sentence_id`` order.
    When every head of a role has the same inputs taking part (the usual case: taking part depends on the
    input, not the head), the role is packed with one column selection; otherwise row by row.
    """
    arrays = sorted(arrays, key=lambda a: (a.model, a.dataset))
    seen = [(a.model, a.dataset) for a in arrays]
    for i in range(1, len(seen)):
        if seen[i] == seen[i - 1]:
            raise HeadstatsError(
                f"two score arrays for model={seen[i][0]!r}, dataset={seen[i][1]!r}; give one array per "
                "model and data set"
            )
    for a in arrays:
        if np.isinf(a.values).any():
            raise HeadstatsError(
                f"the scores of {a.model}/{a.dataset} hold {int(np.isinf(a.values).sum())} infinite value(s); "
                "use NaN for an input that did not take part"
            )
    sizes = [a.n_layers * a.n_heads * len(a.measures) for a in arrays]
    width = max((a.n_inputs for a in arrays), default=0)
    values = np.full((sum(sizes), width), np.nan)
    n = np.zeros(sum(sizes), dtype=int)
    n_missing = np.zeros(sum(sizes), dtype=int)
    keys = []
    start = 0
    for a, size in zip(arrays, sizes, strict=True):
        rows = slice(start, start + size)
        keys.append(_pack_array(a, values[rows], n[rows], n_missing[rows]))
        start += size
    if not keys:
        empty = pd.DataFrame({k: pd.Series([], dtype=object if k in ("model", "dataset", "role") else np.int16)
                              for k in HYPOTHESIS_KEYS})
        return ScoreMatrix(empty, values, n, n_missing)
    return ScoreMatrix(pd.concat(keys, ignore_index=True), values, n, n_missing)


def _pack_array(a: MeasureArray, out: np.ndarray, n: np.ndarray, n_missing: np.ndarray) -> pd.DataFrame:
    """Write one array's packed scores into ``out`` (``(roles x layers x heads, >= inputs)``, NaN-filled)
    and its counts into ``n``/``n_missing``; return its keys, in sorted order."""
    n_inputs, layers, heads, _ = a.values.shape
    per_role = layers * heads
    order = np.argsort(a.sentence_ids, kind="stable")
    roles = np.asarray(a.measures, dtype=str)
    role_order = np.argsort(roles, kind="stable")
    for j, r in enumerate(role_order):
        block = a.values[..., r].reshape(n_inputs, per_role)[order].T  # (heads, inputs), inputs sorted
        missing = np.isnan(block)
        rows = slice(j * per_role, (j + 1) * per_role)
        if per_role and (missing == missing[0]).all():  # the same inputs take part for every head
            keep = np.flatnonzero(~missing[0])
            out[rows, :keep.size] = block[:, keep]
            n[rows] = keep.size
        else:
            packed = np.take_along_axis(block, np.argsort(missing, axis=1, kind="stable"), axis=1)
            out[rows, :n_inputs] = packed
            n[rows] = n_inputs - missing.sum(axis=1)
        n_missing[rows] = n_inputs - n[rows]
    keys = pd.DataFrame({
        "model": np.full(per_role * roles.size, a.model, dtype=object),
        "dataset": np.full(per_role * roles.size, a.dataset, dtype=object),
        "role": np.repeat(roles[role_order].astype(object), per_role),
        "layer": np.tile(np.repeat(np.arange(layers, dtype=np.int16), heads), roles.size),
        "head": np.tile(np.arange(heads, dtype=np.int16), layers * roles.size),
    })
    for k in ("model", "dataset", "role"):
        keys[k] = keys[k].astype(str)
    return keys


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
