"""Per-input measures as arrays: the one container every analysis and statistic shares.

A :class:`MeasureArray` holds, for one model on one data set, a float32 array ``values`` of shape
``(inputs, layers, heads, measures)`` with the inputs' ``sentence_ids``; NaN marks an input that takes no part
in a measure (for a role: no arc of its relation). Long tables are made only when written or asked for
(:meth:`MeasureArray.to_frame`), never held during a run: 12,544 inputs x 72 heads x 9 roles are 32 MiB here
and 875 MiB as a long frame with string columns.

This module imports numpy, pandas and pyarrow only, so the statistics layer can use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from headstats.errors import IncompatibleResultsError

#: Columns of the long scores table (``scores.parquet``); layers and heads are 0-indexed.
SCORE_COLUMNS = ["model", "dataset", "measure", "sentence_id", "layer", "head", "role", "score"]
#: The attention measure of scores that name none (a table written before the ``measure`` column, an array).
WEIGHTS = "weights"


@dataclass(frozen=True)
class MeasureArray:
    """Per-input measures of one model on one data set.

    Attributes
    ----------
    model, dataset : str
        Names as in the protocol.
    sentence_ids : ndarray of str, shape (N,)
        The inputs, in the order of ``values``' first axis.
    measures : tuple of str
        Names of the last axis (for role scores: the roles).
    values : ndarray of float32, shape (N, L, H, M)
        NaN where an input takes no part in a measure.
    provenance : dict
        What produced the values (model weights hash, tokenizer fingerprint, data hashes, options).
    ceilings : ndarray of float32, shape (N, M), optional
        Per input and measure, the largest value a head could reach (role scores: the score of a perfect
        head, METHODS 1.6); NaN where the input takes no part; None when unknown.
    attention_measure : str
        The attention the values were computed on (METHODS 6.1): ``weights`` (the maps the model returns) or
        ``norm`` (norm-weighted); the ``measure`` column of the long scores table.
    """

    model: str
    dataset: str
    sentence_ids: np.ndarray
    measures: tuple[str, ...]
    values: np.ndarray
    provenance: dict = field(default_factory=dict, compare=False)
    ceilings: np.ndarray | None = field(default=None, compare=False)
    attention_measure: str = "weights"

    @property
    def origin(self):
        """The typed :class:`~headstats.provenance.Provenance` of these values: the model's weights and tokenizer,
        and a sha256 of the inputs (what the manifest and the API's tables carry too)."""
        from headstats.provenance import Provenance

        return Provenance.of_array(self)

    def __post_init__(self) -> None:
        values = np.asarray(self.values)
        if values.ndim != 4:
            raise ValueError(f"values must be (inputs, layers, heads, measures), got shape {values.shape}")
        ids = np.asarray(self.sentence_ids, dtype=object).astype(str)
        if len(ids) != values.shape[0] or len(self.measures) != values.shape[3]:
            raise ValueError(f"{len(ids)} ids and {len(self.measures)} measures do not fit values {values.shape}")
        object.__setattr__(self, "values", values.astype(np.float32, copy=False))
        object.__setattr__(self, "sentence_ids", ids)
        object.__setattr__(self, "measures", tuple(self.measures))
        if self.ceilings is not None:
            ceilings = np.asarray(self.ceilings, dtype=np.float32)
            if ceilings.shape != (values.shape[0], values.shape[3]):
                raise ValueError(f"ceilings must be (inputs, measures) = {(values.shape[0], values.shape[3])}, "
                                 f"got {ceilings.shape}")
            object.__setattr__(self, "ceilings", ceilings)

    @property
    def n_inputs(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_layers(self) -> int:
        return int(self.values.shape[1])

    @property
    def n_heads(self) -> int:
        return int(self.values.shape[2])

    def measure(self, name: str) -> np.ndarray:
        """The ``(inputs, layers, heads)`` values of one measure."""
        try:
            return self.values[..., self.measures.index(name)]
        except ValueError:
            raise KeyError(f"no measure {name!r}; have {', '.join(self.measures)}") from None

    def select(self, measures: Sequence[str]) -> "MeasureArray":
        """A view with only ``measures``, in that order."""
        index = [self.measures.index(m) for m in measures]
        return MeasureArray(self.model, self.dataset, self.sentence_ids, tuple(measures),
                            self.values[..., index], self.provenance,
                            None if self.ceilings is None else self.ceilings[:, index], self.attention_measure)

    def to_frame(self, *, measure_column: str = "role", value_column: str = "score") -> pd.DataFrame:
        """The long table, row order (input, layer, head, measure), keys as categoricals.

        With the default column names this is the schema of ``scores.parquet``: ``model, dataset, measure,
        sentence_id, layer, head, role, score`` (``measure``: :attr:`attention_measure`).
        """
        n, layers, heads, m = self.values.shape
        rows = n * layers * heads * m
        s_idx = np.repeat(np.arange(n), layers * heads * m)
        l_idx = np.tile(np.repeat(np.arange(layers, dtype=np.int16), heads * m), n)
        h_idx = np.tile(np.repeat(np.arange(heads, dtype=np.int16), m), n * layers)
        r_idx = np.tile(np.arange(m), n * layers * heads)
        return pd.DataFrame({
            "model": pd.Categorical.from_codes(np.zeros(rows, dtype=np.int8), [self.model]),
            "dataset": pd.Categorical.from_codes(np.zeros(rows, dtype=np.int8), [self.dataset]),
            "measure": pd.Categorical.from_codes(np.zeros(rows, dtype=np.int8), [self.attention_measure]),
            "sentence_id": pd.Categorical.from_codes(s_idx, _unique_categories(self.sentence_ids)) if n else
            pd.Categorical([]),
            "layer": l_idx,
            "head": h_idx,
            measure_column: pd.Categorical.from_codes(r_idx, list(self.measures)),
            value_column: self.values.reshape(-1),
        })

    def _summary(self) -> tuple[str, list[str], list[list[object]], dict[str, object]]:
        """Title (plain text), columns, one row per measure (inputs taking part, mean over inputs and heads,
        the head with the highest mean) and provenance facts: what both reprs show."""
        import warnings

        n, layers, heads, m = self.values.shape
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN heads (a role no input takes part in)
            taking_part = np.isfinite(self.values).any(axis=(1, 2)).sum(axis=0) if n else np.zeros(m, int)
            head_means = np.nanmean(self.values, axis=0) if n else np.full((layers, heads, m), np.nan)
        rows: list[list[object]] = []
        for k, name in enumerate(self.measures):
            means = head_means[..., k]
            if np.isfinite(means).any():
                layer, head = np.unravel_index(np.nanargmax(means), means.shape)
                best, mean = f"{layer}, {head} ({means[layer, head]:.3g})", f"{np.nanmean(means):.3g}"
            else:
                best = mean = ""
            rows.append([name, int(taking_part[k]), mean, best])
        model = self.provenance.get("model", {})
        model = model if isinstance(model, dict) else {}
        facts = {"model": model.get("hub_id") or model.get("path"), "revision": model.get("revision"),
                 "architecture": model.get("architecture"),
                 "weights sha256": ", ".join(f"{k} {v[:12]}" for k, v in (model.get("weights_sha256") or {}).items()
                                             if isinstance(v, str)),
                 "sentence ids": ", ".join(self.sentence_ids[:3]) + (", ..." if n > 3 else "")}
        title = (f"{self.model!r} on {self.dataset!r}: {n:,} inputs x {layers} layers x {heads} heads x {m} "
                 f"measures (float32, {self.values.nbytes / 2**20:.1f} MiB; layers and heads from 0)")
        return title, ["measure", "inputs taking part", "mean", "highest head (layer, head)"], rows, facts

    def __repr__(self) -> str:
        """At most 15 lines: the shape, one line per measure (the first few), the provenance."""
        return self.summary_text()

    def summary_text(self, max_lines: int | None = None) -> str:
        """The ``repr``: the shape, one line per measure (as many as fit), the provenance, in at most
        ``max_lines`` lines (default :data:`REPR_LINES`)."""
        title, columns, rows, facts = self._summary()
        return text_summary(f"MeasureArray {title}", columns, rows, facts, what="measures",
                            max_lines=max_lines or REPR_LINES)

    def _repr_html_(self) -> str:
        """A short HTML summary for Jupyter: the shape, one row per measure (inputs taking part, mean over
        inputs and heads, the head with the highest mean) and the provenance (model source, weights hash)."""
        import html

        n, layers, heads, m = self.values.shape
        _, columns, rows, facts = self._summary()
        more = f"and {m - HTML_ROWS} more measures" if m > HTML_ROWS else ""
        title = (f"<b>MeasureArray</b> <code>{html.escape(self.model)}</code> on <code>{html.escape(self.dataset)}"
                 f"</code>: {n:,} inputs &times; {layers} layers &times; {heads} heads &times; {m} measures "
                 f"(float32, {self.values.nbytes / 2**20:.1f} MiB; layers and heads from 0)")
        return html_summary(title, columns, rows[:HTML_ROWS], facts, more)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, *, measure_column: str = "role",
                   value_column: str = "score") -> list["MeasureArray"]:
        """One array per (model, dataset, measure) of a long table (the inverse of :meth:`to_frame`; a table without
        a ``measure`` column is of the weights)."""
        out = []
        if "measure" not in frame.columns:
            frame = frame.assign(measure=WEIGHTS)
        for (model, dataset, attention), part in frame.groupby(["model", "dataset", "measure"], sort=False,
                                                               observed=True):
            ids = pd.unique(part["sentence_id"].astype(str))
            measures = tuple(pd.unique(part[measure_column].astype(str)))
            layers = int(part["layer"].max()) + 1
            heads = int(part["head"].max()) + 1
            values = np.full((len(ids), layers, heads, len(measures)), np.nan, dtype=np.float32)
            s = pd.Index(ids).get_indexer(part["sentence_id"].astype(str))
            r = pd.Index(measures).get_indexer(part[measure_column].astype(str))
            values[s, part["layer"].to_numpy(), part["head"].to_numpy(), r] = part[value_column].to_numpy()
            out.append(cls(str(model), str(dataset), ids, measures, values, attention_measure=str(attention)))
        return out


#: Rows shown by the HTML summaries of :class:`MeasureArray` (and the study's results).
HTML_ROWS = 12


#: Most lines of a result object's ``repr`` (:func:`text_summary`).
REPR_LINES = 15


def _cut(text: object, width: int) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= width else text[: width - 3] + "..."


def text_summary(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]],
                 facts: dict[str, object] | None = None, *, what: str = "rows", max_lines: int = REPR_LINES,
                 width: int = 110) -> str:
    """A result object's ``repr``: a title line, an aligned table and ``key: value`` facts (empty values left
    out), in at most ``max_lines`` lines of at most about ``width`` characters; rows that do not fit are
    counted (``... and 7 more measures``). The plain-text twin of :func:`html_summary`."""
    shown_facts = [f"  {k}: {_cut(v, width - len(k) - 4)}" for k, v in (facts or {}).items()
                   if v not in (None, "", [], {})]
    room = max_lines - 2 - len(shown_facts) - (1 if columns else 0)  # title and "... more" lines
    if room < 1:  # facts give way to rows
        shown_facts = shown_facts[: max(0, len(shown_facts) + room - 1)]
        room = max_lines - 2 - len(shown_facts) - (1 if columns else 0)
    if len(rows) <= room + 1:
        room = len(rows)
    cells = [[_cut(c, 40) for c in columns]] + [[_cut(v, 40) for v in row] for row in rows[:room]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    table = ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells] if columns else []
    more = [f"  ... and {len(rows) - room} more {what}"] if len(rows) > room else []
    return "\n".join([_cut(title, width + 20), *table, *more, *shown_facts])


def html_summary(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]],
                 facts: dict[str, object] | None = None, note: str = "") -> str:
    """A short HTML block for Jupyter: a title line (HTML), a table, a note and ``key: value`` facts (empty
    values left out). Cells and facts are escaped."""
    import html

    esc = lambda value: html.escape("" if value is None else str(value))  # noqa: E731
    head = "".join(f"<th style='text-align:left'>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{esc(v)}</td>" for v in row) + "</tr>"
                   for row in rows)
    shown = [f"{esc(k)}: {esc(v)}" for k, v in (facts or {}).items() if v not in (None, "", [], {})]
    return (f"<div class='headstats'><p>{title}</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            f"</table>" + (f"<p><small>{esc(note)}</small></p>" if note else "")
            + (f"<p><small>{'<br>'.join(shown)}</small></p>" if shown else "") + "</div>")


def _unique_categories(ids: np.ndarray) -> list[str]:
    """Sentence ids as categories; duplicates are refused (an input must appear once)."""
    if len(set(ids)) != len(ids):
        raise ValueError("sentence ids must be unique within one data set")
    return list(ids)


def check_same_inputs(a: MeasureArray, b: MeasureArray) -> None:
    """Refuse to pair two arrays that do not hold the same inputs in the same order."""
    if a.values.shape[:3] != b.values.shape[:3] or not np.array_equal(a.sentence_ids, b.sentence_ids):
        raise IncompatibleResultsError(
            f"{a.model}/{a.dataset} and {b.model}/{b.dataset} do not hold the same inputs and heads; "
            "pair results of one data set scored with the same options"
        )


def attention_measures(scores) -> list[str]:
    """The attention measures of scores (arrays, or a long table or a tests or roles table with a ``measure``
    column), in the order they come in: the first is the run's primary measure (a table without the column is of
    the weights)."""
    if isinstance(scores, pd.DataFrame):
        if "measure" not in scores.columns:
            return [WEIGHTS]
        return [str(m) for m in pd.unique(scores["measure"].astype(str))] or [WEIGHTS]
    arrays = [scores] if isinstance(scores, MeasureArray) else list(scores)
    return list(dict.fromkeys(a.attention_measure for a in arrays)) or [WEIGHTS]


def on_measure(scores, measure: str):
    """The part of ``scores`` (arrays, or a table with a ``measure`` column) computed on attention ``measure``;
    a table without the column is taken as it is when ``measure`` is the weights."""
    if isinstance(scores, pd.DataFrame):
        if "measure" not in scores.columns:
            return scores if measure == WEIGHTS else scores.iloc[:0]
        return scores[scores["measure"].astype(str) == measure]
    arrays = [scores] if isinstance(scores, MeasureArray) else list(scores)
    return [a for a in arrays if a.attention_measure == measure]


def measure_options(settings, measure: str | None = None) -> dict:
    """What a job adds to its options for the attention ``measure`` it reads (METHODS 6.1; default: the scoring's
    primary measure, the first of ``measures``): ``{"measure": "norm"}``, or nothing for ``weights`` (the runner's
    default), so that a weights job keeps the cache key it always had."""
    measure = settings.measure if measure is None else measure
    return {} if measure == "weights" else {"measure": measure}
