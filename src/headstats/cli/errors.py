"""Bad input, Ctrl-C, SIGTERM and a full or read-only disk as one line and an exit status; warnings as one line.

Every problem with input is reported as one line, ``error: <what> ; <fix>``, with exit status 2 and no
traceback; nothing is left half-written. Ctrl-C and SIGTERM stop a command with one line too (exit 130 and
143), after the staging folder is removed.
"""

from __future__ import annotations

import signal
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import typer

from headstats.errors import HeadstatsError
from headstats.folders import write_error_reason

#: Exit statuses: bad input, Ctrl-C (128 + SIGINT) and SIGTERM (128 + SIGTERM).
EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_TERMINATED = 2, 130, 143


class Terminated(BaseException):
    """Raised in the main thread when the process gets SIGTERM.

    A ``BaseException`` like ``KeyboardInterrupt``, so that the cleanup that runs on Ctrl-C (``finally`` and
    ``except BaseException`` blocks, e.g. removing the staging folder) runs on SIGTERM too.
    """


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    from headstats.config.protocol import printable

    typer.echo(f"error: {printable(message)}", err=True)
    raise typer.Exit(code=code)


@dataclass
class _CommandState:
    """What a command has got to, for the line printed when it stops: its output folder, and whether it
    was written."""

    out: Path | None = None
    written: bool = False

    def stopped(self, how: str) -> str:
        if self.out is None:
            return how
        if self.written:
            return f"{how} after {self.out} was written"
        return f"{how}; nothing was written to {self.out}"


def _write_error_message(exc: OSError, command: _CommandState) -> str | None:
    """One line for an OSError that means a full, read-only or forbidden disk, else None (the reasons and fixes:
    :func:`headstats.folders.write_error_reason`)."""
    known = write_error_reason(exc)
    if known is None:
        return None
    reason, fix = known
    path = exc.filename or command.out
    where = f" at {path}" if path is not None else ""
    nothing = f" (nothing was written to {command.out})" if command.out is not None and not command.written else ""
    return f"{reason}{where}{nothing}; {fix}"


def _raise_terminated(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM does not interrupt the cleanup
    raise Terminated()


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` (in the main thread; elsewhere unchanged)."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Show a warning as one line, ``warning: <message>``, on standard error (no source line, no path)."""
    typer.echo(f"warning: {message}", err=True)


@contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """While the block runs, every warning a command raises is one line on standard error."""
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning
        yield


@contextmanager
def _errors(out: Path | None = None) -> Iterator[_CommandState]:
    """Turn bad input, Ctrl-C, SIGTERM and a full or read-only disk into one line and an exit status.

    Yields a :class:`_CommandState` whose ``out`` the command sets once it knows its output folder. Any other
    exception is a bug and keeps its traceback.
    """
    command = _CommandState(out)
    try:
        with _sigterm_raises(), _warnings_as_lines():
            yield command
    except HeadstatsError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail(command.stopped("interrupted"), EXIT_INTERRUPTED)
    except Terminated:
        _fail(command.stopped("terminated (SIGTERM)"), EXIT_TERMINATED)
    except FileNotFoundError as exc:
        _fail(f"file not found: {exc.filename}; check the path")
    except OSError as exc:
        message = _write_error_message(exc, command)
        if message is None:
            raise
        _fail(message)
