"""Checks that a registered analysis keeps the contract every analysis keeps, as scikit-learn's ``check_estimator``
does for an estimator: run them on your own analysis before you use it in a study.

:func:`check_analysis` runs a small study (a model you give, a few inputs of the data sets you give) with the
analysis alone, three ways, and checks:

1. **chunked states equal one chunk** and **shards merged equal one pass**: the same study cut into chunks of two
   inputs and run as two shards (``--shard 1/2``, ``2/2``: each shard merges its chunks' states, as the state
   cache and a resumed run do) merged by ``headstats merge`` writes the analysis' tables of the study run in one
   chunk (give at least 5 inputs, so that a shard holds two chunks);
2. **declared table schemas hold**: every table the analysis writes is declared in its spec
   (``register_analysis(..., tables=...)``), and has every column its spec declares (``TableSpec.columns``);
3. **finish imports no torch**: each finish step's and the claims' module, imported in a fresh interpreter,
   imports neither torch nor matplotlib (the statistics run where no model is);
4. **the section renders**: the analysis' section, given the tables read back from the run folder (with the run's
   ``claims.csv``), adds blocks to a report, which renders as Markdown, and every figure it names is drawn.

The runs pass one input per batch, so that every input's attention is the same float32 numbers in every run (a
padded batch moves them in their last digits); tables are then compared value for value: text, integer and
boolean columns exactly, floats to a relative 1e-6 or an absolute 1e-9 (the order in which states are merged
moves float64 sums in their last digits, and a t statistic of a measure near 0 multiplies that).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["AnalysisCheckError", "check_analysis"]

#: Relative and absolute tolerance of float columns between the one-chunk run and the chunked or sharded one.
RTOL, ATOL = 1e-6, 1e-9


class AnalysisCheckError(AssertionError):
    """An analysis broke the contract :func:`check_analysis` checks; the message names the check and the table."""


def check_analysis(name: str, folder: str | Path, *, model: str | Path, datasets: Sequence[Mapping[str, Any]],
                   options: Mapping[str, Any] | None = None, protocol: Mapping[str, Any] | None = None) -> dict:
    """Run the checks of the module docstring on the registered analysis ``name``.

    Parameters
    ----------
    name : str
        A registered analysis that a protocol may name (``headstats.analyses.list_analyses()``).
    folder : path
        An empty or missing folder for the runs (two run folders and two shards).
    model : path
        A model folder (a small one: the checks run three studies and a merge).
    datasets : list of mappings
        The protocol's ``datasets`` (``name``, ``path``, ``limit`` ...): keep them small (about 10 inputs).
    options : mapping, optional
        The analysis' options (``analysis_options: {name: options}``).
    protocol : mapping, optional
        Other protocol keys to set (e.g. ``scoring``).

    Returns
    -------
    dict
        ``{table: frame}``: the analysis' tables of the one-chunk run.

    Raises
    ------
    AnalysisCheckError
        The first check that fails, naming it.
    """
    from headstats.analyses import check_analyses, get_analysis

    check_analyses([name])
    spec = get_analysis(name)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    n_inputs = sum(int(d.get("limit") or 1_000_000) for d in datasets)
    base = {
        "name": f"check_{name}", "models": [{"name": "m", "path": str(model)}], "datasets": [dict(d) for d in datasets],
        "scoring": {"batch_size": 1, "roles": ["local"]},
        "statistics": {"tau": 1.0, "sensitivity": False, "n_resamples": 99},
        "analyses": [name], "analysis_options": {name: dict(options)} if options else {},
        "report": {"html": False, "figures": {"formats": ["png"], "dpi": 72}},
        **dict(protocol or {}),
    }
    whole = _run(folder / "whole", {**base, "execution": {"chunk_size": max(n_inputs, 2)}})
    reference = _tables(whole, name)
    _check_schemas(spec, reference)
    merged = _merged(folder, {**base, "execution": {"chunk_size": 2}})
    _same(reference, _tables(merged, name), "chunked and sharded states merged equal one pass")
    _check_no_torch(spec)
    _check_section(spec, whole, reference)
    return reference


def _run(out: Path, protocol: dict, *, shard: tuple[int, int] | None = None) -> Path:
    from headstats.config.protocol import Protocol
    from headstats.study.plan import Execution
    from headstats.study.run import run_study

    run_study(Protocol.model_validate(protocol), out, execution=Execution(cache=False, shard=shard))
    return out


def _merged(folder: Path, protocol: dict) -> Path:
    from headstats.study.merge import merge_shards

    shards = [_run(folder / f"shard{i}", protocol, shard=(i, 2)) for i in (1, 2)]
    out = folder / "merged"
    merge_shards(shards, out)
    return out


def _tables(run: Path, name: str) -> dict:
    """The analysis' tables of the run folder, read back (:meth:`headstats.tables.RunTables.read`)."""
    from headstats.tables import RunTables

    return RunTables.read(run)[0].of(name)


def _same(reference: dict, other: dict, check: str) -> None:
    import numpy as np
    import pandas as pd

    if sorted(reference) != sorted(other):
        raise AnalysisCheckError(f"{check}: tables {sorted(other)} against {sorted(reference)}")
    for table, frame in reference.items():
        got = other[table]
        if list(got.columns) != list(frame.columns) or len(got) != len(frame):
            raise AnalysisCheckError(f"{check}: {table} has columns {list(got.columns)} and {len(got)} rows against "
                                     f"{list(frame.columns)} and {len(frame)}")
        for column in frame.columns:
            a, b = frame[column], got[column]
            if pd.api.types.is_float_dtype(a) and pd.api.types.is_numeric_dtype(b):
                ok = np.allclose(a.to_numpy(float), b.to_numpy(float), rtol=RTOL, atol=ATOL, equal_nan=True)
            else:
                ok = a.astype(str).tolist() == b.astype(str).tolist()
            if not ok:
                raise AnalysisCheckError(f"{check}: column {column!r} of {table} differs")


def _check_schemas(spec, tables: dict) -> None:
    undeclared = sorted(set(tables) - set(spec.tables))
    if undeclared:
        raise AnalysisCheckError(f"declared table schemas hold: {spec.name} writes {undeclared}, which its spec does "
                                 "not declare (register_analysis(..., tables={...}))")
    for table, frame in tables.items():
        missing = [c for c in spec.tables[table].columns if c not in frame.columns]
        if missing:
            raise AnalysisCheckError(f"declared table schemas hold: {table} lacks the columns {missing} its spec "
                                     "declares")


def _modules(spec) -> list[str]:
    """The modules of the analysis' finish steps and claims."""
    steps = spec.finish if isinstance(spec.finish, tuple) else (spec.finish,)
    out = [step.partition(":")[0] if isinstance(step, str) else step.__module__ for step in steps if step is not None]
    return out + ([spec.claims] if spec.claims else [])


def _check_no_torch(spec) -> None:
    """A finish step that trains with torch (probing's probes) lives in ``collect.py``; the step of ``finish.py``
    and the claims import neither torch nor matplotlib."""
    modules = [m for m in _modules(spec) if not m.endswith(".collect")]
    if not modules:
        return
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print(sorted({'torch', 'matplotlib'} & {k.split('.')[0] for k in sys.modules}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                          env=_env())
    if done.returncode != 0 or done.stdout.strip() != "[]":
        raise AnalysisCheckError(f"finish imports no torch: importing {modules} imports "
                                 f"{done.stdout.strip() or done.stderr.strip().splitlines()[-1:]}")


def _env() -> dict:
    import os

    import headstats

    path = str(Path(headstats.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": os.pathsep.join([path, *sys.path])}


def _check_section(spec, run: Path, tables: dict) -> None:
    import pandas as pd

    from headstats.plots.style import Preset
    from headstats.report.blocks import Report, render_markdown
    from headstats.report.figures import FigureRenderer
    from headstats.tables import RunTables

    section = spec.section_function()
    if section is None:
        return
    report = Report("check")
    claims = pd.read_csv(run / "claims.csv", keep_default_na=False, na_values=[""])
    with FigureRenderer(run, workers=1, preset=Preset(dpi=72, formats=("png",))):  # drawn as a quick report's
        section(report, run, RunTables(tables, owner=spec.name).replaced({"claims": claims}))
    if not report.blocks:
        raise AnalysisCheckError(f"the section renders: the section of {spec.name} added nothing")
    render_markdown(report, run)
    missing = [b.content for b in report.blocks if b.kind == "figure" and not (run / b.content).is_file()]
    if missing:
        raise AnalysisCheckError(f"the section renders: figures {missing} were not drawn")
