"""Reading data files line by line, with one clear :class:`~headstats.errors.DataError` for every way it fails.

Every reader of a text format (plain text, JSONL, GLUE TSV, CoNLL-U) reads its file through
:func:`iter_lines`, so that a folder, an unreadable file, a file that is not UTF-8 (latin-1, UTF-16) and a
binary file (NUL bytes) are each refused with the file, the line, and what to do, instead of a traceback or
of text that silently holds binary garbage.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from headstats.errors import DataError

__all__ = ["check_data_file", "iter_lines"]

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def check_data_file(path: str | os.PathLike[str], *, what: str = "data file") -> Path:
    """Refuse a path that does not exist or is not a regular file (a folder, a device).

    Parameters
    ----------
    path : str or path-like
        The data file.
    what : str
        How the message calls the file (``"data file"``, ``"GLUE file"``).

    Returns
    -------
    Path

    Raises
    ------
    DataError
        If the path does not exist, or is a folder or another non-file.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(
            f"{what} not found: {os.fspath(path)!r}; check the path (a relative path starts from the current folder)"
        )
    if path.is_dir():
        raise DataError(f"{what} {os.fspath(path)!r} is a folder, not a file; name one data file inside it")
    if not path.is_file():
        raise DataError(f"{what} {os.fspath(path)!r} is not a file; name one data file")
    return path


def iter_lines(path: str | os.PathLike[str], *, keepends: bool = False) -> Iterator[tuple[int, str]]:
    """Yield ``(1-based line number, line)`` of a UTF-8 text file; a leading byte-order mark is dropped.

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (the file is opened with ``newline=""``); the end of line is
    removed unless ``keepends`` (the :mod:`csv` reader wants it).

    Parameters
    ----------
    path : str or path-like
        The file.
    keepends : bool, default False
        Keep each line's end-of-line characters.

    Raises
    ------
    DataError
        If the file cannot be opened or read (a folder, no permission), is not UTF-8 (naming the first line
        and byte that cannot be decoded, and whether it looks like UTF-16), or holds a NUL byte (a binary
        file, or UTF-16 text), naming the line.
    """
    path = Path(path)
    where = os.fspath(path)
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            for number, line in enumerate(handle, start=1):
                if "\x00" in line:
                    raise DataError(
                        f"{where}, line {number}: a NUL byte; this is a binary file (or UTF-16 text), not UTF-8 "
                        "text; give the data as UTF-8 text"
                    )
                yield number, line if keepends else line.rstrip("\r\n")
    except UnicodeDecodeError:
        raise DataError(_not_utf8_message(path)) from None
    except IsADirectoryError:
        raise DataError(f"{where!r} is a folder, not a file; name one data file inside it") from None
    except OSError as exc:
        raise DataError(f"cannot read {where!r}: {exc.strerror or exc}; check the file and its permissions") from None


def _not_utf8_message(path: Path) -> str:
    """Say where the first byte that is not UTF-8 is, reading the file again as bytes."""
    where = os.fspath(path)
    with path.open("rb") as handle:
        head = handle.read(2)
        handle.seek(0)
        if head in _UTF16_BOMS:
            return f"{where}: UTF-16 text, not UTF-8; save it as UTF-8"
        for number, raw in enumerate(handle, start=1):
            data = raw[3:] if number == 1 and raw.startswith(b"\xef\xbb\xbf") else raw
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                return (
                    f"{where}, line {number}: not UTF-8 text (byte {exc.start + 1} of the line, 0x{data[exc.start]:02x}, "
                    "cannot be decoded: latin-1, Windows-1252, or a binary file?); give it as UTF-8 text"
                )
    return f"{where}: not UTF-8 text; save it as UTF-8"  # a sequence cut at the end of the file
