"""Drawing a report's figures, in worker processes when the machine has more than one CPU.

A report of one (model, data set) has six figures, and drawing them (building each figure, then writing its
PNG and SVG) is most of the time a report takes. The builder therefore does not draw a figure itself: it hands
a :class:`FigureRenderer` the drawing function of :mod:`headstats.plots` and that function's (small) tables,
and goes on writing the report's text while the figures are drawn, each in a worker process. Before the report
is written, :meth:`FigureRenderer.wait` collects them.

- Workers: one per CPU this process may run on (``os.sched_getaffinity``; ``os.cpu_count()`` where that is
  missing), at most one per figure; the environment variable ``HEADSTATS_FIGURE_WORKERS`` sets the number
  (``1``: draw in the calling process, e.g. to debug a figure). Processes are forked (Linux), so a worker
  starts in milliseconds with the caller's modules and matplotlib settings; where fork is not the way (macOS,
  Windows) figures are drawn in the calling process unless the variable asks for workers.
- Serial fallback: with one worker, when the pool cannot start (no fork, a daemonic caller), when a job cannot
  be pickled (a lambda), or when a worker dies, the figures concerned are drawn in the calling process.
- Errors: an exception raised while drawing a figure in a worker is raised again in the caller by
  :meth:`~FigureRenderer.wait` (the same type and message, the worker's traceback as its cause); the first
  figure to fail in the order the figures were added is the one reported, as a serial run would have stopped
  there. The other figures are cancelled.
- Workers die with their parent: each asks Linux for SIGKILL when the thread that started it ends
  (``prctl(PR_SET_PDEATHSIG)``), or, where that is not to be had (another system, a pool started outside the
  main thread), watches its parent's pid from a thread; so ``kill -9`` of ``headstats run`` or ``report`` while
  figures are drawn leaves no worker behind. Their pids and start times are also written into the staging
  marker of the folder being written (:func:`headstats.folders.record_helpers`): the next command into the same
  place ends any that are left.
- Same files: a worker runs the same function on the same data with the same settings, so its PNG and SVG
  files are byte for byte those of a serial run (tested), and so is the report that inlines them.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from headstats.errors import HeadstatsError
from headstats.folders import record_helpers
from headstats.report.blocks import draw_screen_copy, remember_screen_copy

#: Environment variable: the number of processes that draw a report's figures (1: no worker processes).
WORKERS_ENV = "HEADSTATS_FIGURE_WORKERS"


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the system has one), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def figure_workers(workers: int | None = None) -> int:
    """How many processes draw figures: ``workers`` if given, else ``$HEADSTATS_FIGURE_WORKERS``, else one
    per available CPU where processes can be forked (Linux) and 1 elsewhere.

    Raises
    ------
    HeadstatsError
        If the number (given or from the environment) is not a whole number of at least 1.
    """
    source = "workers"
    if workers is None and os.environ.get(WORKERS_ENV, "").strip():
        workers, source = os.environ[WORKERS_ENV].strip(), WORKERS_ENV
    if workers is None:
        return available_cpus() if _fork_is_the_way() else 1
    try:
        number = int(workers)
    except (TypeError, ValueError):
        number = 0
    if number < 1 or str(workers).strip() not in (str(number), f"{number}.0"):
        raise HeadstatsError(f"{source} = {workers!r} is not a number of processes; give a whole number of at "
                             f"least 1 (1 draws the figures in this process)")
    return number


def _fork_is_the_way() -> bool:
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _context():
    return multiprocessing.get_context("fork") if _fork_is_the_way() else multiprocessing.get_context()


def draw_and_save(draw: Callable, args: tuple, kwargs: dict, folder: Path, name: str,
                  formats: Sequence[str], preset=None) -> bytes | None:
    """Build a figure with ``draw(*args, **kwargs)`` and save it as ``folder/name.<fmt>`` for each format,
    both with ``preset`` (:class:`headstats.plots.style.Preset`: printed width and dpi; None: the current one).

    Returns the figure's screen copy for the HTML, drawn by matplotlib at
    :data:`~headstats.report.blocks.SCREEN_DPI` from the same laid-out figure
    (:func:`~headstats.report.blocks.draw_screen_copy`); None when the PNG is not finer than that.
    """
    import warnings

    from headstats.plots import style

    with style.using(preset), warnings.catch_warnings():
        # the pictures draw a character no installed font has as a box (plots.style.drawable) and never warn;
        # a plotting function that does not (a registered analysis' own) must not print one warning per glyph
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font")
        warnings.filterwarnings("ignore", message=r"Matplotlib currently does not support")
        fig = draw(*args, **kwargs)
        return draw_screen_copy(lambda **screen: style.save(fig, folder, name, formats=formats, **screen),
                                style.preset().dpi)


def _draw_pickled(payload: bytes) -> bytes | None:
    return draw_and_save(*pickle.loads(payload))


#: Linux's prctl option: the signal a process gets when the thread that created it ends.
PR_SET_PDEATHSIG = 1
#: Seconds between two looks at the parent's pid, where the parent-death signal is not to be had.
PARENT_POLL_S = 0.2


def _die_with_parent(parent: int, main_thread: bool) -> None:
    """Worker initializer: end this worker when the process ``parent`` that started it ends, ``kill -9``
    included: with the parent-death signal where the pool was started from the parent's main thread (the signal
    follows the creating *thread*), else with a thread that watches the parent's pid."""
    if not (main_thread and _parent_death_signal()):
        import threading

        threading.Thread(target=_watch_parent, args=(parent,), name="headstats-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)


def _parent_death_signal() -> bool:
    """Ask Linux for SIGKILL when the parent ends; False where prctl is not to be had."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    import time

    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


class FigureRenderer:
    """The figures of one report, drawn in worker processes (or here, see the module's notes).

    Parameters
    ----------
    root : Path
        The report's folder; figures go to ``root/figures``.
    formats : sequence of str, optional
        Formats to write; PNG (which the report shows) is always among them. Default: the preset's.
    workers : int, optional
        Processes that draw (default: :func:`figure_workers`); 1 draws each figure when it is added.
    preset : FigureOptions or Preset, optional
        Printed width, PNG dpi and formats (``report.figures``; default :class:`headstats.plots.style.Preset`).

    Use it as a context manager (the workers stop on leaving it), :meth:`add` each figure, and
    :meth:`wait` before reading the files.
    """

    def __init__(self, root: Path, *, formats: Sequence[str] | None = None, workers: int | None = None,
                 preset=None):
        from headstats.plots import style

        self.root = Path(root)
        self.folder = self.root / "figures"
        self.preset = style.preset_of(preset) if preset is not None else style.preset()
        self.formats = list(dict.fromkeys(["png", *(formats if formats is not None else self.preset.formats)]))
        self.workers = figure_workers(workers)
        self._pool: ProcessPoolExecutor | None = None
        self._pool_failed = self.workers < 2
        self._pending: list[tuple[str, bytes, Future]] = []
        self._names: set[str] = set()

    # ---------------------------------------------------------------------------------------------- adding

    def _claim(self, name: str) -> str:
        rel = f"figures/{name}.png"
        if name in self._names or (self.root / rel).exists():
            raise RuntimeError(f"figure {rel} written twice; figure names must be unique (use figure_tag)")
        self._names.add(name)
        self.folder.mkdir(parents=True, exist_ok=True)
        return rel

    def add(self, name: str, draw: Callable, /, *args, **kwargs) -> str:
        """Draw ``draw(*args, **kwargs)`` (a function of :mod:`headstats.plots` returning a Figure) and save it
        as ``figures/<name>.png`` (and the other formats); return the PNG's path relative to the root.

        In a worker the figure is drawn later: its files exist after :meth:`wait`. Serially it is drawn now,
        and an error of ``draw`` is raised here.

        Raises
        ------
        RuntimeError
            If a figure of that name was already added or written (two figures must never share a file).
        """
        rel = self._claim(name)
        job = (draw, args, kwargs, self.folder, name, self.formats, self.preset)
        future = None
        if not self._pool_failed:
            try:
                payload = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - e.g. a lambda: draw it here instead
                payload = None
            if payload is not None:
                future = self._submit(payload)
        if future is None:
            self._keep(name, draw_and_save(*job))
        else:
            self._pending.append((name, payload, future))
        return rel

    def save(self, fig, name: str) -> str:
        """Save a Figure drawn by the caller (here, now) as ``figures/<name>.png`` and the other formats."""
        from headstats.plots import style

        rel = self._claim(name)
        with style.using(self.preset):
            copy = draw_screen_copy(lambda **screen: style.save(fig, self.folder, name, formats=self.formats,
                                                                 **screen), self.preset.dpi)
        self._keep(name, copy)
        return rel

    def _keep(self, name: str, copy: bytes | None) -> None:
        """Hand a figure's screen copy to the HTML writer (:func:`~headstats.report.blocks.remember_screen_copy`)."""
        if copy is not None:
            remember_screen_copy(self.folder / f"{name}.png", copy)

    def _submit(self, payload: bytes) -> Future | None:
        try:
            started = self._pool is None
            if started:
                import threading

                if {"pdf", "ps", "eps"} & set(self.formats):  # the font's base subset, made once for all workers
                    from headstats.plots.fonts import warm

                    warm()

                main = threading.current_thread() is threading.main_thread()
                self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=_context(),
                                                 initializer=_die_with_parent, initargs=(os.getpid(), main))
            future = self._pool.submit(_draw_pickled, payload)
            if started:  # forked workers start at the first submit
                record_helpers(self.root, [p.pid for p in (getattr(self._pool, "_processes", None) or {}).values()])
            return future
        except Exception:  # noqa: BLE001 - no pool here (no fork, a daemonic process, no semaphores): serial
            self._pool_failed = True
            self._shutdown()
            return None

    # ------------------------------------------------------------------------------------------- collecting

    def wait(self, log: Callable[[str], None] | None = None, every: float = 5.0) -> None:
        """Wait for every figure added; raise the error of the first one (in the order added) that failed.

        ``log`` gets how many figures the workers draw, then a count of those drawn every ``every`` seconds
        until all are (drawing a Clark report's figures takes a minute on 2 cores).
        """
        pending, self._pending = self._pending, []
        if log is not None and pending:
            _count_drawn([future for _, _, future in pending], log, every, self.workers)
        for k, (name, payload, future) in enumerate(pending):
            try:
                self._keep(name, future.result())
            except BrokenProcessPool:  # a worker died (killed, out of memory): draw what is left here
                self._pool_failed = True
                self._shutdown()
                for rest_name, rest, _ in pending[k:]:
                    self._keep(rest_name, _draw_pickled(rest))
                return
            except BaseException:
                for _, _, other in pending[k + 1:]:
                    other.cancel()
                self._shutdown()
                raise

    def close(self) -> None:
        """Stop the workers (figures not yet drawn are cancelled)."""
        for _, _, future in self._pending:
            future.cancel()
        self._pending = []
        self._shutdown()

    def _shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> FigureRenderer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _count_drawn(futures: list[Future], log: Callable[[str], None], every: float, workers: int) -> None:
    """Log ``report: drawing N figures in P processes``, then, while some are left, ``report: k of N figures
    drawn`` when another tenth of them is drawn (looked at every ``every`` seconds), or after six looks without
    a line (a failed figure counts as drawn: :meth:`FigureRenderer.wait` raises its error)."""
    import time
    from concurrent.futures import wait as wait_for

    total = len(futures)
    log(f"report: drawing {total} figure{'s' if total != 1 else ''} in {workers} processes")
    left, said, quiet_since = set(futures), 0, time.monotonic()
    while left:
        _, left = wait_for(left, timeout=every)
        done = total - len(left)
        if left and (done - said >= max(1, total // 10) or time.monotonic() - quiet_since >= 6 * every):
            log(f"report: {done} of {total} figures drawn")
            said, quiet_since = done, time.monotonic()


#: The renderers of the reports being built (innermost last): sections draw through them.
_ACTIVE: list[FigureRenderer] = []


@contextmanager
def active_renderer(renderer: FigureRenderer) -> Iterator[FigureRenderer]:
    """Make ``renderer`` the one :func:`draw_figure` uses for its folder while the block runs."""
    _ACTIVE.append(renderer)
    try:
        yield renderer
    finally:
        _ACTIVE.remove(renderer)


def draw_figure(root: Path, name: str, draw: Callable, /, *args, **kwargs) -> str:
    """Draw ``draw(*args, **kwargs)`` as ``figures/<name>`` of the report in ``root``: in the worker processes
    of the report's :class:`FigureRenderer` while one is building that report (:func:`active_renderer`), else
    here and now with the current preset. Returns the PNG's path relative to ``root``.

    This is how an analysis' report section draws (``section(report, root, tables)``): it hands over the
    plotting function and its small tables, not a drawn figure, so that its figures are drawn alongside the
    others.
    """
    for renderer in reversed(_ACTIVE):
        if renderer.root == Path(root):
            return renderer.add(name, draw, *args, **kwargs)
    with FigureRenderer(root, workers=1) as renderer:
        return renderer.add(name, draw, *args, **kwargs)
