"""A cache of collector states, one file per (job, chunk of inputs), so that re-runs and resumed runs skip
the forward passes they have already done.

The engine cuts every data set into chunks of ``chunk_size`` records (file order) and computes each
collector's state chunk by chunk (:mod:`headstats.engine.runner`). A chunk's state is stored under a key that
hashes everything that determines it (:func:`digest`):

- the job: the collector's class, its ``version`` and options (its analysis' own options, without the fields
  read only after the pass: :data:`AFTER_PASS`), the seed if its state depends on it, the names of its models
  and data set (:func:`headstats.engine.runner.job_key`); nothing of the other jobs, data sets or models;
- each model's identity: weights sha256, tokenizer fingerprint, model type, shape, dtype and device type;
- the encoding: the effective maximum length and what is done with longer inputs (``too_long``);
- the attention path (:func:`headstats.engine.runner.attention_path`: the fused SDPA path, or transformers' eager
  one; they differ in the last float32 digits). Nothing of the jobs that share a pass: a job's path is its own
  (:func:`headstats.engine.runner.runs_map_free`), so its state is the same bytes whichever jobs ran beside it;
- the batching: the batch size and the attention-cell budget that cut a chunk into batches (a forward pass over
  a padded batch differs from one over another batch in the last float32 digits, so a state computed with
  another batching is another state);
- the chunk: its position and a sha256 of its records (ids, texts, parses).

Statistics (tau, the test, the correction, the family, ...) are not in the key: a protocol that changes only
them finds every state in the cache and runs no forward pass. Nor are other analyses' options, other data
sets or other models: adding a data set re-runs only the new data set's chunks.

File format (``<root>/states/<key[:2]>/<key>.hsc``)::

    HEADSTATS-STATE-CHUNK\\n                 the marker: only files that start with it are ever read or deleted
    {"format": 3, "key": ..., "sha256": ..., "size": ...}\\n
    <npz of the entry>                       ``size`` bytes whose sha256 is ``sha256``

The payload is numbers and JSON, never code (:mod:`headstats.engine.safe_state`: numeric arrays in an
uncompressed ``.npz`` read with ``allow_pickle=False``, the rest as JSON). Every entry proves its key: the header
names the key it was stored under, and the payload's sha256 and size; :meth:`StateCache.get` reads nothing
before both match (the key asked for, the bytes that follow). A file whose checksum or size does not match (a
disk that lost a write, a truncated copy), that holds another key's state (a chunk copied from another cache,
another position or another protocol) or whose payload is not a well-formed state (random bytes, a pickle) is
reported (:attr:`StateCache.problems`), never used, and recomputed: so a cache on a shared file system can
at worst make a run recompute (or, written on purpose with valid keys, hold wrong numbers), never run code.
Entries of headstats before format 3 held pickles: they are never loaded, reported in one line that says how
to clear them (``headstats cache prune --all``), and replaced as their chunks are recomputed. Writes are
atomic (a temporary file in the same folder, flushed and fsynced, then renamed over the final name), so a
``kill -9`` leaves either the whole entry or none.

:meth:`StateCache.prune` removes only files that carry the marker (and empty sub-folders they leave behind),
and fine-tuned checkpoints (``<root>/checkpoints``, written there by
:func:`headstats.model.finetune.cached_finetune`) that headstats wrote and that hold nothing else; anything
else in the folder is left alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from headstats.engine.safe_state import DamagedState, pack, unpack
from headstats.folders import CHECKPOINTS, default_cache_root, is_headstats_output, manifest_of

#: First line of every cache file.
MARKER = b"HEADSTATS-STATE-CHUNK\n"
#: 3: the payload is :mod:`headstats.engine.safe_state` (npz + JSON); 2 and before: a pickle, never loaded.
FORMAT = 3
SUFFIX = ".hsc"
#: Temporary files: ``.<key>.hsc.tmp-<random>`` beside the final name.
_TEMP = re.compile(r"^\.[0-9a-f]{64}\.hsc\.tmp-[A-Za-z0-9_]+$")
_ENTRY = re.compile(r"^[0-9a-f]{64}\.hsc$")
_SUBDIR = re.compile(r"^[0-9a-f]{2}$")
#: Tag that backup tools (and ``tar --exclude-caches``) recognise: https://bford.info/cachedir/
CACHEDIR_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# headstats state cache (collector states by chunk)\n"


def resolve_cache_root(cli: str | Path | None = None, configured: str | Path | None = None) -> Path:
    """Where the cache lives: ``--cache-dir``, else the protocol's ``cache_dir``, else :func:`default_cache_root`."""
    for value in (cli, configured):
        if value:
            return Path(value).expanduser()
    return default_cache_root()


#: ``Field(..., json_schema_extra=AFTER_PASS)`` marks an option that only the steps after the pass read
#: (``tables()``, declared hypotheses, the finish step, figures): it is left out of cache keys, so that
#: changing it reuses the states (e.g. a hypothesis' threshold, a permutation test's resamples).
AFTER_PASS = {"after_pass": True}


def after_pass(field: Any) -> bool:
    """Whether a pydantic field is marked :data:`AFTER_PASS`."""
    extra = getattr(field, "json_schema_extra", None)
    return isinstance(extra, Mapping) and bool(extra.get("after_pass"))


def canonical(value: Any) -> Any:
    """A JSON-able, order-stable form of collector options (for keys).

    Dataclasses become dicts, sets sorted lists, mappings sorted; a pydantic model its fields but those marked
    :data:`AFTER_PASS`.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"__class__": type(value).__qualname__,
                **{f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if hasattr(value, "model_dump"):
        fields = getattr(type(value), "model_fields", {})
        left_out = {name for name, f in fields.items() if after_pass(f)}
        return {"__class__": type(value).__qualname__,
                **canonical(value.model_dump(mode="json", exclude=left_out or None))}
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (set, frozenset)):
        return sorted(canonical(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "tolist"):
        return value.tolist()
    return repr(value)


def digest(*parts: Any) -> str:
    """sha256 of the canonical JSON of ``parts``."""
    text = json.dumps([canonical(p) for p in parts], sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def record_digest(record) -> bytes:
    """sha256 (32 bytes) of what one record feeds the model: its id, texts and parses."""
    r = record
    return hashlib.sha256(repr((r.sentence_id, r.text_a, r.text_b, r.words_a, r.words_b)).encode()).digest()


def records_digest(records=(), *, digests=None) -> str:
    """sha256 of a chunk: of the :func:`record_digest` of its records, in order.

    ``digests`` (the records' digests, computed once when the data set was read) stands for ``records``, so
    that a re-run can key its chunks without the records themselves.
    """
    h = hashlib.sha256()
    for d in (digests if digests is not None else map(record_digest, records)):
        h.update(d)
    return h.hexdigest()


@dataclass
class CacheInfo:
    """What :meth:`StateCache.info` found."""

    root: Path
    entries: int
    bytes: int
    partial: int
    oldest: float | None
    newest: float | None
    #: Fine-tuned checkpoints under ``<root>/checkpoints`` and their size.
    checkpoints: int = 0
    checkpoint_bytes: int = 0

    def lines(self) -> list[str]:
        when = lambda t: time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "-"  # noqa: E731
        return [f"cache folder: {self.root}",
                f"chunks: {self.entries} ({self.bytes / 2**20:.1f} MiB)",
                f"checkpoints: {self.checkpoints} ({self.checkpoint_bytes / 2**20:.1f} MiB, in "
                f"{self.root / CHECKPOINTS})",
                f"oldest: {when(self.oldest)}   newest: {when(self.newest)}",
                f"unfinished writes: {self.partial}"]


class StateCache:
    """Collector states by key, under ``<root>/states`` (see the module docstring).

    Parameters
    ----------
    root : path
        The cache folder (:func:`resolve_cache_root`); created on the first write.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.folder = self.root / "states"
        self.hits = 0
        self.misses = 0
        #: Files that did not prove their key (damaged, or another key's state), and why, one line each.
        self.corrupt = 0
        self.problems: list[str] = []

    # ------------------------------------------------------------------ entries
    def path(self, key: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{64}", key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.folder / key[:2] / f"{key}{SUFFIX}"

    def get(self, key: str) -> Any | None:
        """The entry stored under ``key``, or None: absent, or not proving its key (damaged, another key's state,
        not a state, a pickle of an older headstats: then counted in :attr:`corrupt`, reported in
        :attr:`problems` and, when it carries the marker, removed; an older entry is left for the recompute to
        replace)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            self.misses += 1
            return None
        value, why = decode_checked(data, key=key)
        if why is not None:
            self.corrupt += 1
            self.problems.append(f"{path}: {why}")
            if (data.startswith(MARKER) or not data) and not why.startswith(OLD_FORMAT):
                _unlink(path)
            self.misses += 1
            return None
        self.hits += 1
        return value

    def take_problems(self) -> list[str]:
        """The problems found since the last call (and forget them)."""
        found, self.problems = self.problems, []
        return found

    def put(self, key: str, value: Any) -> bool:
        """Store ``value`` under ``key`` atomically; True when it was stored (a failed write leaves no file,
        raises nothing and returns False)."""
        path = self.path(key)
        blob = encode(value, key=key)
        try:
            self._ensure_root()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key}{SUFFIX}.tmp-", dir=path.parent)
        except OSError:
            return False
        stored = False
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(blob)
                handle.flush()
                os.fsync(handle.fileno())
            if path.exists() and not _is_ours(path):
                return False  # something else sits at our name: leave it alone
            os.replace(tmp, path)
            tmp = ""
            stored = True
        except OSError:
            pass
        finally:
            if tmp:
                _unlink(Path(tmp))
        return stored

    def _ensure_root(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tag = self.root / "CACHEDIR.TAG"
        if not tag.exists():
            try:
                tag.write_text(CACHEDIR_TAG)
            except OSError:
                pass

    # ------------------------------------------------------------------ housekeeping
    def _files(self) -> Iterator[tuple[Path, bool]]:
        """(path, is_entry) of every file named like ours under the states folder (entries and temp files)."""
        if not self.folder.is_dir():
            return
        for sub in sorted(self.folder.iterdir()):
            if not (_SUBDIR.match(sub.name) and sub.is_dir() and not sub.is_symlink()):
                continue
            for path in sorted(sub.iterdir()):
                if path.is_symlink() or not path.is_file():
                    continue
                if _ENTRY.match(path.name):
                    yield path, True
                elif _TEMP.match(path.name):
                    yield path, False

    def checkpoints(self) -> list[tuple[Path, float, int]]:
        """``(folder, last used, bytes)`` of each fine-tuned checkpoint under ``<root>/checkpoints``: folders
        that headstats wrote as a checkpoint and that hold nothing else (anything else there is left alone).
        A checkpoint's last use is its ``COMPLETE`` marker's time, which a reuse refreshes."""
        folder = self.root / CHECKPOINTS
        if not folder.is_dir():
            return []
        out = []
        for path in sorted(folder.iterdir()):
            if path.name.startswith(".") or not is_headstats_output(path, check_content=False):
                continue
            if (manifest_of(path) or {}).get("kind") != "headstats finetune":
                continue
            files = [p for p in path.rglob("*") if p.is_file() and not p.is_symlink()]
            marker = path / "COMPLETE"
            used = marker.stat().st_mtime if marker.is_file() else path.stat().st_mtime
            out.append((path, used, sum(p.stat().st_size for p in files)))
        return out

    def info(self) -> CacheInfo:
        """Count the entries (files that carry the marker), their size, unfinished writes and checkpoints."""
        entries = size = partial = 0
        times: list[float] = []
        for path, is_entry in self._files():
            if not _is_ours(path, allow_empty=not is_entry):
                continue
            stat = path.stat()
            if is_entry:
                entries += 1
                size += stat.st_size
                times.append(stat.st_mtime)
            else:
                partial += 1
        checkpoints = self.checkpoints()
        return CacheInfo(self.root, entries, size, partial, min(times, default=None), max(times, default=None),
                         len(checkpoints), sum(size for _, _, size in checkpoints))

    def prune(self, *, older_than_days: float | None = None, max_bytes: int | None = None,
              everything: bool = False) -> tuple[int, int]:
        """Remove entries and checkpoints: all (``everything``), those not used for ``older_than_days``, then the
        least recently used until at most ``max_bytes`` remain. Unfinished writes are always removed.

        Only files that carry the marker, and checkpoint folders that headstats wrote and that hold nothing
        else (:meth:`checkpoints`), are removed. Returns (files and checkpoints removed, bytes freed).
        """
        import shutil

        now = time.time()
        removed = freed = 0
        kept: list[tuple[float, int, Path]] = []
        old = lambda used: older_than_days is not None and now - used > older_than_days * 86400  # noqa: E731

        def remove(path: Path) -> bool:
            if path.is_dir():
                if not is_headstats_output(path):  # a checkpoint is deleted only as headstats wrote it
                    return False
                shutil.rmtree(path, ignore_errors=True)
                return not path.exists()
            return _unlink(path)

        for path, is_entry in self._files():
            if not _is_ours(path, allow_empty=not is_entry):
                continue
            stat = path.stat()
            used = max(stat.st_atime, stat.st_mtime)
            if everything or not is_entry or old(used):
                if _unlink(path):
                    removed += 1
                    freed += stat.st_size
            else:
                kept.append((used, stat.st_size, path))
        for path, used, size in self.checkpoints():
            if everything or old(used):
                if remove(path):
                    removed += 1
                    freed += size
            else:
                kept.append((used, size, path))
        if max_bytes is not None:
            total = sum(size for _, size, _ in kept)
            for _, size, path in sorted(kept):
                if total <= max_bytes:
                    break
                if remove(path):
                    removed += 1
                    freed += size
                    total -= size
        if self.folder.is_dir():
            for sub in self.folder.iterdir():
                if _SUBDIR.match(sub.name) and sub.is_dir() and not sub.is_symlink():
                    try:
                        sub.rmdir()  # only when empty
                    except OSError:
                        pass
        return removed, freed


def encode(value: Any, *, key: str = "") -> bytes:
    """The bytes of a cache file (marker, header with the key and the payload's checksum, safe-format payload)
    holding ``value``.

    Raises
    ------
    headstats.engine.safe_state.UnsupportedState
        ``value`` holds something the safe format does not store (a collector's state must be numbers, strings
        and containers of them).
    """
    payload = pack(value)
    header = json.dumps({"format": FORMAT, "key": key, "sha256": hashlib.sha256(payload).hexdigest(),
                         "size": len(payload), "created": time.time()}).encode() + b"\n"
    return MARKER + header + payload


def decode(data: bytes, *, key: str = "") -> Any | None:
    """The value in the bytes of a cache file, or None when they are not whole (marker, size, checksum), were
    stored under another key than ``key``, or are not a safe-format state."""
    return decode_checked(data, key=key)[0]


def decode_checked(data: bytes, *, key: str = "") -> tuple[Any | None, str | None]:
    """``(value, None)``, or ``(None, why)`` with one phrase saying why the bytes were not used."""
    payload, why = _checked(data, key)
    if payload is None:
        return None, why or "unreadable"
    try:
        return unpack(payload), None
    except DamagedState as exc:
        return None, f"not a headstats state ({exc})"


#: How a problem with an entry of an older, pickled format starts.
OLD_FORMAT = "written by headstats before version 3 of the cache format"


def _checked(data: bytes, key: str) -> tuple[bytes | None, str | None]:
    """``(payload, None)`` when the bytes of a cache file are whole and were stored under ``key``; else
    ``(None, why)``."""
    if not data.startswith(MARKER):
        return None, "not a headstats cache file" if data else "empty (a write that never finished)"
    rest = data[len(MARKER):]
    end = rest.find(b"\n")
    try:
        header = json.loads(rest[:end]) if end >= 0 else None
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict):
        return None, "its header is damaged"
    if isinstance(header.get("format"), int) and header["format"] < FORMAT:
        return None, (f"{OLD_FORMAT} (a pickle, never loaded: empty the cache with `headstats cache prune --all`)")
    payload = rest[end + 1:]
    if header.get("format") != FORMAT or header.get("size") != len(payload) \
            or hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        return None, "damaged (its size or checksum does not match)"
    if header.get("key") != key:
        return None, "holds the state of another key (copied from another cache, chunk or protocol)"
    return payload, None


def _is_ours(path: Path, *, allow_empty: bool = False) -> bool:
    """Whether the file starts with the marker (or, for a temporary file killed before its first write, is empty)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(MARKER))
    except OSError:
        return False
    return head == MARKER or (allow_empty and head == b"") or (allow_empty and MARKER.startswith(head))


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except OSError:
        return False
