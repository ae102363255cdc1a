"""The runner: every model of a study loaded once, every input through every model once.

Pass order. Models that a pair collector joins (a base and its fine-tuned versions) form a *group*
(:func:`plan_groups`: connected components of the pair graph; a model without pairs is a group of one).
Groups run one after the other; within a group the order is

    for each data set:  for each chunk of records:  encode once;  for each batch:  for each model of the group:
        forward once -> BatchView -> that model's collectors;   then the pair collectors get both views

so the models of a group are resident together (each loaded exactly once, freed when its group is done), a
pair collector sees both views of a batch while they are alive, and nothing of a batch outlives it: memory
holds the group's models, one batch of attention per model of the group, and the collectors' states. The
alternative, one model at a time with pair accumulators keyed by input, would have to keep one model's
attention maps (or everything derived from them) for every input until the other model's pass: memory
growing with the inputs, which the engine must not do.

Records are encoded in chunks (``chunk_size``) and length-sorted within a chunk, so the encodings in memory
do not grow with the data set either; batches (and so every number) are those of the whole data set when
it fits in one chunk.
"""

from __future__ import annotations

import gc
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Iterable, Mapping, Sequence

import torch

from headstats.model.encoding import EncodedInput, encode_records
from headstats.engine.batch import BatchView, forward_view
from headstats.engine.collector import Collector, Context
from headstats.errors import IncompatibleResultsError
from headstats.engine.forward import length_sorted_batches
from headstats.inputs.records import Record
from headstats.model.loading import LoadedModel, tokenizer_fingerprint

Advance = Callable[[int], None]
ProgressFactory = Callable[[str, int], ContextManager[Advance]]


@contextmanager
def no_progress(description: str, total: int):
    """A progress factory that shows nothing."""
    yield lambda n: None


@dataclass
class Job:
    """One collector to run: its class (or factory), the model(s) and data set it is bound to, its options.

    The runner builds the collector (:attr:`collector`) when the models are loaded, since the context needs
    their shapes.

    Attributes
    ----------
    factory : callable
        ``factory(context) -> Collector``, usually a :class:`Collector` subclass.
    models : tuple of str
        One model, or two (A, B) for a :class:`~headstats.engine.collector.PairCollector`.
    dataset : str
    options : mapping
        Passed in the collector's :class:`~headstats.engine.collector.Context`.
    name : str
        A label for the caller (e.g. the analysis' registered name).
    """

    factory: Callable[[Context], Collector]
    models: tuple[str, ...]
    dataset: str
    options: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""
    collector: Collector | None = None

    def __post_init__(self) -> None:
        self.models = tuple(self.models)
        if len(self.models) not in (1, 2):
            raise ValueError(f"a job is bound to one or two models, not {self.models}")

    @property
    def is_pair(self) -> bool:
        return len(self.models) == 2


def return_freed_memory(*, trim: bool = False) -> None:
    """Make glibc give freed tensor memory back to the system (Linux; a no-op elsewhere).

    Attention buffers change size from batch to batch; with glibc's default, growing mmap threshold, freed
    buffers stay in the heap as fragments, and resident memory grows with the number of batches (200 MiB
    over 1,500 inputs). A fixed 1 MiB threshold maps every large buffer on its own and unmaps it when freed;
    ``trim`` also returns what the heap holds free now.
    """
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 1 << 20)  # M_MMAP_THRESHOLD: fixed, so large buffers are unmapped when freed
        if trim:
            libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


def plan_groups(models: Sequence[str], pairs: Iterable[tuple[str, str]]) -> list[tuple[str, ...]]:
    """Models that must be resident together: connected components of the pair graph.

    Groups come in the order of their first model in ``models``; models keep that order inside a group.
    """
    parent = {m: m for m in models}

    def root(m: str) -> str:
        while parent[m] != m:
            parent[m] = parent[parent[m]]
            m = parent[m]
        return m

    for a, b in pairs:
        for m in (a, b):
            if m not in parent:
                raise ValueError(f"pair names model {m!r}, which is not among {list(models)}")
        parent[root(b)] = root(a)
    groups: dict[str, list[str]] = {}
    for m in models:
        groups.setdefault(root(m), []).append(m)
    return [tuple(g) for g in groups.values()]


def feed(
    loaded: Mapping[str, LoadedModel],
    inputs: Sequence[EncodedInput],
    jobs: Sequence[Job],
    *,
    dataset: str = "",
    batch_size: int = 32,
    advance: Advance | None = None,
) -> int:
    """Run encoded inputs through every model that ``jobs`` need, once per batch, and update every collector.

    Parameters
    ----------
    loaded : mapping
        Model name -> LoadedModel (tokenizers identical, so one encoding serves all).
    inputs : sequence of EncodedInput
    jobs : sequence of Job
        With their collectors built.
    dataset : str
        Put on every view.
    batch_size : int
        Inputs per forward pass (length-sorted batches); changes no number.
    advance : callable, optional
        Called with the number of inputs done after each batch.

    Returns
    -------
    int
        The number of forward passes run.
    """
    needed = list(dict.fromkeys(m for job in jobs for m in job.models))
    missing = [m for m in needed if m not in loaded]
    if missing:
        raise ValueError(f"jobs name models {missing} that are not loaded")
    singles = {m: [job.collector for job in jobs if not job.is_pair and job.models[0] == m] for m in needed}
    pairs = [job for job in jobs if job.is_pair]
    kept = {m for job in pairs for m in job.models}
    passes = 0
    for items in length_sorted_batches(inputs, batch_size):
        views: dict[str, BatchView] = {}
        with torch.inference_mode():
            for m in needed:
                view = forward_view(loaded[m], items, dataset=dataset)
                passes += 1
                for collector in singles[m]:
                    collector.update(view)
                if m in kept:
                    views[m] = view
                del view
            for job in pairs:
                job.collector.update(views[job.models[0]], views[job.models[1]])  # type: ignore[call-arg]
        views.clear()
        if advance is not None:
            advance(len(items))
    return passes


@dataclass
class PassCounts:
    """What one pass over a data set read, encoded, skipped and noted."""

    n_records: int = 0
    n_scored: int = 0
    skipped: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)
    max_length: int = 0

    def as_dict(self) -> dict:
        return {"n_records": self.n_records, "n_scored": self.n_scored, "skipped": dict(self.skipped),
                "notes": dict(self.notes), "max_length": self.max_length}


class Runner:
    """Runs jobs over data sets: each model loaded once, each input through each model once.

    Parameters
    ----------
    batch_size : int
        Inputs per forward pass.
    max_length : int
        Inputs over this many pieces (capped at what the models' position embeddings allow) are skipped or
        truncated (``too_long``), and counted.
    too_long : {"skip", "truncate"}
    chunk_size : int
        Records encoded at a time (length-sorted within a chunk).
    progress : callable
        ``progress(description, total)`` is a context manager yielding ``advance(n)``; one bar per
        (group, data set).
    log : callable
        Called with messages.
    """

    def __init__(self, *, batch_size: int = 32, max_length: int = 128, too_long: str = "skip",
                 chunk_size: int = 1024, progress: ProgressFactory = no_progress,
                 log: Callable[[str], None] = lambda message: None) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, not {chunk_size}")
        self.batch_size = batch_size
        self.max_length = max_length
        self.too_long = too_long
        self.chunk_size = chunk_size
        self.progress = progress
        self.log = log

    def run(
        self,
        load: Callable[[str], LoadedModel],
        data: Mapping[str, Sequence[Record]],
        jobs: Sequence[Job],
        *,
        models: Sequence[str] | None = None,
    ) -> dict[tuple[str, str], dict]:
        """Run every job; build each job's collector (``job.collector``) and fill it.

        Parameters
        ----------
        load : callable
            ``load(name) -> LoadedModel``; called exactly once per model.
        data : mapping
            Data set name -> records, in the order data sets are passed.
        jobs : sequence of Job
        models : sequence of str, optional
            Model order (default: the order models first appear in ``jobs``).

        Returns
        -------
        dict
            (model, data set) -> counts of the pass (``n_records``, ``n_scored``, ``skipped``, ``notes``,
            ``max_length``) for every model and data set that a job named.
        """
        order = list(models) if models is not None else list(dict.fromkeys(m for j in jobs for m in j.models))
        used = {m for j in jobs for m in j.models}
        order = [m for m in order if m in used]
        unknown = used - set(order)
        if unknown:
            raise ValueError(f"jobs name models {sorted(unknown)} that are not in {order}")
        for job in jobs:
            if job.dataset not in data:
                raise ValueError(f"job {job.name!r} names data set {job.dataset!r}, which is not among {list(data)}")
        return_freed_memory()
        counts: dict[tuple[str, str], dict] = {}
        groups = plan_groups(order, [tuple(j.models) for j in jobs if j.is_pair])  # type: ignore[misc]
        for number, group in enumerate(groups):
            group_jobs = [j for j in jobs if j.models[0] in group]
            if len(group) > 1:
                self.log(f"running {', '.join(group)} together over the same batches (compared input by input)")
            loaded = {name: load(name) for name in group}
            try:
                _check_group(loaded)
                for job in group_jobs:
                    job.collector = build_collector(job, loaded)
                for dataset, records in data.items():
                    wanted = [j for j in group_jobs if j.dataset == dataset]
                    if wanted:
                        result = self._pass(loaded, dataset, records, wanted)
                        return_freed_memory(trim=True)
                        for m in dict.fromkeys(m for j in wanted for m in j.models):
                            counts[(m, dataset)] = result.as_dict()
            finally:
                loaded.clear()
                if number + 1 < len(groups):
                    gc.collect()  # free this group's models before the next group's are loaded
        return counts

    def _pass(self, loaded: Mapping[str, LoadedModel], dataset: str, records: Sequence[Record],
              jobs: Sequence[Job]) -> PassCounts:
        names = list(dict.fromkeys(m for j in jobs for m in j.models))
        first = loaded[names[0]]
        effective = min([self.max_length, *(loaded[m].max_input_length for m in names)])
        counts = PassCounts(n_records=len(records), max_length=effective)
        with self.progress(f"{' + '.join(names)} / {dataset}", len(records)) as advance:
            for start in range(0, len(records), self.chunk_size):
                chunk = list(records[start:start + self.chunk_size])
                encoding = encode_records(chunk, first.tokenizer, max_length=effective, too_long=self.too_long)
                for item in encoding.inputs:
                    item.index += start  # position in the whole data set
                counts.n_scored += len(encoding.inputs)
                counts.skipped.update(encoding.skipped)
                counts.notes.update(encoding.notes)
                if len(chunk) > len(encoding.inputs):
                    advance(len(chunk) - len(encoding.inputs))  # skipped inputs are done too
                feed(loaded, encoding.inputs, jobs, dataset=dataset, batch_size=self.batch_size, advance=advance)
                del encoding
        return counts


def _check_group(loaded: Mapping[str, LoadedModel]) -> None:
    """Models run over the same batches must split text identically."""
    items = list(loaded.items())
    name0, first = items[0]
    fingerprint = tokenizer_fingerprint(first.tokenizer) if len(items) > 1 else None
    for name, other in items[1:]:
        if tokenizer_fingerprint(other.tokenizer) != fingerprint:
            raise IncompatibleResultsError(
                f"models {name0!r} and {name!r} have different tokenizers, so they cannot be run over the same "
                "batches or compared input by input; compare a model with versions fine-tuned from it"
            )


def build_collector(job: Job, loaded: Mapping[str, LoadedModel]) -> Collector:
    """The collector of ``job``, bound to the shapes of its loaded models (shapes of a pair must match)."""
    shapes = {(loaded[m].n_layers, loaded[m].n_heads) for m in job.models}
    if len(shapes) > 1:
        a, b = job.models
        raise IncompatibleResultsError(
            f"models {a!r} and {b!r} have different shapes ({loaded[a].n_layers}x{loaded[a].n_heads} vs "
            f"{loaded[b].n_layers}x{loaded[b].n_heads}); compare a model with its fine-tuned versions"
        )
    model = loaded[job.models[0]]
    context = Context(job.models, job.dataset, model.n_layers, model.n_heads, dict(job.options),
                      {m: dict(loaded[m].provenance) for m in job.models})
    collector = job.factory(context)
    if collector.pair != job.is_pair:
        kind = "pair" if collector.pair else "single-model"
        raise ValueError(f"job {job.name!r} binds {len(job.models)} model(s) to a {kind} collector")
    return collector
