"""From records to per-input sieve bias scores of one model, through the engine; and writing them.

:func:`score_records` runs the engine (:mod:`headstats.engine`) with one collector, the role scores, and
returns a :class:`ScoreRun` whose scores are a :class:`~headstats.measures.MeasureArray` (inputs x layers x
heads x roles, float32); the long table is made only when asked for (:attr:`ScoreRun.scores`) or written
(:func:`write_scores`, streamed to Parquet one (model, data set) at a time with dictionary-encoded keys).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from headstats.inputs.records import Record
from headstats.measures import SCORE_COLUMNS, MeasureArray, measure_options
from headstats.model.loading import LoadedModel
from headstats.analyses.roles import record_kinds
from headstats.analyses.sieves import ScoreSettings

__all__ = ["SCORE_COLUMNS", "ScoreRun", "long_frame", "score_records", "write_scores"]


class ScoreRun:
    """Scores of one model on one data set, and what was used and left out.

    Attributes
    ----------
    array : MeasureArray
        ``(inputs, layers, heads, roles)`` float32 scores in input order, on the primary attention measure; NaN
        where an input does not take part in a role (e.g. no arc of the relation).
    arrays : list of MeasureArray
        One array per attention measure scored (``settings.measures``), the primary (``array``) first.
    counts : dict
        ``n_records``, ``n_scored``, ``skipped`` (reason -> count), ``notes`` (reason -> count),
        ``roles_not_applicable`` (roles left out of this data set, with the reason), ``max_length``,
        ``participation`` (role -> number of inputs with a finite score).
    """

    def __init__(self, array: MeasureArray, counts: dict | None = None,
                 others: Sequence[MeasureArray] = ()) -> None:
        self.array = array
        self.arrays = [array, *others]
        self.counts = counts or {}

    def __repr__(self) -> str:
        """At most 15 lines: the array's summary, with the inputs scored and left out."""
        c = self.counts
        skipped = ", ".join(f"{n} {why}" for why, n in (c.get("skipped") or {}).items())
        head = (f"ScoreRun: {c.get('n_scored', self.array.n_inputs):,} of {c.get('n_records', self.array.n_inputs):,} "
                f"inputs scored" + (f" ({skipped} left out)" if skipped else ""))
        return "\n".join([head, self.array.summary_text(max_lines=14)])

    @cached_property
    def scores(self) -> pd.DataFrame:
        """The long table ``model, dataset, measure, sentence_id, layer, head, role, score`` (built when first asked
        for; every measure scored, the primary first)."""
        return long_frame(self.arrays)


def long_frame(arrays: Iterable[MeasureArray]) -> pd.DataFrame:
    """The long scores table of several arrays, as the statistics take it today.

    The arrays' :meth:`~headstats.measures.MeasureArray.to_frame` one after the other, with the key columns (``model, dataset, sentence_id,
    role``) categorical over categories shared by all arrays and sorted as text: the statistics order
    hypotheses and inputs by sorting keys, and a categorical sorts by its categories, so they sort exactly
    as strings would (checked on the quickstart: every table identical), at a fifth of the memory (12,544
    inputs x 72 heads x 9 roles: 100 MiB, against 515 MiB with string columns).
    """
    arrays = list(arrays)
    if not arrays:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    categories = {
        "model": sorted({a.model for a in arrays}),
        "dataset": sorted({a.dataset for a in arrays}),
        "measure": list(dict.fromkeys(a.attention_measure for a in arrays)),  # the primary first
        "sentence_id": sorted({str(s) for a in arrays for s in a.sentence_ids}),
        "role": sorted({m for a in arrays for m in a.measures}),
    }
    index = {key: pd.Index(values) for key, values in categories.items()}
    parts: dict[str, list[np.ndarray]] = {c: [] for c in SCORE_COLUMNS}
    for a in arrays:
        n, layers, heads, m = a.values.shape
        rows = n * layers * heads * m
        parts["model"].append(np.full(rows, index["model"].get_loc(a.model), dtype=np.int32))
        parts["dataset"].append(np.full(rows, index["dataset"].get_loc(a.dataset), dtype=np.int32))
        parts["measure"].append(np.full(rows, index["measure"].get_loc(a.attention_measure), dtype=np.int32))
        parts["sentence_id"].append(np.repeat(index["sentence_id"].get_indexer(a.sentence_ids).astype(np.int32),
                                              layers * heads * m))
        parts["layer"].append(np.tile(np.repeat(np.arange(layers, dtype=np.int16), heads * m), n))
        parts["head"].append(np.tile(np.repeat(np.arange(heads, dtype=np.int16), m), n * layers))
        parts["role"].append(np.tile(index["role"].get_indexer(list(a.measures)).astype(np.int32), n * layers * heads))
        parts["score"].append(a.values.reshape(-1))
    data = {c: np.concatenate(v) for c, v in parts.items()}
    for key, values in categories.items():
        data[key] = pd.Categorical.from_codes(data[key], values)
    return pd.DataFrame(data, columns=SCORE_COLUMNS)


#: The protocol section whose analysis' per-input results are the study's scores (``scores.parquet``).
SCORES_FIELD = "scoring"


def scores_analysis() -> str:
    """The registered analysis that the protocol's ``scoring`` section turns on (:data:`SCORES_FIELD`): its
    collector's per-input results are the study's scores."""
    from headstats.analyses import ANALYSES, list_analyses

    list_analyses()  # imports every analysis package
    return next(name for name, spec in ANALYSES.items() if spec.protocol_field == SCORES_FIELD)


def score_records(
    loaded: LoadedModel,
    records: Sequence[Record],
    *,
    dataset: str,
    roles: Sequence[str],
    settings: ScoreSettings = ScoreSettings(),
    max_length: int = 128,
    too_long: str = "skip",
    batch_size: int = 32,
    progress: Callable[[int], None] | None = None,
) -> ScoreRun:
    """Score every record with every role (one model, one data set; a study runs all at once).

    Parameters
    ----------
    loaded : LoadedModel
    records : sequence of Record
        Parsed records where arc roles are wanted (see :func:`headstats.inputs.parsing.parse_records`).
    dataset : str
        The ``dataset`` column.
    roles : sequence of str
    settings : ScoreSettings
    max_length, too_long
        Inputs over ``max_length`` pieces (capped at what the model's position embeddings allow) are
        skipped or truncated, and counted.
    batch_size : int
        Padding and batch size do not change any score.
    progress : callable, optional
        Called with the number of inputs done after each batch.
    """
    from contextlib import contextmanager

    from headstats.analyses import PlanContext, get_analysis
    from headstats.engine.runner import Runner

    @contextmanager
    def bar(description: str, total: int):
        yield progress or (lambda n: None)

    # the study's scoring analysis plans the jobs: one per measure, all fed by the same forward pass (the runner
    # makes every measure's view of a batch); no statistics, so no control of an offset gate
    name = scores_analysis()
    has_pairs, has_parses = record_kinds(records)
    context = PlanContext((loaded.name,), (dataset,), extra={
        "datasets": {dataset: {"has_pairs": has_pairs, "has_parses": has_parses}}, "statistics": None})
    jobs = [job for job in get_analysis(name).plan_function()(settings.model_copy(update={"roles": list(roles)}),
                                                               context) if job.name == name]
    runner = Runner(batch_size=batch_size, max_length=max_length, too_long=too_long, progress=bar)
    counts = runner.run(lambda name: loaded, {dataset: records}, jobs)[(loaded.name, dataset)]
    collector = jobs[0].collector
    counts.update(collector.input_counts())
    return ScoreRun(collector.result(), counts, [job.collector.result() for job in jobs[1:]])


def write_scores(arrays: Iterable[MeasureArray], path: str | Path, *, inputs_per_group: int = 2048) -> int:
    """Stream score arrays to ``scores.parquet``: one row per (model, dataset, measure, sentence_id, layer, head,
    role); ``measure`` is each array's attention measure (METHODS 6.1).

    Row order: arrays in the order given, then input, layer, head, role (as :meth:`MeasureArray.to_frame`).
    ``model``, ``dataset``, ``sentence_id`` and ``role`` are dictionary-encoded strings; ``layer`` and
    ``head`` int16; ``score`` double (the float32 values, exactly). At most ``inputs_per_group`` inputs are
    turned into rows at a time, so memory does not hold the long table.

    Returns
    -------
    int
        The number of rows written.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    key = pa.dictionary(pa.int32(), pa.string())
    schema = pa.schema([("model", key), ("dataset", key), ("measure", key), ("sentence_id", key), ("layer", pa.int16()),
                        ("head", pa.int16()), ("role", key), ("score", pa.float64())])
    rows = 0
    with pq.ParquetWriter(str(path), schema) as writer:
        for array in arrays:
            n, layers, heads, m = array.values.shape
            per_input = layers * heads * m
            for start in range(0, n, inputs_per_group):
                stop = min(n, start + inputs_per_group)
                k = (stop - start) * per_input
                ids, codes = _sentence_dictionary(array.sentence_ids[start:stop])
                table = pa.table({
                    "model": _constant(array.model, k),
                    "dataset": _constant(array.dataset, k),
                    "measure": _constant(array.attention_measure, k),
                    "sentence_id": pa.DictionaryArray.from_arrays(np.repeat(codes, per_input), ids),
                    "layer": np.tile(np.repeat(np.arange(layers, dtype=np.int16), heads * m), stop - start),
                    "head": np.tile(np.repeat(np.arange(heads, dtype=np.int16), m), (stop - start) * layers),
                    "role": pa.DictionaryArray.from_arrays(
                        np.tile(np.arange(m, dtype=np.int32), (stop - start) * layers * heads),
                        pa.array(list(array.measures), pa.string())),
                    "score": array.values[start:stop].reshape(-1).astype(np.float64),
                }, schema=schema)
                writer.write_table(table)
                rows += k
    return rows


def _constant(value: str, k: int):
    import pyarrow as pa

    return pa.DictionaryArray.from_arrays(np.zeros(k, np.int32), pa.array([value], pa.string()))


def _sentence_dictionary(ids: np.ndarray):
    import pyarrow as pa

    codes, uniques = pd.factorize(np.asarray(ids, dtype=object))
    return pa.array([str(u) for u in uniques], pa.string()), codes.astype(np.int32)
