"""Ctrl-C, SIGTERM, a full or read-only disk and warnings: one line and an exit status, nothing half-written."""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path

import pytest

from cli.cli_helpers import DEMO, runner, assert_one_line_error
from headstats.cli.main import app


def _score_args(tiny_model_dir, out: Path) -> list[str]:
    return ["score", "--model", str(tiny_model_dir), "--data", str(DEMO / "mini.conllu"), "--out", str(out), "--quiet"]


def _fail_while_writing(monkeypatch, action) -> None:
    """Make the first table write of a command do ``action`` (inside the staging folder)."""
    import headstats.study.scoring

    def write_scores(arrays, path, **kwargs):
        path.write_bytes(b"half")
        action(path)

    monkeypatch.setattr(headstats.study.scoring, "write_scores", write_scores)


def assert_stopped(result, code: int, line: str, out: Path) -> None:
    assert result.exit_code == code, result.output
    assert result.output.strip() == line, result.output
    assert not out.exists() and not list(out.parent.glob(f".{out.name}.partial-*"))


def test_ctrl_c_prints_one_line(tmp_path, tiny_model_dir, monkeypatch):
    def interrupt(path):
        raise KeyboardInterrupt

    _fail_while_writing(monkeypatch, interrupt)
    out = tmp_path / "o"
    result = runner.invoke(app, _score_args(tiny_model_dir, out))
    assert_stopped(result, 130, f"error: interrupted; nothing was written to {out.resolve()}", out)


def test_ctrl_c_before_the_output_is_known(tmp_path, monkeypatch):
    import headstats.study.preflight

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(headstats.study.preflight, "preflight", interrupt)
    path = tmp_path / "p.yaml"
    path.write_text("datasets: [{name: a, path: x.txt}]\n")
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 130 and result.output.strip() == "error: interrupted"
    result = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 130
    assert result.output.strip() == f"error: interrupted; nothing was written to {tmp_path / 'o'}"


def test_sigterm_cleans_up_like_ctrl_c(tmp_path, tiny_model_dir, monkeypatch):
    def terminate(path):
        os.kill(os.getpid(), signal.SIGTERM)

    _fail_while_writing(monkeypatch, terminate)
    before = signal.getsignal(signal.SIGTERM)
    out = tmp_path / "o"
    result = runner.invoke(app, _score_args(tiny_model_dir, out))
    assert_stopped(result, 143, f"error: terminated (SIGTERM); nothing was written to {out.resolve()}", out)
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is put back


@pytest.mark.parametrize("error, words", [
    (lambda p: OSError(errno.ENOSPC, "No space left on device", str(p)), "no space left on device at {path}"),
    (lambda p: OSError("IOError: write failed: No space left on device"), "no space left on device at {out}"),
    (lambda p: OSError(errno.EDQUOT, "Disk quota exceeded", str(p)), "disk quota exceeded at {path}"),
    (lambda p: PermissionError(errno.EACCES, "Permission denied", str(p)), "permission denied at {path}"),
    (lambda p: OSError(errno.EROFS, "Read-only file system", str(p)), "read-only file system at {path}"),
])
def test_full_or_read_only_disk_gives_one_line(tmp_path, tiny_model_dir, monkeypatch, error, words):
    seen = {}

    def fail(path):
        seen["path"] = path
        raise error(path)

    _fail_while_writing(monkeypatch, fail)
    out = tmp_path / "o"
    result = runner.invoke(app, _score_args(tiny_model_dir, out))
    expected = words.format(path=seen["path"], out=out.resolve())
    assert_one_line_error(result, expected, f"(nothing was written to {out.resolve()})", "choose another --out")
    assert not out.exists() and not list(tmp_path.glob(".o.partial-*"))


def test_other_os_errors_keep_their_traceback(tmp_path, tiny_model_dir, monkeypatch):
    def fail(path):
        raise OSError(errno.EIO, "Input/output error", str(path))

    _fail_while_writing(monkeypatch, fail)
    result = runner.invoke(app, _score_args(tiny_model_dir, tmp_path / "o"))
    assert result.exit_code == 1 and isinstance(result.exception, OSError)  # a bug or a broken disk: not hidden


def test_a_warning_inside_a_command_is_one_line_on_stderr(capsys):
    """Warnings (e.g. an analysis skipped for a model without a head) show as ``warning: ...``, no path or source."""
    import warnings

    from headstats.cli.main import _errors

    with _errors():
        warnings.warn("gradients: skipped for model 'default': it has no classifier or MLM head", UserWarning)
    err = capsys.readouterr().err
    assert err == "warning: gradients: skipped for model 'default': it has no classifier or MLM head\n"


FONT_CACHE_LINE = "Matplotlib is building the font cache; this may take a moment."


@pytest.mark.parametrize("quiet", [False, True])
def test_library_output_never_joins_the_error_line_or_breaks_quiet(capsys, quiet):
    import logging
    import warnings

    import headstats.inputs.readers as own_module
    from headstats.cli.main import _errors
    from headstats.errors import DataError

    import typer

    with pytest.raises(typer.Exit) as stopped:  # exit status 2 after the one error line
        with _errors(quiet=quiet):
            logging.getLogger("matplotlib.font_manager").warning(FONT_CACHE_LINE)  # chatter: never shown
            logging.getLogger("scipy.integrate").warning("a library's\nwarning")  # one line, not under --quiet
            warnings.warn("a library warning", RuntimeWarning)  # raised here, outside headstats
            warnings.warn_explicit("headstats' own warning", UserWarning, own_module.__file__, 1)
            raise DataError("the bad input; the fix")
    assert stopped.value.exit_code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == "error: the bad input; the fix" and sum(line.startswith("error") for line in err) == 1
    assert FONT_CACHE_LINE not in "\n".join(err)
    expected = ["warning: headstats' own warning"] if quiet else [
        "warning: a library's warning", "warning: a library warning", "warning: headstats' own warning"]
    assert err[:-1] == expected
    assert not any(isinstance(h, logging.Handler) and type(h).__name__ == "_LibraryLogLines"
                   for h in logging.getLogger().handlers)  # removed when the command ends


def test_the_font_cache_line_of_an_empty_mplconfigdir_stays_out_of_the_error_line(tmp_path):
    """In a real process with an empty MPLCONFIGDIR, matplotlib builds its font cache inside the command (its
    5-second timer made immediate, as on a slow machine) and logs the line; the command prints its one line."""
    import subprocess
    import sys

    code = """
import threading
class Now:  # matplotlib's 5 s timer before it logs the font cache line, fired at once (a slow machine)
    def __init__(self, interval, function): self.function = function
    def start(self): self.function()
    def cancel(self): pass
threading.Timer = Now
import headstats.cli.study_commands as commands
real = commands._load
def load(*args):
    import matplotlib.pyplot  # builds the font cache in the empty MPLCONFIGDIR
    return real(*args)
commands._load = load
from headstats.cli.main import main
main()
"""
    config = tmp_path / "mpl"
    config.mkdir()
    env = {**os.environ, "MPLCONFIGDIR": str(config), "PYTHONWARNINGS": "default"}
    protocol = Path(__file__).resolve().parents[2] / "protocols" / "quickstart.yaml"
    done = subprocess.run([sys.executable, "-c", code, "run", str(protocol), "--out", str(tmp_path / "out"),
                           "--quiet", "--set", "statistics.tau=abc"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert list(config.glob("fontlist-*.json")), "the font cache was not built in the empty folder"
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert done.stderr.splitlines() == ["error: --set statistics.tau=abc: invalid protocol at 'statistics.tau': "
                                        "'abc' is not allowed; it must be expected a number, not 'abc'"], done.stderr
