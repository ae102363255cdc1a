"""What a re-run takes from the cache besides the collectors' states: checked and described model folders,
read and parsed data sets, and the written ``scores.parquet``.

A protocol whose changes are only statistical finds every chunk state in the cache
(:mod:`headstats.engine.cache`) and runs no forward pass. It would still read and parse its data, load a
tokenizer to describe each model (importing transformers and torch), and write the long scores table: most of
the cost of such a re-run. Each of these is a pure function of files and options, so its result is stored in
the same cache folder under a key that hashes everything it depends on:

============================ ==========================================================================
what                         key
============================ ==========================================================================
a model folder's checks      every file of the folder (name, size, modification and change times, inode),
and description              device and dtype, the installed package versions
a data set, read and parsed  the sha256 of its files, its spec, the scoring options that shape reading and
                             parsing, the excluded ids, the installed package versions (readers, spaCy and
                             its model)
``scores.parquet``           the sha256 of the score arrays (values, ids, measure names, model, data set)
============================ ==========================================================================

A file that changes gets a new size, modification time, change time or inode (a copy, even one that keeps the
modification time, has a new inode and change time), so a changed model folder is checked and described
again. Hub models are not memoised (their files live in the hub's cache, which may be updated in place).
Bump :data:`MEMO_FORMAT` when what is stored, or how it is computed, changes.
"""

from __future__ import annotations

import copy
import hashlib
import os
from pathlib import Path
from collections.abc import Sequence
from typing import Any, Callable, Iterable, TypeVar

from headstats.engine.cache import StateCache, digest

#: Part of every key; bump it when a memoised function changes what it returns.
MEMO_FORMAT = 1

T = TypeVar("T")


def folder_identity(folder: str | Path) -> list[tuple[str, int, int, int, int]]:
    """Every file under ``folder`` as ``(relative path, size, mtime_ns, ctime_ns, inode)``, sorted.

    Any write to a file, and any replacement of it (even by a copy with the same size and modification time),
    changes at least one of these.
    """
    root = Path(folder)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            stat = path.stat()
            out.append((path.relative_to(root).as_posix(), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns,
                        stat.st_ino))
    return sorted(out)


def recall(cache: StateCache | None, what: str, key: Iterable[Any]) -> tuple[bool, Any]:
    """``(True, result)`` when a result of kind ``what`` is stored under ``key``, else ``(False, None)``."""
    if cache is None:
        return False, None
    entry = cache.get(_entry_key(what, key))
    if isinstance(entry, dict) and entry.get("what") == what:
        return True, entry["value"]
    return False, None


def memoised(cache: StateCache | None, what: str, key: Iterable[Any], compute: Callable[[], T]) -> tuple[T, bool]:
    """``compute()``, or what it returned before under the same ``key`` (None ``cache``: always computed).

    Parameters
    ----------
    cache : StateCache or None
    what : str
        The kind of result (part of the key, so that two kinds never share an entry).
    key : iterable
        Everything the result depends on (JSON-able, see :func:`headstats.engine.cache.canonical`).
    compute : callable
        Computes the result; only results that it returns (not exceptions) are stored.

    Returns
    -------
    (result, bool)
        The result, and whether it came from the cache.
    """
    key = list(key)
    found, value = recall(cache, what, key)
    if found:
        return value, True
    value = compute()
    remember(cache, what, key, value)
    return value, False


def remember(cache: StateCache | None, what: str, key: Iterable[Any], value: Any) -> None:
    """Store ``value`` as the result of kind ``what`` under ``key`` (nothing without a cache)."""
    if cache is not None:
        cache.put(_entry_key(what, list(key)), {"what": what, "value": value})


def _entry_key(what: str, key: Iterable[Any]) -> str:
    return digest("memo", MEMO_FORMAT, what, *key)


def _description_key(path: str, device: str, dtype: str) -> list:
    from headstats.provenance import package_versions

    return [str(Path(path).resolve()), folder_identity(path), device, dtype, package_versions()]


def _memoisable_model(source: str, device: str) -> str | None:
    """The local folder of a model whose description may be memoised (None: a hub id or ``device: auto``)."""
    from headstats.model.sources import resolve_model_path

    path, is_local = resolve_model_path(source)
    return path if is_local and device != "auto" else None


#: Descriptions made in this process, keyed as the cache's (the folder's identity, device, dtype, packages): a
#: model is described once per process while no file of its folder changes, with or without a cache.
_DESCRIBED: dict[str, tuple[dict, int]] = {}


def memoised_description(source: str, *, revision: str | None, device: str, dtype: str,
                         cache: StateCache | None) -> tuple[dict, int]:
    """:func:`headstats.model.loading.describe_model`, from the cache when an earlier run described the same
    local model folder (every file's name, size, times and inode unchanged, see :func:`folder_identity`) for
    the same device and dtype with the same installed packages; within a process, from memory under the same
    key (:data:`_DESCRIBED`: the description is made once per model and process).

    Describing a folder runs every check of :func:`headstats.model.sources.check_model_source`, so a stored
    description also says that the folder passed them (:func:`described_before`). Hub ids, ``device: auto``
    (whose meaning depends on the machine) and runs without a cache are described afresh.
    """
    from headstats.model.loading import describe_model

    fresh = lambda: describe_model(source, revision=revision, device=device, dtype=dtype)  # noqa: E731
    path = _memoisable_model(source, device)
    if path is None:
        return fresh()
    key = _description_key(path, device, dtype)
    known = _DESCRIBED.get(repr(key))
    if known is None:
        known = fresh() if cache is None else memoised(cache, "model description", key, fresh)[0]
        _DESCRIBED[repr(key)] = known
    elif cache is not None and not cache.path(_entry_key("model description", key)).exists():
        # this run's cache too (a later run's preflight reads it), without reading it: a read would count in the
        # cache's hits and misses, which the run reports
        remember(cache, "model description", key, known)
    return copy.deepcopy(known)


def described_before(source: str, *, device: str, dtype: str, cache: StateCache | None) -> bool:
    """Whether the cache holds a description of this local model folder as it is now (so it passed every
    check); reads the cache, never writes it (preflight runs before the cache folder is checked)."""
    if cache is None:
        return False
    path = _memoisable_model(source, device)
    return path is not None and recall(cache, "model description", _description_key(path, device, dtype))[0]


class RecordsFromCache(Sequence):
    """A data set's records, read (by ``load``) at the first look: a re-run whose chunk states are all in the
    cache never looks, and so never reads them.

    Its length is known without reading them. It pickles as a plain list (e.g. to a Ray worker).
    """

    def __init__(self, n: int, load: Callable[[], list]) -> None:
        self._n = int(n)
        self._load = load
        self._records: list | None = None

    def _all(self) -> list:
        if self._records is None:
            records = list(self._load())
            if len(records) != self._n:
                raise RuntimeError(f"the cache gave {len(records)} records where {self._n} were stored")
            self._records = records
        return self._records

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index):
        return self._all()[index]

    def __iter__(self):
        return iter(self._all())

    def __reduce__(self):
        return (list, (self._all(),))

    @property
    def loaded(self) -> bool:
        """Whether the records have been read."""
        return self._records is not None


def arrays_digest(arrays) -> str:
    """sha256 of score arrays: per array its model, data set, attention measure, measure names, sentence ids and
    values (with the columns of ``scores.parquet``, so that a file of another schema is never reused)."""
    from headstats.measures import SCORE_COLUMNS

    h = hashlib.sha256(repr(SCORE_COLUMNS).encode())
    for array in arrays:
        h.update(repr((array.model, array.dataset, array.attention_measure, list(array.measures), array.values.shape,
                       str(array.values.dtype))).encode())
        h.update("\0".join(map(str, array.sentence_ids)).encode())
        h.update(memoryview(array.values.tobytes()))
    return h.hexdigest()


def write_scores_memoised(arrays, path: str | Path, *, cache: str | Path | None) -> None:
    """:func:`headstats.study.scoring.write_scores`, or the bytes it wrote before for the same arrays (with the
    same packages): the long table is the slowest table of a re-run to write, and a statistics-only re-run
    writes the very same one."""
    from headstats.study.scoring import write_scores
    from headstats.provenance import package_versions

    path = Path(path)

    def write() -> bytes:
        write_scores(arrays, path)
        return path.read_bytes()

    store = StateCache(cache) if cache is not None else None
    blob, found = memoised(store, "scores.parquet", [arrays_digest(arrays), package_versions()], write)
    if found:
        path.write_bytes(blob)
