"""Output folders that never cost a user a file: safety checks, a lock, a staging folder and a race-free swap.

Every folder headstats writes (a run, ``headstats score``, a fine-tuned checkpoint) goes through
:func:`claim_output`:

1. **Check** (:func:`check_output_folder`): the target is refused when it is ``/``, the home folder, the working
   folder or an ancestor of any of them, a folder that holds one of the run's inputs (data files, model
   folders, the protocol), a symbolic link, or a file; an existing folder is refused without ``overwrite``, and
   with ``overwrite`` unless headstats wrote it (:func:`is_headstats_output`: its manifest says so, every file
   in it is one the manifest lists, and every such file still has the size and sha256 the manifest recorded).
2. **Lock**: ``.<name>.headstats-lock`` beside the target, created exclusively, holds the owner's pid; a second
   run into the same folder stops at once with a clear error. A lock whose process is gone (``kill -9``) is
   stale and taken over.
3. **Stage**: the run writes into ``.<name>.partial-<random>`` beside the target (created at the start, so an
   unwritable or full disk fails before any work). Staging folders left behind by a killed run are swept by
   the next run into the same target (or ``headstats report`` of it); only folders carrying headstats' staging
   marker are ever removed. The marker also lists the run's figure workers (pid and start time): a sweep ends
   any that outlived their killed run (:func:`record_helpers`), though they normally die with it.
4. **Publish** (:meth:`OutputClaim.publish`): without ``overwrite`` the staging folder is renamed onto the target,
   which fails (and deletes nothing) if anything appeared there meanwhile; with ``overwrite`` the old folder is
   re-checked, renamed aside, the new one renamed in, and only then is the old one deleted.

On any exception (including ``KeyboardInterrupt`` and the CLI's SIGTERM exception) the staging folder, the lock
and any parent folders the claim created are removed; nothing outside them is touched.

A folder from elsewhere (a colleague's run, an archive, a download) is data, never instructions: every path
that its manifest, protocol or tables name is checked by :func:`member_path` (relative, inside the folder, no
symbolic link on the way) before anything is read, written or deleted there, and a file is deleted or replaced
only when its content is still what headstats wrote (:func:`unchanged_outputs`: the size and sha256 recorded in
the manifest's ``output_sha256``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import socket
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable, Iterator

from headstats.errors import OutputError

#: File in every staging folder: who is writing it (so a sweep removes only headstats' own leftovers).
STAGING_MARKER = ".headstats-staging"
#: Key of the staging marker listing the command's helper processes (figure workers): pid and start time.
HELPERS_KEY = "helpers"
#: Manifest files that mark a folder as written by headstats, and the key listing what it wrote.
MANIFEST_NAMES = ("manifest.json", "finetune_manifest.json")
WRITTEN_BY = "headstats"
FILES_KEY = "output_files"
#: Manifest key: relative path -> ``{"size": bytes, "sha256": hex}`` of every file listed (but the manifest).
DIGESTS_KEY = "output_sha256"
#: Longest output folder name in bytes: ``.<name>.partial-<random>`` beside it must fit in 255 bytes.
OUTPUT_NAME_MAX_BYTES = 255 - 40
#: What a run folder written before manifests listed their files may hold (top level; figures/ below).
LEGACY_SUFFIXES = (".csv", ".parquet", ".md", ".html", ".yaml", ".json", ".png", ".svg", ".pdf", ".txt")


#: Where checkpoints go under the cache root (:func:`default_cache_root`); states go to ``states/``.
CHECKPOINTS = "checkpoints"


def default_cache_root() -> Path:
    """headstats' one cache root: ``$HEADSTATS_CACHE_DIR``, else ``$XDG_CACHE_HOME/headstats``, else
    ``~/.cache/headstats``. Collector states go to ``<root>/states``, fine-tuned checkpoints to
    ``<root>/checkpoints`` (``headstats cache info`` and ``cache prune`` see both)."""
    env = os.environ.get("HEADSTATS_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "headstats"


# --------------------------------------------------------------------------------------------- checks

def _protected_places() -> list[tuple[Path, str]]:
    places = [(Path("/"), "the root folder"), (Path.home(), "your home folder"), (Path.cwd(), "the working folder")]
    return [(p.resolve(), what) for p, what in places]


def _is_within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _unsafe_reason(out: Path, inputs: Iterable[str | Path]) -> str | None:
    """Why ``out`` may never be (over)written, or None."""
    for place, what in _protected_places():
        if out == place:
            return f"it is {what}"
        if _is_within(place, out):
            return f"it holds {what} ({place})"
    for item in inputs:
        if item is None or str(item) == "":
            continue
        path = Path(item).expanduser()
        if not path.exists():
            continue
        path = path.resolve()
        if _is_within(path, out):
            return f"it holds an input of this run ({path})"
    return None


def manifest_of(folder: Path) -> dict | None:
    """The headstats manifest of ``folder`` (run or checkpoint), or None when it has none."""
    for name in MANIFEST_NAMES:
        path = folder / name
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                return None
            return data if isinstance(data, dict) else None
    return None


def _files_below(folder: Path) -> list[str]:
    out = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        rel = Path(root).relative_to(folder)
        for name in files + [d for d in dirs if (Path(root) / d).is_symlink()]:
            out.append((rel / name).as_posix())
    return sorted(out)


def foreign_files(folder: Path) -> list[str] | None:
    """Files in ``folder`` that headstats did not write (empty list: none); None if headstats did not write it."""
    manifest = manifest_of(folder)
    if manifest is None:
        return None
    present = _files_below(folder)
    listed = manifest.get(FILES_KEY)
    if manifest.get("written_by") == WRITTEN_BY and isinstance(listed, list):
        allowed = set(listed) | set(MANIFEST_NAMES)
        return [f for f in present if f not in allowed]
    is_legacy_run = isinstance(manifest.get("versions"), dict) and "headstats" in manifest["versions"]
    is_legacy_checkpoint = "recipe" in manifest and "base_model" in manifest
    if not (is_legacy_run or is_legacy_checkpoint):
        return None
    if is_legacy_checkpoint:
        return [f for f in present if "/" in f]
    return [f for f in present if not (f.count("/") <= 1 and (f.count("/") == 0 or f.startswith("figures/"))
                                       and f.endswith(LEGACY_SUFFIXES))]


def is_headstats_output(folder: str | Path, *, check_content: bool = True) -> bool:
    """Whether ``folder`` was written by headstats, holds nothing else, and (``check_content``: every file read
    and hashed) none of its files changed since."""
    folder = Path(folder)
    if not folder.is_dir() or folder.is_symlink() or foreign_files(folder) != []:
        return False
    if not check_content:
        return True
    try:
        return not changed_outputs(folder, manifest_of(folder) or {})
    except OutputError:
        return False


# --------------------------------------------------------------------------------------------- members

def _printable(text: object) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def member_path(folder: str | Path, rel: object, *, named_by: str) -> Path:
    """The path of a file that a folder's own ``named_by`` (its manifest, protocol or a table) names, checked.

    ``rel`` must be a relative POSIX path without ``..``, and no part of the way from ``folder`` to it (itself
    included) may be a symbolic link, so that what headstats reads, writes or deletes there stays inside
    ``folder``. The path need not exist.

    Raises
    ------
    OutputError
        One line naming ``named_by``, the path and what is wrong with it.
    """
    folder = Path(folder)
    why = None
    if not isinstance(rel, str) or not rel or "\x00" in rel or "\\" in rel:
        why = "is not a relative path"
    else:
        parts = PurePosixPath(rel).parts
        if PurePosixPath(rel).is_absolute():
            why = "is an absolute path"
        elif ".." in parts:
            why = "leads out of the folder (..)"
        else:
            here = folder
            for part in parts:
                here = here / part
                if here.is_symlink():
                    why = f"passes through a symbolic link ({_printable(here.relative_to(folder).as_posix())})"
                    break
            if why is None and not _is_within(here.resolve(), folder.resolve()):
                why = "leads out of the folder"
            if why is None:
                return here
    shown = _printable(rel if isinstance(rel, str) else repr(rel))[:200]
    raise OutputError(f"refusing {named_by}: it names {shown!r}, which {why}; headstats reads, writes and deletes "
                      f"only inside {str(folder)!r} (a folder from elsewhere is data, never instructions)")


def file_digest(path: str | Path) -> dict:
    """``{"size", "sha256"}`` of a regular file, read without following a symbolic link."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        h = hashlib.sha256()
        size = 0
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
            size += len(block)
    return {"size": size, "sha256": h.hexdigest()}


def output_listing(folder: str | Path, *, manifest_name: str = "manifest.json") -> dict:
    """The manifest's ``output_files`` (every file below ``folder``, and the manifest) and ``output_sha256``
    (size and sha256 of each but the manifest): what lets a later ``--overwrite`` or ``headstats report`` prove
    that a file is still the one headstats wrote before it deletes or replaces it."""
    folder = Path(folder)
    files = output_file_list(folder)
    return {FILES_KEY: sorted(set(files) | {manifest_name}),
            DIGESTS_KEY: {rel: file_digest(folder / rel) for rel in files if rel != manifest_name}}


def unchanged_outputs(folder: str | Path, manifest: dict, *, named_by: str = "its manifest.json") -> set[str]:
    """Files of ``folder`` that headstats may delete or replace: listed in the manifest's ``output_sha256``, at a
    checked path (:func:`member_path`), a regular file whose size and sha256 are still those recorded.

    Raises
    ------
    OutputError
        The manifest lists a path outside the folder or through a symbolic link.
    """
    folder = Path(folder)
    digests = manifest.get(DIGESTS_KEY)
    if not isinstance(digests, dict):
        return set()
    same = set()
    for rel, recorded in digests.items():
        path = member_path(folder, rel, named_by=f"{named_by} of {str(folder)!r}")
        try:
            if isinstance(recorded, dict) and file_digest(path) == {"size": recorded.get("size"),
                                                                    "sha256": recorded.get("sha256")}:
                same.add(rel)
        except OSError:
            continue
    return same


def changed_outputs(folder: str | Path, manifest: dict) -> list[str]:
    """Files below ``folder`` (but its manifest) that headstats cannot prove it wrote as they are now: changed
    since, or named by a manifest that recorded no checksum for them."""
    folder = Path(folder)
    same = unchanged_outputs(folder, manifest)
    return [f for f in output_file_list(folder) if f not in MANIFEST_NAMES and f not in same]


def check_output_folder(out: str | Path, *, overwrite: bool = False, inputs: Iterable[str | Path] = ()) -> Path:
    """Check that ``out`` may be written, and return it resolved. Nothing is created or changed.

    Parameters
    ----------
    out : path
        The output folder.
    overwrite : bool
        Allow replacing an existing folder, which must be one headstats wrote.
    inputs : paths
        Files and folders the run reads (data, models, protocol): ``out`` may not hold any of them.

    Raises
    ------
    OutputError
        Naming the reason and what to do instead.
    """
    raw = Path(out).expanduser()
    if "\x00" in str(out):
        raise OutputError("output path contains a NUL character; choose another --out")
    if raw.is_symlink():
        raise OutputError(f"output path {str(raw)!r} is a symbolic link; give the real folder or another --out")
    resolved = raw.resolve()
    if len(resolved.name.encode()) > OUTPUT_NAME_MAX_BYTES:
        raise OutputError(f"output folder name {resolved.name[:40]!r}... is {len(resolved.name.encode())} bytes long; "
                          f"the staging folder beside it needs a name of at most {OUTPUT_NAME_MAX_BYTES}: "
                          "choose a shorter --out")
    reason = _unsafe_reason(resolved, inputs)
    if reason is not None:
        raise OutputError(f"refusing to write to {str(resolved)!r}: {reason}; choose a new folder for --out")
    if resolved.exists() and not resolved.is_dir():
        raise OutputError(f"output path {str(resolved)!r} is a file; choose a folder")
    if resolved.exists() and _is_empty_folder(resolved):
        return resolved  # an empty folder (``mkdir out``) is filled, with --overwrite or without
    if resolved.exists() and not overwrite:
        raise OutputError(f"output folder {str(resolved)!r} exists; choose another --out or pass --overwrite")
    if resolved.exists():
        _check_replaceable(resolved)
    return resolved


def _is_empty_folder(path: Path) -> bool:
    try:
        return path.is_dir() and not any(path.iterdir())
    except OSError:
        return False


def user_mode(folder: Path) -> None:
    """Give a folder made by :func:`tempfile.mkdtemp` (mode 0700) the mode the user's umask gives a new folder, so
    that a run folder on a shared server is as readable as any other folder the user makes."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(folder, 0o777 & ~mask)


def _shown(files: list[str]) -> str:
    return ", ".join(_printable(f) for f in files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")


def check_output_file(out: str | Path, *, inputs: Iterable[str | Path] = (), force: bool = False) -> Path:
    """Check that the file ``out`` may be written (``headstats init``'s protocol): never one of ``inputs`` (data
    files, a model folder) or inside one, with ``force`` or not; never a folder; an existing file only with
    ``force``. Nothing is created or changed.

    Raises
    ------
    OutputError
        Naming the reason and what to do instead.
    """
    path = Path(out).expanduser()
    if path.is_dir():
        raise OutputError(f"{str(path)!r} is a folder; give the file to write, e.g. {path / 'protocol.yaml'}")
    resolved = path.resolve()
    for item in inputs:
        if item is None or str(item) == "":
            continue
        source = Path(item).expanduser()
        if source.exists() and _is_within(resolved, source.resolve()):
            what = "is" if resolved == source.resolve() else "is inside"
            raise OutputError(f"refusing to write {str(path)!r}: it {what} an input of this command ({str(source)!r}); "
                              "choose another --out")
    if (path.exists() or path.is_symlink()) and not force:
        raise OutputError(f"{str(path)!r} exists; choose another --out or pass --force to replace it")
    return path


def _check_replaceable(folder: Path) -> None:
    foreign = foreign_files(folder)
    if foreign is None:
        raise OutputError(
            f"--overwrite refused: {str(folder)!r} was not written by headstats (no headstats manifest); "
            "choose a new folder for --out"
        )
    if foreign:
        raise OutputError(
            f"--overwrite refused: {str(folder)!r} holds files headstats did not write ({_shown(foreign)}); "
            "move them away or choose a new folder for --out"
        )
    manifest = manifest_of(folder) or {}
    for rel in manifest.get(FILES_KEY) or []:  # a path out of the folder: a manifest that is not headstats'
        member_path(folder, rel, named_by=f"the manifest of {str(folder)!r} (--overwrite)")
    if not isinstance(manifest.get(DIGESTS_KEY), dict):
        raise OutputError(
            f"--overwrite refused: the manifest of {str(folder)!r} records no checksums of its files (an older "
            "headstats, or not headstats'), so they cannot be told from yours; delete the folder yourself or "
            "choose a new folder for --out"
        )
    changed = changed_outputs(folder, manifest)
    if changed:
        raise OutputError(
            f"--overwrite refused: {str(folder)!r} holds files that are not as headstats wrote them "
            f"({_shown(changed)}: edited since, or listed by a manifest that is not theirs); move them away "
            "or choose a new folder for --out"
        )


# --------------------------------------------------------------------------------------------- lock

def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _owner_alive(info: dict) -> bool:
    if info.get("host") not in (None, socket.gethostname()):
        return True  # another machine's lock on a shared disk: never taken over
    try:
        return _pid_alive(int(info.get("pid", -1)))
    except (TypeError, ValueError):
        return False


def _read_owner(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}


def _owner_record() -> str:
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()})


def _acquire_lock(lock: Path, out: Path) -> None:
    for _ in range(3):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            owner = _read_owner(lock)
            if owner and _owner_alive(owner):
                raise OutputError(
                    f"another headstats run (pid {owner.get('pid')}) is writing to {str(out)!r}; wait for it to "
                    f"finish or choose another --out (if no run is going on, delete {str(lock)!r})"
                ) from None
            if not owner and time.time() - _mtime(lock) < 5:
                time.sleep(0.2)  # being written by its owner right now
                continue
            lock.unlink(missing_ok=True)  # stale: its process is gone
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(_owner_record())
        return
    raise OutputError(f"could not take the lock {str(lock)!r}; delete it if no headstats run is going on")


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, ``/proc/<pid>/stat``), which tells it from a later
    process given the same pid; None where there is no /proc or no such process."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text(encoding="ascii", errors="replace")
        return int(stat[stat.rindex(")") + 2:].split()[19])  # field 22; the name in parentheses may hold spaces
    except (OSError, ValueError, IndexError):
        return None


def record_helpers(folder: str | Path, pids: Iterable[int]) -> None:
    """Write into the staging marker of ``folder`` (when it is a staging folder) the helper processes of this
    command (a report's figure workers) with their start times, so that the next command into the same place
    ends them if this one is killed (:func:`_end_helpers`). A helper already ends with its parent
    (:mod:`headstats.report.figures`); this is for one that could not (no parent-death signal, a stuck one)."""
    marker = Path(folder) / STAGING_MARKER
    info = _read_owner(marker) if marker.is_file() and not marker.is_symlink() else {}
    if info.get("pid") != os.getpid():
        return
    helpers = {h.get("pid"): h for h in info.get(HELPERS_KEY, []) if isinstance(h, dict)}
    helpers.update({int(pid): {"pid": int(pid), "start": process_start(pid)} for pid in pids})
    info[HELPERS_KEY] = sorted(helpers.values(), key=lambda h: h["pid"])
    try:
        marker.write_text(json.dumps(info), encoding="utf-8")
    except OSError:
        pass  # the workers still end with this process; only the later sweep loses its list


def _end_helpers(info: dict) -> None:
    """SIGKILL the helpers a dead command recorded in its staging marker that still run: on this host, and only
    a process whose start time is the one recorded (never another process that got the same pid)."""
    import signal

    if info.get("host") not in (None, socket.gethostname()):
        return
    for helper in info.get(HELPERS_KEY) or []:
        try:
            pid, start = int(helper["pid"]), helper["start"]
        except (TypeError, KeyError, ValueError):
            continue
        if start is not None and pid > 1 and process_start(pid) == start:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _sweep_stale_staging(out: Path) -> list[Path]:
    """Remove staging folders of dead runs into ``out`` (only those with headstats' marker, whose owner process
    is gone), end the helper processes those runs left running (:func:`record_helpers`), and say so in one
    warning line."""
    swept = []
    for candidate in out.parent.glob(f".{out.name}.partial-*"):
        marker = candidate / STAGING_MARKER
        if candidate.is_symlink() or not candidate.is_dir() or not marker.is_file():
            continue
        owner = _read_owner(marker)
        if not _owner_alive(owner):
            _end_helpers(owner)
            shutil.rmtree(candidate, ignore_errors=True)
            swept.append(candidate)
    for candidate in out.parent.glob(f".{out.name}.old-*"):
        marker = candidate / STAGING_MARKER
        if candidate.is_dir() and not candidate.is_symlink() and marker.is_file() \
                and not _owner_alive(_read_owner(marker)):
            shutil.rmtree(candidate, ignore_errors=True)
            swept.append(candidate)
    if swept:
        import warnings

        names = ", ".join(repr(p.name) for p in swept[:3]) + (f" and {len(swept) - 3} more" if len(swept) > 3 else "")
        warnings.warn(f"cleared {names} beside {str(out)!r}: the staging folder of an earlier headstats command "
                      "that was stopped before it finished (it carried headstats' staging marker)", stacklevel=2)
    return swept


# --------------------------------------------------------------------------------------------- claim

#: What a failed write means and how to fix it, by errno: a full, over-quota, read-only or forbidden disk.
WRITE_ERRORS: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("no space left on device", "free some space or choose another --out"),
    errno.EDQUOT: ("disk quota exceeded", "free some space or choose another --out"),
    errno.EROFS: ("read-only file system", "choose another --out on a writable disk"),
    errno.EACCES: ("permission denied", "choose another --out or fix the folder's permissions"),
    errno.EPERM: ("permission denied", "choose another --out or fix the folder's permissions"),
    errno.ENAMETOOLONG: ("file name too long", "choose a shorter --out"),
}
#: The same, found in the text of an OSError without an errno (pyarrow and others).
_WRITE_ERROR_TEXTS = {"no space left on device": errno.ENOSPC, "disk quota exceeded": errno.EDQUOT,
                      "read-only file system": errno.EROFS, "permission denied": errno.EACCES}


def write_error_reason(exc: OSError) -> tuple[str, str] | None:
    """``(reason, fix)`` of an OSError that means the disk refuses writes (:data:`WRITE_ERRORS`), else None."""
    code = exc.errno
    if code not in WRITE_ERRORS:
        text = str(exc).lower()
        code = next((c for t, c in _WRITE_ERROR_TEXTS.items() if t in text), None)
    return None if code is None else WRITE_ERRORS[code]


def _os_error_message(exc: OSError, where: Path) -> str:
    known = write_error_reason(exc)
    if known is None:
        return f"cannot write to {str(where)!r}: {exc.strerror or exc}; choose another --out"
    reason, fix = known
    return f"cannot write to {str(where)!r} ({reason}); {fix}"


@dataclass
class OutputClaim:
    """A checked and locked output location with its staging folder (see :func:`claim_output`)."""

    out: Path
    staging: Path
    overwrite: bool
    lock: Path
    created_parents: list[Path] = field(default_factory=list)
    published: bool = False

    def publish(self) -> Path:
        """Move the staging folder into place (race-free; see the module docstring)."""
        (self.staging / STAGING_MARKER).unlink(missing_ok=True)
        try:
            if self.out.is_symlink() or (self.out.exists() and not self.out.is_dir()):
                raise OutputError(f"{str(self.out)!r} became a link or a file while this run wrote; nothing "
                                  "was replaced; choose another --out")
            if self.out.exists() and self.overwrite and not _is_empty_folder(self.out):
                self._swap()
            elif self.out.exists() and any(self.out.iterdir()):
                raise OutputError(f"output folder {str(self.out)!r} appeared while this run wrote; nothing was "
                                  "replaced; choose another --out or pass --overwrite")
            else:
                os.rename(self.staging, self.out)  # an empty folder that appeared meanwhile is replaced
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise OutputError(f"output folder {str(self.out)!r} appeared while this run wrote; nothing was "
                                  "replaced; choose another --out or pass --overwrite") from None
            raise OutputError(_os_error_message(exc, self.out)) from None
        self.published = True
        return self.out

    def _swap(self) -> None:
        _check_replaceable(self.out)
        aside = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.old-", dir=self.out.parent))
        aside.rmdir()
        os.rename(self.out, aside)
        if not is_headstats_output(aside):  # changed between the check and the move: put it back
            os.rename(aside, self.out)
            _check_replaceable(self.out)
            raise OutputError(f"--overwrite refused: {str(self.out)!r} changed while this run wrote; "
                              "choose a new folder for --out")
        try:
            os.rename(self.staging, self.out)
        except OSError:
            if not self.out.exists():
                os.rename(aside, self.out)
            raise
        shutil.rmtree(aside, ignore_errors=True)

    def _cleanup(self) -> None:
        if not self.published:
            shutil.rmtree(self.staging, ignore_errors=True)
        self.lock.unlink(missing_ok=True)
        if not self.published:
            for parent in self.created_parents:  # innermost first
                try:
                    parent.rmdir()
                except OSError:
                    break


@contextmanager
def claim_output(out: str | Path, *, overwrite: bool = False,
                 inputs: Iterable[str | Path] = ()) -> Iterator[OutputClaim]:
    """Check, lock and stage an output folder for the duration of a block.

    The block writes into ``claim.staging`` and calls ``claim.publish()`` when everything is written. If the
    block raises (or ends without publishing) the staging folder, the lock and any parent folders the claim
    created are removed, and the target is untouched; the exception (say, an ``OSError`` of a full disk)
    goes on to the caller, whose CLI turns it into one line.

    Raises
    ------
    OutputError
        The target is unsafe, exists, is locked by a live run, or cannot be written (permission, disk full).
    """
    target = check_output_folder(out, overwrite=overwrite, inputs=inputs)
    created = [p for p in [target.parent, *target.parent.parents] if not p.exists()]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(_os_error_message(exc, target.parent)) from None
    lock = target.parent / f".{target.name}.headstats-lock"
    try:
        _acquire_lock(lock, target)
    except OSError as exc:
        _remove_empty(created)
        raise OutputError(_os_error_message(exc, target.parent)) from None
    except BaseException:
        _remove_empty(created)
        raise
    claim = OutputClaim(target, target.parent / f".{target.name}.partial-pending", overwrite, lock, created)
    try:
        _sweep_stale_staging(target)
        claim.staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
        user_mode(claim.staging)
        (claim.staging / STAGING_MARKER).write_text(_owner_record(), encoding="utf-8")
    except OSError as exc:
        claim._cleanup()
        raise OutputError(_os_error_message(exc, target.parent)) from None
    except BaseException:
        claim._cleanup()
        raise
    try:
        yield claim
    finally:
        claim._cleanup()


def _remove_empty(folders: list[Path]) -> None:
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            break


def output_file_list(folder: str | Path) -> list[str]:
    """Every file below ``folder`` as relative POSIX paths (what a manifest lists as written by headstats)."""
    folder = Path(folder)
    return [f for f in _files_below(folder) if f != STAGING_MARKER]


def replace_outputs(folder: str | Path, stage: str | Path, manifest: dict, *,
                    removable=lambda rel: True) -> tuple[list[str], list[str]]:
    """Move every file of ``stage`` into ``folder`` and delete the files that ``manifest`` lists, that
    ``removable(rel)`` accepts and that ``stage`` no longer holds: only files headstats can prove it wrote
    (:func:`unchanged_outputs`) are replaced or deleted. ``manifest``'s ``output_files`` and ``output_sha256`` are
    updated in place (the caller writes it).

    Everything is checked before anything changes: a path the manifest lists out of the folder or through a
    symbolic link, a ``figures/`` that is a link, or a file to be replaced that is not as headstats wrote it
    stops with an :class:`OutputError` and nothing moved. A stale file that is not as headstats wrote it (edited,
    or named by a manifest that is not the folder's own) is left alone, dropped from the listing and returned.

    Returns
    -------
    (removed, left)
        Stale files deleted, and stale files left alone.
    """
    folder, stage = Path(folder), Path(stage)
    listed = manifest.get(FILES_KEY)
    if not isinstance(listed, list):
        raise OutputError(f"the manifest of {str(folder)!r} lists no output files; rerun `headstats run`")
    named_by = f"the manifest of {str(folder)!r}"
    for rel in listed:
        member_path(folder, rel, named_by=named_by)
    proven = unchanged_outputs(folder, manifest)
    new_files = output_file_list(stage)
    targets = {rel: member_path(folder, rel, named_by=f"the new files for {str(folder)!r}") for rel in new_files}
    blocked = [rel for rel, target in targets.items() if (target.exists() or target.is_symlink()) and rel not in proven]
    if blocked:
        why = ("which changed since headstats wrote them, or which headstats did not write"
               if isinstance(manifest.get(DIGESTS_KEY), dict) else
               "and its manifest records no checksums (a run of an older headstats), so they cannot be told from "
               "yours")
        raise OutputError(f"rebuilding would replace {_shown(sorted(blocked))} in {str(folder)!r}, {why}; move them "
                          "away and rebuild again, or rerun `headstats run`")
    stale = sorted(rel for rel in set(listed) - set(new_files) - set(MANIFEST_NAMES)
                   if removable(rel) and (folder / rel).is_file())
    removed = [rel for rel in stale if rel in proven]
    left = [rel for rel in stale if rel not in proven]
    digests = {rel: file_digest(stage / rel) for rel in new_files}
    for rel in sorted(new_files):
        targets[rel].parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage / rel, targets[rel])
    for rel in removed:
        (folder / rel).unlink()
    kept = set(listed) - set(stale) - set(new_files)
    recorded = manifest.get(DIGESTS_KEY) if isinstance(manifest.get(DIGESTS_KEY), dict) else {}
    manifest[FILES_KEY] = sorted(kept | set(new_files) | {"manifest.json"})
    manifest[DIGESTS_KEY] = {**{k: v for k, v in recorded.items() if k in kept}, **digests}
    return removed, left
