"""Collectors: what an analysis keeps of every batch, as a state that shards can merge.

A :class:`Collector` is bound to one model on one data set (a :class:`PairCollector` to two models on one
data set). The runner calls :meth:`Collector.update` with every batch's :class:`~headstats.engine.batch.BatchView`
(for a pair: both models' views of the same batch). The collector keeps only a small state (sums, counts,
per-input measures), never attention. At the end:

- :meth:`Collector.state` returns that state;
- ``type(collector).merge(states)`` joins the states of collectors that saw disjoint parts of the same data
  set (shards, cached runs), and :meth:`Collector.load_state` puts a merged state into a fresh collector;
- :meth:`Collector.tables` gives tidy tables (and :meth:`Collector.result` the collector's main result, e.g.
  a :class:`~headstats.measures.MeasureArray`).

A :class:`PerInputCollector` keeps one row of measures per input (``(inputs, layers, heads, measures)``,
float32, in data-set order: a :class:`ScoreState`) and returns them as a MeasureArray; its subclasses only
compute a batch's values and pass them to :meth:`PerInputCollector.keep`. Per-input values are what the
study's one-sided tests need (declared ``hypotheses()``, see :mod:`headstats.study.analysis_tests`).

:class:`Moments` is the state of the mean-and-spread collectors: counts, means and sums of squared
deviations per cell, merged exactly with the pairwise formula of Chan, Golub and LeVeque (1979).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Generator, Mapping, Sequence

import numpy as np
import pandas as pd

from headstats.engine.batch import BatchView, non_finite_heads
from headstats.errors import HeadstatsError, IncompatibleResultsError
from headstats.measures import MeasureArray

#: A paired collector counts its clusters (sentences, inputs) with ``|d| = 1..SIGNFLIP_MAX_ABS`` one by one
#: (:func:`abs_histogram`), so that the sign-flip test over clusters has its exact law (or Monte Carlo draws of
#: it; :mod:`headstats.stats.signflip`); a cluster with a larger ``|d|`` leaves the test normal.
SIGNFLIP_MAX_ABS = 64


def abs_histogram(d: np.ndarray, max_abs: int = SIGNFLIP_MAX_ABS) -> np.ndarray:
    """Counts of ``|d| = m`` over the first axis (the clusters) of an integer array: ``out[m - 1, ...]`` is the
    number of clusters s with ``|d[s, ...]| = m``, for ``m = 1..min(max |d|, max_abs)`` (one ``np.bincount``;
    the first axis is as long as the largest ``|d|`` counted, so a state grows only as far as its data need)."""
    a = np.abs(np.asarray(d)).astype(np.int64)
    rest = a.shape[1:]
    k = int(min(a.max(initial=0), max_abs))
    flat = a.reshape(len(a), -1)
    cells = flat.shape[1]
    counted = (flat >= 1) & (flat <= k)
    index = (flat - 1) * cells + np.arange(cells)
    return np.bincount(index[counted], minlength=k * cells).reshape(k, *rest)


def add_histograms(a: np.ndarray, b: np.ndarray, axis: int = 0) -> np.ndarray:
    """``a + b`` for two :func:`abs_histogram` counts of different lengths along ``axis`` (the shorter one is
    padded with zeros: it saw no larger ``|d|``)."""
    k = max(a.shape[axis], b.shape[axis])
    pad = lambda x: np.pad(x, [(0, k - x.shape[axis]) if i == axis % x.ndim else (0, 0)  # noqa: E731
                               for i in range(x.ndim)])
    return pad(a) + pad(b)


@dataclass(frozen=True)
class Context:
    """What a collector is bound to.

    Attributes
    ----------
    models : tuple of str
        One model name, or two for a pair collector (``models[0]`` is the base / model A).
    dataset : str
    n_layers, n_heads : int
    options : mapping
        What the study hands the collector: its analysis' typed options under ``"options"`` (for the role
        scores: ``roles`` and ``settings``), and what else it reads (e.g. ``source``, a data set's file).
        All of it is part of the job's cache key (fields marked
        :data:`~headstats.engine.cache.AFTER_PASS` excepted).
    provenance : mapping
        Model name -> its provenance (weights hash, tokenizer fingerprint, ...), for results to carry.
    seed : int
        The study's seed. Part of the cache key only for a collector whose state depends on it
        (:attr:`Collector.seeded`); others may use it after the pass (e.g. to seed an embedding in
        ``tables()``).
    task_models : callable, optional
        Set by the runner for a collector that :attr:`~Collector.needs_task_model`: ``task_models(dtype)`` is the
        model again with its task head (:func:`headstats.model.loading.load_model` with ``head="task"``), loaded
        by the runner at the first call of its group and freed with the group (read it through
        :meth:`task_model`).
    tokenizer : tokenizer, optional
        Set by the runner for the pass: the tokenizer of the model it loaded (a collector that reads the pieces'
        text, e.g. which ids are punctuation, takes it from here; None for a collector built by hand).
    input_embeddings : numpy.ndarray, optional
        Set for a collector that :attr:`~Collector.needs_input_embeddings`, on the collector whose states were
        merged (the one whose ``tables()`` the study reads): the (vocabulary, hidden) float32 input-embedding
        matrix of :attr:`model`, on the CPU, taken by the runner from the model it loaded for the pass
        (:class:`headstats.engine.runner.InputEmbeddings`; by ``headstats merge`` from the model of the shards).
        None otherwise.
    """

    models: tuple[str, ...]
    dataset: str
    n_layers: int
    n_heads: int
    options: Mapping[str, Any] = field(default_factory=dict)
    provenance: Mapping[str, dict] = field(default_factory=dict)
    seed: int = 0
    task_models: Callable[[str], Any] | None = field(default=None, compare=False, repr=False)
    tokenizer: Any = field(default=None, compare=False, repr=False)
    input_embeddings: Any = field(default=None, compare=False, repr=False)

    def task_model(self, dtype: str = "float32") -> Any:
        """The :class:`~headstats.model.loading.LoadedModel` of :attr:`model` with its task head, in ``dtype``:
        the runner's, loaded once per group of models (:attr:`Collector.needs_task_model`)."""
        if self.task_models is None:
            raise RuntimeError("this collector needs its model with a task head: declare needs_task_model = True "
                               "and let headstats.engine.runner.Runner build and run it")
        return self.task_models(dtype)

    @property
    def model(self) -> str:
        """The model of a single-model collector (model A of a pair)."""
        return self.models[0]

    def head_frame(self, **columns: Any) -> pd.DataFrame:
        """A frame with one row per (layer, head), row order layer then head, and the given columns first.

        Array-valued columns must have shape ``(n_layers, n_heads)`` (or be flat in that order).
        """
        layer, head = np.meshgrid(np.arange(self.n_layers), np.arange(self.n_heads), indexing="ij")
        data: dict[str, Any] = {}
        arrays = {k: np.asarray(v).reshape(-1) for k, v in columns.items() if np.ndim(v) > 0}
        scalars = {k: v for k, v in columns.items() if np.ndim(v) == 0}
        data.update(scalars)
        data["layer"] = layer.ravel()
        data["head"] = head.ravel()
        data.update(arrays)
        return pd.DataFrame(data)


class Collector(ABC):
    """Consumes the views of one model on one data set; see the module docstring.

    Subclasses set ``self._state`` in ``__init__`` (a fresh, empty state) and implement :meth:`update`,
    :meth:`merge` and :meth:`tables`.
    """

    #: True for collectors that see two models' views of each batch.
    pair: ClassVar[bool] = False
    #: True for collectors whose state depends on :attr:`Context.seed` (then the seed is part of their jobs'
    #: cache keys; otherwise changing the seed reuses their states).
    seeded: ClassVar[bool] = False
    #: True for collectors that read their data set's file again (annotations the records do not carry, e.g.
    #: coreference queries): the study names the file in ``options["source"]`` (path, format, limit, sha256).
    reads_source: ClassVar[bool] = False
    #: True for collectors that need their model again with its task head (a classifier's or masked-LM head, for
    #: a loss): the runner loads it once per group of models, frees it with the group, and hands it over as
    #: :meth:`Context.task_model`; a collector never loads a model itself.
    needs_task_model: ClassVar[bool] = False
    #: True for collectors whose :meth:`update` differentiates (a grad-enabled pass): the runner calls it with
    #: gradients enabled, outside the inference mode of the attention pass.
    needs_gradients: ClassVar[bool] = False
    #: True for collectors that run batches again with heads gated once their chunk's batches are done: the runner
    #: runs each :class:`~headstats.engine.ablation.AblationBatch` that :meth:`ablations` yields and sends back
    #: its result (:func:`headstats.engine.ablation.run_ablations`), before it takes the chunk's state.
    needs_ablations: ClassVar[bool] = False

    def __init__(self, context: Context) -> None:
        self.context = context
        self._state: Any = None

    @property
    def needs_input_embeddings(self) -> bool:
        """Whether the collector reads its model's input embeddings after the pass (``tables()``, e.g. the
        probing analysis' word vectors): the runner then hands the collector whose states it merged the matrix of
        the model it loaded for the pass (:attr:`Context.input_embeddings`), loading the model for it only when
        every chunk came from the cache; a collector never loads a model itself. Default False (read from the
        built collector, so that it may depend on its options)."""
        return False

    @property
    def map_free(self) -> bool:
        """Whether :meth:`update` can read a :class:`~headstats.engine.batch.MapFreeView` (no attention maps, only
        what :meth:`gather` asks for). When every collector of a model's pass can, and the pass reads the weights
        only, the runner runs it map-free (:mod:`headstats.engine.mapfree`); otherwise with the maps. Default
        False: the collector reads :attr:`~headstats.engine.batch.BatchView.attention`."""
        return False

    def gather(self, view: BatchView) -> Any:
        """What a map-free pass must compute for :meth:`update` (a :class:`~headstats.engine.mapfree.Gather`),
        from the view's inputs and layout, before the forward pass; only called when :attr:`map_free`."""
        raise NotImplementedError(f"{type(self).__name__} declares no map-free gather")

    @abstractmethod
    def update(self, view: BatchView) -> None:
        """Take what is needed from one batch's view."""

    def ablations(self) -> Generator[Any, Any, None]:
        """For a collector that :attr:`needs_ablations`: the :class:`~headstats.engine.ablation.AblationBatch` es
        of the chunk, yielded one at a time; each ``yield`` receives that batch's result (``{name: (B, K)
        array}``). Default: none."""
        return
        yield

    def state(self) -> Any:
        """The collector's state (not a copy): what :meth:`merge` joins."""
        return self._state

    def load_state(self, state: Any) -> None:
        """Replace the state, e.g. by a merged one."""
        self._state = state

    @classmethod
    @abstractmethod
    def merge(cls, states: Sequence[Any]) -> Any:
        """One state holding everything the ``states`` (of disjoint inputs of one data set) hold."""

    @abstractmethod
    def tables(self) -> dict[str, pd.DataFrame]:
        """Tidy tables of the results, keyed by table name (e.g. ``{"entropy": frame}``)."""

    def result(self) -> Any:
        """The collector's main result (default: its tables)."""
        return self.tables()


@dataclass
class ScoreState:
    """Per-input measures (scores) of one model on (part of) one data set: the state of a :class:`PerInputCollector`.

    Attributes
    ----------
    index : ndarray of int64, shape (N,)
        Each input's position in its data set (file order); the rows are sorted by it.
    sentence_ids : ndarray of object, shape (N,)
    values : ndarray of float32, shape (N, L, H, R)
    roles : tuple of str
        The measures' names (the roles, for the role scores).
    ceilings : ndarray of float32, shape (N, R)
        Each input's ceiling per role (METHODS 1.6), computed in the same pass as the scores.
    """

    index: np.ndarray
    sentence_ids: np.ndarray
    values: np.ndarray
    roles: tuple[str, ...]
    ceilings: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.ceilings is None:
            self.ceilings = np.full((self.values.shape[0], len(self.roles)), np.nan, np.float32)

    @classmethod
    def empty(cls, n_layers: int, n_heads: int, roles: Sequence[str]) -> "ScoreState":
        return cls(np.zeros(0, np.int64), np.zeros(0, object),
                   np.zeros((0, n_layers, n_heads, len(roles)), np.float32), tuple(roles),
                   np.zeros((0, len(roles)), np.float32))

    @classmethod
    def join(cls, parts: Sequence["ScoreState"]) -> "ScoreState":
        """Rows of every part, sorted by position in the data set; positions must not repeat."""
        if not parts:
            raise ValueError("nothing to join")
        roles = parts[0].roles
        shape = parts[0].values.shape[1:]
        for part in parts[1:]:
            if part.roles != roles or part.values.shape[1:] != shape:
                raise IncompatibleResultsError(
                    f"cannot merge scores of roles {part.roles} / shape {part.values.shape[1:]} with roles {roles} / "
                    f"shape {shape}; merge results scored with the same options and model"
                )
        index = np.concatenate([p.index for p in parts])
        order = np.argsort(index, kind="stable")
        index = index[order]
        if index.size > 1 and (np.diff(index) == 0).any():
            raise IncompatibleResultsError("the merged scores hold an input twice; merge disjoint shards only")
        ids = np.concatenate([p.sentence_ids for p in parts])[order]
        destination = np.empty_like(order)
        destination[order] = np.arange(order.size)
        values = np.empty((order.size, *shape), dtype=np.float32)  # filled part by part: no second copy
        start = 0
        for part in parts:
            values[destination[start:start + len(part.index)]] = part.values
            start += len(part.index)
        ceilings = np.concatenate([p.ceilings for p in parts])[order]
        return cls(index, ids, values, roles, ceilings)


class PerInputCollector(Collector):
    """A collector that keeps every input's measures per (layer, head), in data-set order.

    Subclasses pass ``measures`` (the names of the last axis) to ``__init__``, compute each batch's
    ``(B, L, H, M)`` values in :meth:`update` and hand them to :meth:`keep`; :meth:`result` is the
    :class:`~headstats.measures.MeasureArray` of every input kept, with :meth:`provenance` attached. Batches are
    kept as blocks and joined (sorted by position) only when the state is asked for.
    """

    #: Whether :meth:`result` carries each input's ceilings (the role scores' METHODS 1.6).
    keeps_ceilings: ClassVar[bool] = False

    def __init__(self, context: Context, measures: Sequence[str]) -> None:
        super().__init__(context)
        self.measures = tuple(measures)
        self._state = ScoreState.empty(context.n_layers, context.n_heads, self.measures)
        self._blocks: list[ScoreState] = []

    def keep(self, view: BatchView, values: Any, ceilings: Any = None) -> None:
        """Keep one batch's ``(B, L, H, M)`` values (a tensor or an array), and optionally ``(B, M)`` ceilings."""
        ids = np.empty(view.size, dtype=object)
        ids[:] = view.sentence_ids
        values = _numpy32(values)
        ceilings = None if ceilings is None else _numpy32(ceilings)
        refuse_non_finite(view, values, ceilings, self.measures)
        self._blocks.append(ScoreState(view.index.copy(), ids, values, self.measures, ceilings))

    def state(self) -> ScoreState:
        if self._blocks:
            self._state = ScoreState.join([self._state, *self._blocks])
            self._blocks = []
        return self._state

    def load_state(self, state: ScoreState) -> None:
        self._blocks = []
        self._state = state

    @classmethod
    def merge(cls, states: Sequence[ScoreState]) -> ScoreState:
        return ScoreState.join(states)

    def provenance(self) -> dict[str, Any]:
        """What :meth:`result` carries (default: the model's provenance)."""
        return {"model": self.context.provenance.get(self.context.model, {})}

    def result(self) -> MeasureArray:
        """The measures as ``(inputs, layers, heads, measures)`` in data-set order, marked with the attention
        measure the job read (``options["measure"]``, the weights when absent)."""
        state = self.state()
        return MeasureArray(self.context.model, self.context.dataset, state.sentence_ids, state.roles, state.values,
                            provenance=self.provenance(), ceilings=state.ceilings if self.keeps_ceilings else None,
                            attention_measure=str(self.context.options.get("measure", "weights")))


def refuse_non_finite(view: BatchView, values: np.ndarray, ceilings: np.ndarray | None,
                      measures: Sequence[str]) -> None:
    """Stop on a measure that is infinite, or NaN where its input takes part (a finite ceiling): a number that
    no head can have, which a test would otherwise read (NaN stays the mark of an input that does not take part
    in a measure, as an input without an arc of a relation).

    ``values`` (B, L, H, M), ``ceilings`` (B, M) or None. One ``isfinite`` over the batch's values; the first
    bad value (in file order) is located only when there is one.

    Raises
    ------
    HeadstatsError
        Naming the measure, the model, the data set, the input, the layer and the head, and whether the
        attention of that head is itself non-finite there.
    """
    if np.isfinite(values).all():
        return
    bad = np.isinf(values)
    if ceilings is not None:
        bad |= np.isnan(values) & np.isfinite(ceilings)[:, None, None, :]
    if not bad.any():
        return
    rows = np.flatnonzero(bad.any(axis=(1, 2, 3)))
    b = int(rows[np.argmin(view.index[rows])])
    layer, head, m = (int(x) for x in np.argwhere(bad[b])[0])
    attention = getattr(view, "attention", None)
    if attention is not None and bool(non_finite_heads(attention, view.inputs)[b, layer, head]):
        cause = "its attention holds NaN or inf there (a float16 overflow or a damaged checkpoint)"
    else:
        cause = "its attention is finite there, so the measure divided by zero on this input; report it with the input"
    raise HeadstatsError(
        f"{measures[m]} of model {view.model!r} is {values[b, layer, head, m]} on data set {view.dataset!r}, input "
        f"{view.inputs[b].sentence_id!r} (layer {layer}, head {head}, counted from 0): {cause}; nothing was written")


def _numpy32(values: Any) -> np.ndarray:
    """A float32 numpy copy of a tensor or an array."""
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=np.float32)


class PairCollector(Collector):
    """Consumes two models' views of the same batch (same inputs, same padding)."""

    pair: ClassVar[bool] = True

    @abstractmethod
    def update(self, view_a: BatchView, view_b: BatchView) -> None:  # type: ignore[override]
        """Take what is needed from both models' views of one batch."""


@dataclass
class Moments:
    """Count, mean and sum of squared deviations per cell, for running means and standard deviations.

    Attributes
    ----------
    n : ndarray of int64
    mean, m2 : ndarray of float64
        ``m2`` is the sum of squared deviations from the mean (Welford), so ``var = m2 / (n - 1)``.
    """

    n: np.ndarray
    mean: np.ndarray
    m2: np.ndarray

    @classmethod
    def zeros(cls, shape: tuple[int, ...]) -> "Moments":
        return cls(np.zeros(shape, np.int64), np.zeros(shape, np.float64), np.zeros(shape, np.float64))

    @classmethod
    def of(cls, values: np.ndarray) -> "Moments":
        """Moments of ``values`` over axis 0, NaN left out."""
        values = np.asarray(values, dtype=np.float64)
        finite = ~np.isnan(values)
        n = finite.sum(0)
        total = np.where(finite, values, 0.0).sum(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, total / np.maximum(n, 1), 0.0)
        m2 = np.where(finite, (values - mean) ** 2, 0.0).sum(0)
        return cls(n.astype(np.int64), mean, m2)

    def add(self, values: np.ndarray) -> None:
        """Fold in a batch of values (axis 0: inputs; NaN left out)."""
        merged = Moments.combine([self, Moments.of(values)])
        self.n, self.mean, self.m2 = merged.n, merged.mean, merged.m2

    @staticmethod
    def combine(parts: Sequence["Moments"]) -> "Moments":
        """Exact merge of moments of disjoint samples (Chan, Golub and LeVeque 1979)."""
        if not parts:
            raise ValueError("nothing to merge")
        n, mean, m2 = parts[0].n.copy(), parts[0].mean.copy(), parts[0].m2.copy()
        for part in parts[1:]:
            total = n + part.n
            delta = part.mean - mean
            with np.errstate(invalid="ignore", divide="ignore"):
                share = np.where(total > 0, part.n / np.maximum(total, 1), 0.0)
            mean = mean + delta * share
            m2 = m2 + part.m2 + delta**2 * n * share
            n = total
        return Moments(n, mean, m2)

    @property
    def mean_or_nan(self) -> np.ndarray:
        return np.where(self.n > 0, self.mean, np.nan)

    @property
    def sd(self) -> np.ndarray:
        """Sample standard deviation (ddof = 1); NaN below two values."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n > 1, np.sqrt(self.m2 / np.maximum(self.n - 1, 1)), np.nan)
