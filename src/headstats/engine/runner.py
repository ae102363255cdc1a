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
it fits in one chunk. Every batch is also bounded by a memory budget (:func:`attention_cells`): it is sized
from its own longest input, so that its attention maps never take more than the budget whatever the longest
input of the data (long inputs go in smaller batches; batches of short inputs hold ``batch_size`` inputs).

Passes that need more than attention are the runner's too. A collector declares what it needs
(:attr:`~headstats.engine.collector.Collector.needs_task_model`, :attr:`~headstats.engine.collector.Collector.
needs_gradients`): the runner loads the model again with its task head once per group (:class:`TaskModels`,
freed with the group), hands it over through the collector's context, and calls the collector's ``update`` on
each batch with gradients enabled; a collector that :attr:`~headstats.engine.collector.Collector.needs_ablations`
gets its ablation batches run once its chunk's batches are done (:func:`headstats.engine.ablation.run_ablations`);
a collector that :attr:`~headstats.engine.collector.Collector.needs_input_embeddings` after the pass gets its
model's input-embedding matrix, taken from the model loaded for the pass (:class:`InputEmbeddings`), on the
collector whose states the runner merged. So no collector loads a model, runs a pass of its own or leaves the
runner's inference mode.
"""

from __future__ import annotations

import gc
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ContextManager, Iterable, Mapping, Sequence

from headstats.lazy import torch

from headstats.model.encoding import EncodedInput, encode_records
from headstats.engine.ablation import run_ablations
from headstats.engine.batch import WEIGHTS, BatchView, forward_views, fused_views
from headstats.engine.collector import Collector, Context
from headstats.errors import HeadstatsError, IncompatibleResultsError
from headstats.engine.forward import MapFreeUnsupported, length_sorted_batches, progress_order
from headstats.inputs.records import Record
from headstats.engine.cache import digest, records_digest
from headstats.model.loading import LoadedModel
from headstats.model.tokenizers import check_same_tokenizer

Advance = Callable[[int], None]
ProgressFactory = Callable[[str, int], ContextManager[Advance]]

#: Bytes a batch's attention maps may take by default (``execution.memory_budget_mb: 256``): batches of 32
#: inputs up to 85 pieces with the default model (6 x 12 heads), up to 60 with bert-base (12 x 12).
DEFAULT_MEMORY_BUDGET = 256 << 20
#: The most inputs a batch holds with ``batch_size: auto``.
AUTO_BATCH_CAP = 256


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
        Passed in the collector's :class:`~headstats.engine.collector.Context`: what the collector reads (its
        analysis' own options, ...), nothing else, since all of it is part of the job's cache key.
    name : str
        A label for the caller (e.g. the analysis' registered name).
    seed : int
        Passed in the context; part of the cache key only for a :attr:`~Collector.seeded` collector.
    """

    factory: Callable[[Context], Collector]
    models: tuple[str, ...]
    dataset: str
    options: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""
    collector: Collector | None = None
    #: Chunk number -> ``{"state", "counts"}``, kept by a runner with ``keep_chunks`` (shards).
    chunks: dict[int, Any] = field(default_factory=dict, repr=False)
    seed: int = 0

    def __post_init__(self) -> None:
        self.models = tuple(self.models)
        if len(self.models) not in (1, 2):
            raise ValueError(f"a job is bound to one or two models, not {self.models}")

    @property
    def is_pair(self) -> bool:
        return len(self.models) == 2


#: glibc's ``mallopt`` parameters M_TRIM_THRESHOLD and M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: The mmap threshold of a run (:func:`settle_allocator`): glibc's largest default one
#: (DEFAULT_MMAP_THRESHOLD_MAX, 32 MiB on 64-bit), fixed, with a trim threshold of twice that.
MMAP_THRESHOLD = 32 << 20


def _mallopt(*settings: tuple[int, int], trim: bool = False) -> None:
    """``mallopt(param, value)`` for each setting, then ``malloc_trim(0)`` if ``trim`` (Linux' glibc; a no-op
    elsewhere)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        for param, value in settings:
            libc.mallopt(param, value)
        if trim:
            libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


def settle_allocator(*, trim: bool = False) -> None:
    """Fix glibc's allocator for a run (Linux; a no-op elsewhere): buffers up to :data:`MMAP_THRESHOLD` come from
    its heap and are reused there, larger ones are mapped on their own and unmapped when freed, and the heap keeps
    at most twice that free at its top; ``trim`` also returns what the heap holds free now (after each data set).

    glibc's default threshold slides up with the buffers freed, and so does its trim threshold: over many
    batches of changing sizes, resident memory then grew with the number of batches (200 MiB over 1,500 inputs
    on the eager path). A fixed 1 MiB threshold kept it flat but had every buffer of a MiB or more mapped,
    zero-filled by the kernel page by page and unmapped again: 0.97 million page faults in a role-only run of
    40 WikiText pairs and 100 EWT sentences and 1.45 million with every Clark et al. analysis (0.37 and 0.66
    million with this setting, 1.1-1.9 s less CPU each), and a pass about 14 % slower than the same forward pass
    under glibc's default (``benchmarks/bench_map_free.py``). With the fixed 32 MiB threshold the peak resident
    memory of scoring 200, 1,500 and 4,000 EWT sentences was 649, 713 and 679 MiB (591, 636 and 640 MiB with
    1 MiB): bounded, about 40-80 MiB above the 1 MiB setting.
    """
    _mallopt((_M_MMAP_THRESHOLD, MMAP_THRESHOLD), (_M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD), trim=trim)


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
    max_cells: int | None = None,
    advance: Advance | None = None,
    map_free: bool = True,
    paths: dict[str, str] | None = None,
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
        Inputs per forward pass (length-sorted batches). The batching changes speed and memory, and a few
        numbers in their last float32 digits (a padded batch's matrix products), so it is part of every cache key.
    max_cells : int, optional
        Attention cells per head a batch may hold (``B x T^2``, :func:`attention_cells`): long inputs go in
        smaller batches (:func:`~headstats.engine.forward.length_sorted_batches`). None: ``batch_size`` only.
    advance : callable, optional
        Called with the number of inputs done after each batch.
    map_free : bool
        Run every pass through the fused attention path (:mod:`headstats.engine.mapfree`): the jobs that
        :func:`runs_map_free` get map-free views, each computed on its own; the others (and pair collectors) the
        maps of the same pass, made only when one of them reads them. So every job's numbers are the same whichever
        jobs share its pass. A model whose attention does not dispatch through transformers' ``AttentionInterface``
        runs transformers' eager attention for every job. False: always transformers' eager attention, every job
        reading the maps.
    paths : dict, optional
        Filled with each model's attention path (:func:`attention_path`), as its passes ran.

    Returns
    -------
    int
        The number of forward passes run.
    """
    needed = list(dict.fromkeys(m for job in jobs for m in job.models))
    missing = [m for m in needed if m not in loaded]
    if missing:
        raise ValueError(f"jobs name models {missing} that are not loaded")
    singles = {m: [job for job in jobs if not job.is_pair and job.models[0] == m] for m in needed}
    pairs = [job for job in jobs if job.is_pair]
    kept = {(m, job_measure(job)) for job in pairs for m in job.models}
    fused = {m: map_free for m in needed}
    passes = 0
    batches = length_sorted_batches(inputs, batch_size, max_cells=max_cells)
    for items in (batches[i] for i in progress_order(len(batches))):  # the time left is right early
        views: dict[tuple[str, str], BatchView] = {}
        with torch.inference_mode():
            for m in needed:
                paired = sorted(measure for model, measure in kept if model == m)

                def maps_for(readers: Sequence[Job]) -> tuple[str, ...]:  # the measures whose maps are read
                    return tuple(dict.fromkeys([job_measure(job) for job in readers] + paired))

                by_job: dict[int, BatchView] = {}
                if fused[m]:
                    free = [job for job in singles[m] if runs_map_free(job)]
                    try:
                        free_views, by_measure = fused_views(
                            loaded[m], items, [_gather_of(job) for job in free], dataset=dataset,
                            measures=maps_for([job for job in singles[m] if job not in free]))
                        by_job = {id(job): view for job, view in zip(free, free_views)}
                    except MapFreeUnsupported:
                        fused[m] = False  # a model that does not call transformers' attention functions
                if not fused[m]:
                    by_measure = forward_views(loaded[m], items, dataset=dataset, measures=maps_for(singles[m]))
                passes += 1
                for job in singles[m]:
                    view = by_job[id(job)] if id(job) in by_job else by_measure[job_measure(job)]
                    if job.collector.needs_gradients:
                        with torch.inference_mode(False), torch.enable_grad():  # the grad-enabled batch
                            job.collector.update(view)
                    else:
                        job.collector.update(view)
                views.update({(m, measure): view for measure, view in by_measure.items() if (m, measure) in kept})
                del by_measure, by_job
            for job in pairs:
                measure = job_measure(job)
                job.collector.update(views[job.models[0], measure], views[job.models[1], measure])  # type: ignore[call-arg]
        views.clear()
        if advance is not None:
            advance(len(items))
    if paths is not None:
        paths.update({m: attention_path(fused[m]) for m in needed})
    return passes


def runs_map_free(job: Job) -> bool:
    """Whether a job's collector reads a map-free view (:mod:`headstats.engine.mapfree`), whatever else shares its
    pass: it declares :attr:`~headstats.engine.collector.Collector.map_free` (the role scores do; analyses that
    need whole maps, such as clustering, pictures or dependency's argmax, do not), reads the weights (not the
    ``norm`` measure), one model, and no gradients. Its pass-mates never change its path: a pass whose other
    collectors read whole maps makes them in the same fused pass (:func:`~headstats.engine.batch.fused_views`)."""
    collector = job.collector
    return (not job.is_pair and job_measure(job) == WEIGHTS and collector is not None and collector.map_free
            and not collector.needs_gradients)


def attention_path(fused: bool) -> str:
    """The name of a pass's attention path, for cache keys and manifests: :data:`~headstats.engine.mapfree.
    ATTENTION_PATH` (the fused SDPA kernel, gathers and maps from its queries and keys) or
    :data:`~headstats.engine.mapfree.EAGER_PATH` (transformers' eager attention)."""
    from headstats.engine.mapfree import ATTENTION_PATH, EAGER_PATH

    return ATTENTION_PATH if fused else EAGER_PATH


def _gather_of(job: Job) -> Callable[[BatchView], Any]:
    """What the collector of ``job`` asks a map-free view to compute of a batch."""
    return lambda view: job.collector.gather(view)


def job_measure(job: Job) -> str:
    """The attention measure a job's collector reads (``options["measure"]``, part of its cache key): ``"weights"``
    unless stated (:data:`headstats.engine.batch.MEASURES`)."""
    return str(job.options.get("measure", WEIGHTS))


@dataclass
class PassCounts:
    """What one pass over a data set read, encoded, skipped and noted."""

    n_records: int = 0
    n_scored: int = 0
    skipped: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)
    max_length: int = 0
    #: Inputs whose states all came from the cache, and chunks run through the models / found in the cache.
    n_cached: int = 0
    chunks_run: int = 0
    chunks_cached: int = 0

    def as_dict(self) -> dict:
        return {"n_records": self.n_records, "n_scored": self.n_scored, "skipped": dict(self.skipped),
                "notes": dict(self.notes), "max_length": self.max_length}

    def add_chunk(self, chunk: Mapping[str, Any]) -> None:
        self.n_scored += chunk["n_scored"]
        self.skipped.update(chunk["skipped"])
        self.notes.update(chunk["notes"])


@dataclass(frozen=True)
class StoredState:
    """Stands, during a pass, for a chunk state that is in the cache (read back for the merge): with a cache,
    the states of a pass are not held in memory while its later chunks run."""

    key: str


def shard_chunks(n_chunks: int, shard: tuple[int, int] | None) -> range:
    """The chunks (0-based numbers) that shard ``(i, n)`` (1-based ``i``) runs: a contiguous, balanced block.

    Shard ``i`` of ``n`` runs chunks ``floor((i-1) k / n)`` to ``floor(i k / n) - 1`` of the ``k`` chunks of each
    data set, so the shards cover every chunk exactly once, in order, whatever machine runs them.
    """
    if shard is None:
        return range(n_chunks)
    i, n = shard
    if not 1 <= i <= n:
        raise ValueError(f"shard {i}/{n}: i must be between 1 and n")
    return range((i - 1) * n_chunks // n, i * n_chunks // n)


def collector_identity(factory: Any) -> dict:
    """The class and ``version`` of a collector factory, for cache keys (bump ``version`` when its maths changes)."""
    return {"collector": f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', repr(factory))}",
            "version": str(getattr(factory, "version", "1"))}


def job_key(job: Job, models: Sequence[Mapping[str, Any]], encoding: Mapping[str, Any], attention: str) -> str:
    """The part of a job's chunk keys that is the same for every chunk: what its collector reads and nothing else.

    That is the collector's class and code ``version`` (:func:`collector_identity`), the names it is bound to
    (they label its tables), its options (:attr:`Job.options`: its analysis' own options, fields read only
    after the pass left out, see :data:`~headstats.engine.cache.AFTER_PASS`), the seed when its state depends
    on it (:attr:`~headstats.engine.collector.Collector.seeded`), its models' identities
    (:func:`model_identity`), the encoding (``max_length``, ``too_long``) and the attention path of its passes
    (:func:`attention_path`: the fused SDPA path and the eager one differ in the last float32 digits). The records
    and the batching enter each chunk's key (:meth:`Runner._pass`). Nothing of other jobs, other data sets or
    other models is in it: adding a data set, a model or an analysis, or changing another analysis' options,
    reuses the state, and since a job's path is its own (:func:`feed`), the state is the same bytes whichever
    jobs shared the pass that made it.
    """
    seed = job.seed if getattr(job.factory, "seeded", False) else None
    return digest(collector_identity(job.factory), job.name, list(job.models), job.dataset, dict(job.options),
                  {"seed": seed}, list(models), dict(encoding), {"attention": attention})


#: Provenance keys that identify a model's numbers (others, such as its path, do not change a state).
IDENTITY_KEYS = ("weights_sha256", "vocab_sha256", "tokenizer_class", "model_type", "architecture", "n_layers",
                 "n_heads", "dtype", "device_type", "revision", "hub_id")


def model_identity(provenance: Mapping[str, Any]) -> dict:
    """What of a model's provenance determines its attention (see :data:`IDENTITY_KEYS`)."""
    identity = {k: provenance.get(k) for k in IDENTITY_KEYS}
    if identity["device_type"] is None:
        identity["device_type"] = str(provenance.get("device", "cpu")).split(":")[0]
    if identity["dtype"] is None:
        identity["dtype"] = "float32"
    if provenance.get("random_init_seed") is not None:  # a control model: not the weights of the files
        identity["random_init_seed"] = int(provenance["random_init_seed"])
    return identity


@dataclass
class ModelInfo:
    """What the runner needs of a model before (or without) loading its weights."""

    provenance: dict
    max_input_length: int

    @property
    def n_layers(self) -> int:
        return int(self.provenance["n_layers"])

    @property
    def n_heads(self) -> int:
        return int(self.provenance["n_heads"])


Describe = Callable[[str], ModelInfo]


class Runner:
    """Runs jobs over data sets: each model loaded once (only if some chunk needs it), each input through each
    model once, every collector's state computed chunk by chunk and, with a cache, reused chunk by chunk.

    Every state is the merge, in chunk order, of states of ``chunk_size`` records each computed from a fresh
    collector; so a run that finds some chunks in the cache (a resumed run, a statistics-only re-run), the
    merge of shards (:func:`shard_chunks`) and an uninterrupted run compute every number with the same
    operations in the same order, and their tables are byte-identical.

    Parameters
    ----------
    batch_size : int or "auto"
        At most this many inputs per forward pass; ``"auto"``: as many as ``memory_budget`` allows (at most
        :data:`AUTO_BATCH_CAP`).
    max_length : int
        Inputs over this many pieces (capped at what the models' position embeddings allow) are skipped or
        truncated (``too_long``), and counted.
    too_long : {"skip", "truncate"}
    chunk_size : int
        Records encoded, and states cached, at a time (length-sorted batches within a chunk).
    progress : callable
        ``progress(description, total)`` is a context manager yielding ``advance(n)``; one bar per
        (group, data set), over the inputs that are not in the cache.
    log : callable
        Called with messages.
    cache : StateCache, optional
        Where chunk states are looked up and stored (None: no cache).
    shard : (i, n), optional
        Run only shard ``i`` of ``n`` (1-based) of every data set's chunks (:func:`shard_chunks`).
    keep_chunks : bool
        Keep every job's chunk states in ``job.chunks`` (chunk number -> entry), for a shard folder.
    memory_budget : int
        Bytes that a batch's attention maps (with the tensors derived from them) may take, for every batch:
        each batch is sized from its own longest input (:func:`attention_cells`), so that the memory of the
        pass does not depend on the longest input of the data. Default :data:`DEFAULT_MEMORY_BUDGET`
        (``execution.memory_budget_mb``).
    map_free : bool
        Run every pass through the fused attention path (:func:`feed`, :mod:`headstats.engine.mapfree`): the role
        scores read only the weights they need (``benchmarks/bench_map_free.py``: 1.12x the bare SDPA forward
        against 1.25x with the maps, and no attention maps in memory), whatever else shares their pass; the maps
        are made only for the collectors that read them. False: transformers' eager attention, every collector
        reading the maps. The two paths agree to float32 rounding (1e-5 relative at most) but not to the bit, so
        the path is part of every cache key (:func:`job_key`) and named in :attr:`attention`.
    """

    def __init__(self, *, batch_size: int | str = 32, max_length: int = 128, too_long: str = "skip",
                 chunk_size: int = 1024, progress: ProgressFactory = no_progress,
                 log: Callable[[str], None] = lambda message: None, cache: Any = None,
                 shard: tuple[int, int] | None = None, keep_chunks: bool = False,
                 memory_budget: int = DEFAULT_MEMORY_BUDGET, map_free: bool = True) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, not {chunk_size}")
        if memory_budget < 1:
            raise ValueError(f"memory_budget must be >= 1 byte, not {memory_budget}")
        self.batch_size = batch_size
        self.max_length = max_length
        self.too_long = too_long
        self.chunk_size = chunk_size
        self.progress = progress
        self.log = log
        self.cache = cache
        self.shard = shard
        self.keep_chunks = keep_chunks
        self.memory_budget = memory_budget
        self.map_free = map_free
        self._task_models = TaskModels()
        self._input_embeddings: InputEmbeddings | None = None
        #: Forward passes run (one per model and batch), ablation passes (:mod:`headstats.engine.ablation`) and
        #: models loaded, by the last :meth:`run`.
        self.forward_passes = 0
        self.ablation_passes = 0
        self.loads = 0
        self.attention: dict[str, str] = {}

    def run(
        self,
        load: Callable[[str], LoadedModel],
        data: Mapping[str, Sequence[Record]],
        jobs: Sequence[Job],
        *,
        models: Sequence[str] | None = None,
        describe: Describe | None = None,
        digests: Mapping[str, Sequence[bytes]] | None = None,
    ) -> dict[tuple[str, str], dict]:
        """Run every job; build each job's collector (``job.collector``) and fill it.

        Parameters
        ----------
        load : callable
            ``load(name) -> LoadedModel``; called at most once per model, and only when some chunk of some
            data set is not in the cache.
        data : mapping
            Data set name -> records, in the order data sets are passed.
        jobs : sequence of Job
        models : sequence of str, optional
            Model order (default: the order models first appear in ``jobs``).
        describe : callable, optional
            ``describe(name) -> ModelInfo`` without loading the weights (for cache keys and collector shapes);
            default: load the model and describe it.
        digests : mapping, optional
            Data set name -> the :func:`~headstats.engine.cache.record_digest` of each of its records, for the
            chunks' cache keys (default: computed from the records). With them, a chunk found in the cache
            never touches its records, which may then be a sequence that loads them only when indexed.

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
        settle_allocator()
        self.forward_passes = self.ablation_passes = self.loads = 0
        self.pass_counts: dict[tuple[str, str], PassCounts] = {}
        #: Model -> the attention path (:func:`attention_path`) that made its states, computed or from the cache.
        self.attention: dict[str, str] = {}
        counts: dict[tuple[str, str], dict] = {}
        groups = plan_groups(order, [tuple(j.models) for j in jobs if j.is_pair])  # type: ignore[misc]
        for number, group in enumerate(groups):
            group_jobs = [j for j in jobs if j.models[0] in group]
            if len(group) > 1:
                self.log(f"running {', '.join(group)} together over the same batches (compared input by input)")
            loaded: dict[str, LoadedModel] = {}
            self._task_models = TaskModels()

            def ensure_loaded(group=group, loaded=loaded) -> dict[str, LoadedModel]:
                if not loaded:
                    for name in group:
                        loaded[name] = load(name)
                        self.loads += 1
                    if len(loaded) > 1:  # models that share batches must split text alike (one has no other)
                        check_same_tokenizer(*loaded.values(), names=list(loaded))
                return loaded

            # a shard's collectors make no tables (their chunks' states are merged by `headstats merge`)
            self._input_embeddings = (InputEmbeddings(lambda name, ensure=ensure_loaded: ensure()[name])
                                      if self.shard is None else None)

            try:
                if describe is None:
                    infos = {m: ModelInfo(dict(lm.provenance), lm.max_input_length)
                             for m, lm in ensure_loaded().items()}
                else:
                    infos = {m: describe(m) for m in group}
                for dataset, records in data.items():
                    wanted = [j for j in group_jobs if j.dataset == dataset]
                    if wanted:
                        result = self._pass(infos, ensure_loaded, dataset, records, wanted,
                                            (digests or {}).get(dataset))
                        settle_allocator(trim=True)
                        for m in dict.fromkeys(m for j in wanted for m in j.models):
                            counts[(m, dataset)] = result.as_dict()
                            self.pass_counts[(m, dataset)] = result
            finally:
                loaded.clear()
                self.loads += self._task_models.loads
                self._task_models.clear()
                self._input_embeddings = None
                if number + 1 < len(groups):
                    gc.collect()  # free this group's models before the next group's are loaded
        return counts

    def _job_keys(self, infos: Mapping[str, ModelInfo], jobs: Sequence[Job], effective: int) -> dict[int, str]:
        return {id(job): job_key(job, [model_identity(infos[m].provenance) for m in job.models],
                                 {"max_length": effective, "too_long": self.too_long}, attention_path(self.map_free))
                for job in jobs}

    def _pass(self, infos: Mapping[str, ModelInfo], ensure_loaded: Callable[[], dict[str, LoadedModel]],
              dataset: str, records: Sequence[Record], jobs: Sequence[Job],
              digests: Sequence[bytes] | None = None) -> PassCounts:
        names = list(dict.fromkeys(m for j in jobs for m in j.models))
        effective = min([self.max_length, *(infos[m].max_input_length for m in names)])
        counts = PassCounts(n_records=len(records), max_length=effective)
        job_keys = self._job_keys(infos, jobs, effective)
        batching = self._batching(infos, names)
        n_chunks = -(-len(records) // self.chunk_size)
        mine = shard_chunks(n_chunks, self.shard)
        states: dict[int, list[Any]] = {id(job): [] for job in jobs}
        if self.keep_chunks:
            for job in jobs:
                job.chunks = {}
        # look every chunk up first, so that the bar counts only the inputs that need the models
        plan = []
        for k in mine:
            start = k * self.chunk_size
            stop = min(len(records), start + self.chunk_size)
            keys, found = {}, {}
            if self.cache is not None:
                chunk_digest = (records_digest(digests=digests[start:stop]) if digests is not None
                                else records_digest(records[start:stop]))
                chunk_key = digest(start, stop - start, chunk_digest, batching)
                keys = {id(job): digest(job_keys[id(job)], chunk_key) for job in jobs}
                for job in jobs:
                    entry = self.cache.get(keys[id(job)])
                    if entry is not None:
                        found[id(job)] = entry
            plan.append((k, start, stop, keys, found))
        self._report_cache_problems()
        cached_inputs = sum(stop - start for _, start, stop, _, found in plan if len(found) == len(jobs))
        to_run = sum(stop - start for _, start, stop, _, _ in plan) - cached_inputs
        where = f"{' + '.join(names)} / {dataset}"
        if self.cache is not None:
            self.log(f"{where}: {cached_inputs:,} of {sum(p[2] - p[1] for p in plan):,} inputs found in the cache"
                     + ("; no forward pass" if to_run == 0 else _reused(jobs, [found for *_, found in plan])))
        bar = self.progress(where + (f" ({cached_inputs:,} cached)" if cached_inputs else ""), to_run) if to_run \
            else no_progress(where, 0)
        with bar as advance:
            for k, start, stop, keys, found in plan:
                if len(found) == len(jobs):
                    entries = found
                    counts.n_cached += stop - start
                    counts.chunks_cached += 1
                else:
                    entries = self._run_chunk(ensure_loaded, infos, dataset, start, records[start:stop],
                                              [j for j in jobs if id(j) not in found], effective, batching, advance)
                    for job_id, entry in list(entries.items()):
                        if self.cache is not None and self.cache.put(keys[job_id], entry) and not self.keep_chunks:
                            # stored: read it back for the merge, so states do not pile up in memory meanwhile
                            entries[job_id] = {**entry, "state": StoredState(keys[job_id])}
                    entries = {**found, **entries}
                    counts.chunks_run += 1
                counts.add_chunk(entries[id(jobs[0])]["counts"])
                for job in jobs:
                    self.attention.update(entries[id(job)].get("attention", {}))
                    states[id(job)].append(entries[id(job)]["state"])
                    if self.keep_chunks:
                        job.chunks[k] = entries[id(job)]
                del entries
        for job in jobs:  # the merged states: no pass left to run
            job.collector = build_collector(job, infos, input_embeddings=self._input_embeddings)
            if states[id(job)]:
                cls = type(job.collector)
                job.collector.load_state(cls.merge([self._state(s) for s in states[id(job)]]))
            states[id(job)] = []
        return counts

    def _batching(self, infos: Mapping[str, ModelInfo], names: Sequence[str]) -> dict[str, int]:
        """How the chunks of a pass are cut into batches (:func:`~headstats.engine.forward.length_sorted_batches`):
        the batch size and the attention cells a batch may hold, sized for every model of the pass (the same
        whichever of its jobs a chunk still needs). Part of every chunk key: a padded batch's forward pass
        differs from another batching's in the last float32 digits."""
        max_cells = max(1, min(attention_cells(infos[m].n_layers, infos[m].n_heads, self.memory_budget,
                                               n_models=len(names)) for m in names))
        batch_size = AUTO_BATCH_CAP if self.batch_size == "auto" else int(self.batch_size)
        return {"batch_size": batch_size, "max_cells": max_cells}

    def _report_cache_problems(self) -> None:
        """One line for the chunks of the cache that did not prove their key (they are recomputed)."""
        problems = self.cache.take_problems() if self.cache is not None else []
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            self.log(f"cache damaged: {problems[0]}{more}; recomputing, never using it "
                     "(`headstats cache prune --all` empties the cache)")

    def _state(self, state: Any) -> Any:
        """A chunk's state, read back from the cache where the pass left a :class:`StoredState`."""
        if not isinstance(state, StoredState):
            return state
        entry = self.cache.get(state.key) if self.cache is not None else None
        if entry is None:
            problems = self.cache.take_problems() if self.cache is not None else []
            why = f" ({problems[0]})" if problems else " (gone: pruned by another process?)"
            raise HeadstatsError(
                f"cache damaged: a chunk state this run wrote to the cache {str(self.cache.root) if self.cache else '?'!r} "
                f"cannot be read back{why}; run again with --no-cache, or empty the cache with "
                "`headstats cache prune --all`"
            )
        return entry["state"]

    def _run_chunk(self, ensure_loaded: Callable[[], dict[str, LoadedModel]], infos: Mapping[str, ModelInfo],
                   dataset: str, start: int, chunk: Sequence[Record], jobs: Sequence[Job], effective: int,
                   batching: Mapping[str, int], advance: Advance) -> dict[int, dict]:
        """Encode one chunk, run it through the models ``jobs`` need, and return each job's fresh state."""
        loaded = ensure_loaded()
        first = loaded[next(iter(loaded))]
        encoding = encode_records(list(chunk), first.tokenizer, max_length=effective, too_long=self.too_long)
        for item in encoding.inputs:
            item.index += start  # position in the whole data set
        chunk_counts = {"n_scored": len(encoding.inputs), "skipped": dict(encoding.skipped),
                        "notes": dict(encoding.notes)}
        if len(chunk) > len(encoding.inputs):
            advance(len(chunk) - len(encoding.inputs))  # skipped inputs are done too
        for job in jobs:
            job.collector = build_collector(job, infos, task_models=self._task_models, tokenizer=first.tokenizer)
        paths: dict[str, str] = {m: attention_path(self.map_free) for m in loaded}
        self.forward_passes += feed(loaded, encoding.inputs, jobs, dataset=dataset, advance=advance,
                                     map_free=self.map_free, paths=paths, **batching)
        for m, path in paths.items():
            if path != attention_path(self.map_free) and self.attention.get(m) != path:
                self.log(f"model {m!r}: its attention does not go through transformers' attention functions; its "
                         "passes run transformers' eager attention (scores the same to float32 rounding)")
                self.attention[m] = path
        for job in jobs:
            if job.collector.needs_ablations:  # the chunk's ablation batches, before its state is taken
                self.ablation_passes += run_ablations(job.collector)
        entries = {id(job): {"state": job.collector.state(), "counts": chunk_counts,
                             "attention": {m: paths[m] for m in job.models}} for job in jobs}
        for job in jobs:
            job.collector = None
        return entries


def _reused(jobs: Sequence[Job], found: Sequence[Mapping[int, Any]]) -> str:
    """`` (<job>, <job> reused; <job> computed)`` when some jobs found every chunk's state in the
    cache and others did not (an analysis added, or one analysis' options changed); else ``""``."""
    whole = {id(j) for j in jobs if found and all(id(j) in f for f in found)}
    if not whole or len(whole) == len(jobs):
        return ""
    label = lambda j: j.name or getattr(j.factory, "__name__", "?")  # noqa: E731
    reused = dict.fromkeys(label(j) for j in jobs if id(j) in whole)
    computed = dict.fromkeys(label(j) for j in jobs if id(j) not in whole)
    return f" ({', '.join(reused)} reused; {', '.join(computed)} computed)"


def attention_cells(n_layers: int, n_heads: int, budget: int, *, n_models: int = 1, copies: int = 4) -> int:
    """Attention cells per head, ``B x T^2``, that a batch may hold within ``budget`` bytes.

    A batch of B inputs padded to T pieces holds ``L x H x T^2`` float32 attention weights per input and model,
    about ``copies`` times over (the model's per-layer maps and their stacked copy, the masked view, one
    derived tensor of the same size), for each of the ``n_models`` models whose views of a batch are alive
    together (a comparison group):

        max_cells = floor(budget / (copies x 4 x L x H x n_models)),  at least 1,

    and each batch takes ``B = floor(max_cells / T^2)`` inputs of its longest input's T
    (:func:`headstats.engine.forward.length_sorted_batches`).
    """
    return int(max(1, budget // max(copies * 4 * n_layers * n_heads * max(1, n_models), 1)))


class TaskModels:
    """The models of a group loaded again with their task heads, for the collectors that
    :attr:`~headstats.engine.collector.Collector.needs_task_model`: each (model, dtype) loaded at its first use
    (never for a group whose chunks are all in the cache, or whose collector has no use for it), once, and freed
    with the group (:meth:`clear`). It is the only place a second model is loaded: no cache of models lives
    in the model layer.
    """

    def __init__(self) -> None:
        self._loaded: dict[tuple[str, str], LoadedModel] = {}
        #: Models loaded so far (counted into :attr:`Runner.loads`).
        self.loads = 0

    def get(self, provenance: Mapping[str, Any], name: str, dtype: str = "float32") -> LoadedModel:
        """Model ``name`` (its folder or hub id and revision from ``provenance``) with its task head, on the
        provenance's device, in ``dtype``."""
        from headstats.model import loading

        key = (name, dtype)
        if key not in self._loaded:
            source = provenance.get("path") or provenance.get("hub_id") or name
            with torch.inference_mode(False):  # the runner's attention pass is in inference mode; these weights
                self._loaded[key] = loading.load_model(  # take part in grad-enabled passes
                    str(source), revision=provenance.get("revision"), device=provenance.get("device", "cpu"),
                    dtype=dtype, head="task")
            self.loads += 1
        return self._loaded[key]

    def clear(self) -> None:
        self._loaded.clear()


class InputEmbeddings:
    """The input-embedding matrix of each model, for the collectors that
    :attr:`~headstats.engine.collector.Collector.needs_input_embeddings`: taken once per model, at the first
    :meth:`get`, from ``model(name)`` (the runner's: the model it loaded for the pass, loaded then only when every
    chunk came from the cache), as a (vocabulary, hidden) float32 copy on the CPU, the model's weights cast as
    stored (a model loaded in float16 gives its float16 embeddings).
    """

    def __init__(self, model: Callable[[str], LoadedModel]) -> None:
        self._model = model
        self._matrices: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        """The (vocabulary, hidden) float32 numpy matrix of model ``name``'s input embeddings."""
        if name not in self._matrices:
            weight = self._model(name).model.get_input_embeddings().weight
            self._matrices[name] = weight.detach().float().cpu().numpy().copy()
        return self._matrices[name]


def build_collector(job: Job, loaded: Mapping[str, Any], *, task_models: TaskModels | None = None,
                    tokenizer: Any = None, input_embeddings: InputEmbeddings | None = None) -> Collector:
    """The collector of ``job``, bound to the shapes of its models (LoadedModel or ModelInfo; a pair's must match),
    for a collector that needs its model with a task head to the runner's ``task_models``, for a pass to the
    loaded models' ``tokenizer``, and for one that :attr:`~Collector.needs_input_embeddings` (asked of the built
    collector, which is then built again with them) to its model's matrix from ``input_embeddings``."""
    shapes = {(loaded[m].n_layers, loaded[m].n_heads) for m in job.models}
    if len(shapes) > 1:
        a, b = job.models
        raise IncompatibleResultsError(
            f"models {a!r} and {b!r} have different shapes ({loaded[a].n_layers}x{loaded[a].n_heads} vs "
            f"{loaded[b].n_layers}x{loaded[b].n_heads}); compare a model with its fine-tuned versions"
        )
    model = loaded[job.models[0]]
    provenance = {m: dict(loaded[m].provenance) for m in job.models}
    name = job.models[0]
    task = None
    if task_models is not None and getattr(job.factory, "needs_task_model", False):
        task = lambda dtype: task_models.get(provenance[name], name, dtype)  # noqa: E731
    context = Context(job.models, job.dataset, model.n_layers, model.n_heads, dict(job.options), provenance,
                      seed=int(job.seed), task_models=task, tokenizer=tokenizer)
    collector = job.factory(context)
    if input_embeddings is not None and collector.needs_input_embeddings:
        collector = job.factory(replace(context, input_embeddings=input_embeddings.get(name)))
    if collector.pair != job.is_pair:
        kind = "pair" if collector.pair else "single-model"
        raise ValueError(f"job {job.name!r} binds {len(job.models)} model(s) to a {kind} collector")
    return collector
