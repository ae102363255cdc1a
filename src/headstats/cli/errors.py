"""Bad input, Ctrl-C, SIGTERM and a full or read-only disk as one line and an exit status; warnings as one line.

Every problem with input is reported as one line, ``error: <what> ; <fix>``, with exit status 2 and no
traceback; nothing is left half-written. Ctrl-C and SIGTERM stop a command with one line too (exit 130 and
143), after the staging folder is removed.
"""

from __future__ import annotations

import logging
import re
import signal
import sys
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


#: Loggers whose records below ERROR are the libraries' own chatter, never about the user's input: dropped
#: (matplotlib's "Matplotlib is building the font cache; this may take a moment.", its findfont lines).
CHATTY_LOGGERS = ("matplotlib", "PIL", "fontTools")


def _own(filename: object) -> bool:
    """Whether a warning was raised from headstats' own code (a library's is chatter under ``--quiet``)."""
    return Path(__file__).resolve().parents[1] in Path(str(filename)).resolve().parents


def _one_line_warning(quiet: bool):
    """``showwarning``: a warning as one line, ``warning: <message>``, on standard error (no source line, no
    path); under ``--quiet`` only headstats' own warnings (a library's, such as scipy's integration warnings,
    are left out)."""

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if quiet and not _own(filename):
            return
        typer.echo(f"warning: {message}", err=True)

    return show


class _LibraryLogLines(logging.Handler):
    """The libraries' log records (those no handler of theirs takes) as one line ``warning: <message>`` each, in
    place of Python's last-resort handler, which prints them bare; none under ``--quiet``, and none from
    :data:`CHATTY_LOGGERS` below ERROR."""

    def __init__(self, quiet: bool) -> None:
        super().__init__(logging.WARNING)
        self.quiet = quiet

    def emit(self, record: logging.LogRecord) -> None:
        chatty = record.name.split(".")[0] in CHATTY_LOGGERS and record.levelno < logging.ERROR
        if self.quiet or chatty:
            return
        try:
            text = " ".join(record.getMessage().split())
        except Exception:  # noqa: BLE001 - a library's malformed record is not the command's error
            return
        typer.echo(f"warning: {text}", err=True)


@contextmanager
def _library_output_as_lines(quiet: bool = False) -> Iterator[None]:
    """While the block runs, every warning a command raises and every library log record is one line on
    standard error (or nothing, under ``--quiet`` or for chatter), so that nothing joins the one ``error:`` line
    or breaks ``--quiet``."""
    root = logging.getLogger()
    handler = _LibraryLogLines(quiet)
    root.addHandler(handler)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning(quiet)
            yield
    finally:
        root.removeHandler(handler)


@contextmanager
def _errors(out: Path | None = None, quiet: bool = False) -> Iterator[_CommandState]:
    """Turn bad input, Ctrl-C, SIGTERM and a full or read-only disk into one line and an exit status, and the
    libraries' warnings and logs into lines of their own (none under ``quiet``; :func:`_library_output_as_lines`).

    Yields a :class:`_CommandState` whose ``out`` the command sets once it knows its output folder. Any other
    exception is a bug and keeps its traceback.
    """
    command = _CommandState(out)
    try:
        with _sigterm_raises(), _library_output_as_lines(quiet):
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


class OneLineUsageErrors:
    """A mixin for the app's Click group: a usage error (a bad option value such as ``--batch-size nan``, a
    missing or extra argument, an unknown command) is one line ``error: ...`` naming the fix, exit 2, instead of
    Click's boxed usage text."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        from typer import exceptions as typer_exceptions
        from typer._click import exceptions as click_exceptions  # Typer's own copy of Click

        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            value = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except typer_exceptions.Exit as exc:
            raise SystemExit(exc.exit_code) from None
        except click_exceptions.NoArgsIsHelpError as exc:  # bare `headstats`: its help, as before
            typer.echo(exc.ctx.get_help() if exc.ctx is not None else "", err=True)
            raise SystemExit(EXIT_BAD_INPUT) from None
        except click_exceptions.UsageError as exc:
            _usage_line(exc, list(args) if args is not None else sys.argv[1:])
        except typer_exceptions.Abort:
            typer.echo("error: interrupted", err=True)
            raise SystemExit(EXIT_INTERRUPTED) from None
        except click_exceptions.ClickException as exc:
            _fail_now(exc.format_message())
        raise SystemExit(value if isinstance(value, int) else 0)


#: Typer's (pydantic's) words for a bad option value, in headstats' words.
_VALUE_WORDS = ((re.compile(r"Input should be a valid (integer|number)[^;]*"), lambda m: (
                    "a whole number" if m.group(1) == "integer" else "a number")),
                (re.compile(r"Input should be (greater|less) than( or equal to)? (\S+)"), lambda m: (
                    f"a number {'>' if m.group(1) == 'greater' else '<'}{'=' if m.group(2) else ''} {m.group(3)}")),
                (re.compile(r"Input should be a finite number"), lambda m: "a finite number (NaN and inf are refused)"))


def _usage_line(exc, args: list[str]) -> None:
    """Print a Click usage error as one line (for a bad option value: the option, the value and what is
    allowed), with the command's help to read, and exit 2."""
    command = exc.ctx.command_path if exc.ctx is not None else "headstats"
    message = " ".join(exc.format_message().split()).rstrip(".")
    param = getattr(exc, "param", None)
    names = list(getattr(param, "opts", []) or [])
    if type(exc).__name__ == "BadParameter" and names:
        detail = message.split(": ", 1)[-1]
        for pattern, words in _VALUE_WORDS:
            found = pattern.search(detail)
            if found:
                value = _value_of(names, args)
                shown = f" {value!r} is not allowed;" if value is not None else ""
                message = f"invalid value for '{names[-1]}':{shown} it must be {words(found)}"
                break
    message = message[:1].lower() + message[1:]
    _fail_now(f"{message}; see `{command} --help`")


def _value_of(names: list[str], args: list[str]) -> str | None:
    """The value given to an option named ``names`` on the command line (``--opt value`` or ``--opt=value``)."""
    for k, arg in enumerate(args):
        for name in names:
            if arg == name and k + 1 < len(args):
                return args[k + 1]
            if arg.startswith(name + "="):
                return arg[len(name) + 1:]
    return None


def _fail_now(message: str) -> None:
    from headstats.config.protocol import printable

    typer.echo(f"error: {printable(message)}", err=True)
    raise SystemExit(EXIT_BAD_INPUT) from None
