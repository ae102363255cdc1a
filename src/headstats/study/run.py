"""Run a whole protocol: read and parse the data, build and load the models, score, test, assign roles,
compare, and write the output folder (tables, figures, report, manifest).

This is the layer just below the CLI; it takes plain callbacks for logging and progress so that it can be
driven from Python too::

    from headstats.config.protocol import load_protocol
    from headstats.study.run import run_study

    run_study(load_protocol("protocols/quickstart.yaml"), "runs/quickstart", overwrite=True)
"""

from __future__ import annotations

import json
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ContextManager, Sequence

import pandas as pd

from headstats.errors import DataError, HeadstatsError
from headstats.inputs.records import Record
from headstats.measures import MeasureArray
from headstats.config.protocol import DatasetSpec, Protocol, dump_protocol
from headstats.folders import OutputClaim, claim_output
from headstats.study.storage import file_hashes, write_manifest, write_table

Log = Callable[[str], None]
ProgressFactory = Callable[[str, int], ContextManager[Callable[[int], None]]]


@contextmanager
def _no_progress(description: str, total: int):
    yield lambda n: None


@dataclass
class LoadedData:
    """A data set's records and where they came from."""

    spec: DatasetSpec
    #: The records (a list; from the cache, a sequence that reads them at the first look).
    records: Sequence[Record]
    files: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    #: ``(sentence_id, reason)`` of records left out before parsing (empty, or too long to ever fit).
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Whether some record is a pair, and whether some record is parsed (which roles apply).
    has_pairs: bool = False
    has_parses: bool = False
    #: The :func:`~headstats.engine.cache.record_digest` of each record, when the run caches (chunk keys).
    digests: list[bytes] | None = None

    def counted(self, counts: dict) -> dict:
        """``counts`` of a scoring of :attr:`records` with the records left out before parsing added in."""
        from collections import Counter

        from headstats.inputs.filters import skipped_counts

        merged = Counter(counts.get("skipped", {})) + Counter(skipped_counts(self.skipped))
        return counts | {"n_records": counts.get("n_records", 0) + len(self.skipped), "skipped": dict(merged)}


@dataclass
class StudyResult:
    """Everything a study computed (also written to the output folder).

    ``scores`` holds one :class:`~headstats.measures.MeasureArray` per (model, data set);
    :meth:`scores_frame` makes the long table of ``scores.parquet``.
    """

    out: Path
    scores: list[MeasureArray]
    tests: pd.DataFrame
    roles: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    manifest: dict

    def scores_frame(self) -> pd.DataFrame:
        """The long scores table ``model, dataset, sentence_id, layer, head, role, score``."""
        from headstats.study.scoring import long_frame

        return long_frame(self.scores)

    @property
    def report_path(self) -> Path | None:
        """The report's file (``report.html``, else ``report.md``), or None when the run wrote neither."""
        for name in ("report.html", "report.md"):
            if (self.out / name).is_file():
                return self.out / name
        return None

    def show_report(self, *, height: int = 800):
        """Show the run's report: in Jupyter, ``report.html`` embedded in the notebook (it is self-contained,
        so it shows offline); elsewhere, opened in the web browser.

        Returns
        -------
        IPython.display.HTML or Path
            The displayable report when IPython is there (the last expression of a cell shows it), else the
            report's path.
        """
        import html

        path = self.report_path
        if path is None:
            raise HeadstatsError(f"{self.out} holds no report; rebuild it with headstats report {self.out}")
        try:
            from IPython.display import HTML
        except ImportError:
            import webbrowser

            webbrowser.open(path.resolve().as_uri())
            return path
        if path.suffix != ".html":
            from IPython.display import Markdown

            return Markdown(path.read_text(encoding="utf-8"))
        page = html.escape(path.read_text(encoding="utf-8"), quote=True)
        return HTML(f'<iframe srcdoc="{page}" style="width:100%;height:{int(height)}px;border:1px solid #ccc">'
                    "</iframe>")

    def _summary_rows(self) -> list[list]:
        """Per (model, data set): inputs scored, heads, heads with a role, and the heads per role."""
        from headstats.assignment.role_assignment import role_columns

        roles = self.roles
        if roles.empty or not {"model", "dataset"} <= set(roles.columns):  # a shard: no statistics
            return []
        columns = role_columns(roles)
        rows = []
        for (model, dataset), group in roles.groupby(["model", "dataset"], sort=False):
            held = group[columns].astype("boolean")
            counts = ", ".join(f"{c} {int(held[c].sum())}" for c in columns if held[c].notna().any())
            scored = self.manifest.get("inputs", {}).get(f"{model}/{dataset}", {}).get("n_scored")
            rows.append([model, dataset, scored, len(group), int(held.fillna(False).any(axis=1).sum()), counts])
        return rows

    def __repr__(self) -> str:
        """At most 15 lines: per (model, data set) the heads holding each role, the tables, the output folder
        and the report (never the tables themselves)."""
        from headstats.measures import text_summary

        report = self.report_path
        facts = {"report": f"{report} (.show_report())" if report else None,
                 "tables": ", ".join(["tests", "roles", *self.tables]),
                 "wall time": f"{self.manifest['wall_time_s']} s" if self.manifest.get("wall_time_s") else None,
                 "protocol sha256": str(self.manifest.get("protocol_sha256", ""))[:16]}
        return text_summary(f"StudyResult in {self.out}", ["model", "dataset", "inputs", "heads", "with a role",
                                                           "heads per role"], self._summary_rows(), facts,
                            what="(model, data set) rows", width=150)

    def _repr_html_(self) -> str:
        """A short HTML summary for Jupyter: per (model, data set) the inputs scored and the heads holding each
        role, the output folder and a link to the report (``show_report()`` shows it here)."""
        from headstats.measures import HTML_ROWS, html_summary

        rows = self._summary_rows()
        more = f"and {len(rows) - HTML_ROWS} more" if len(rows) > HTML_ROWS else ""
        report = self.report_path
        link = (f" <a href='{report.resolve().as_uri()}' target='_blank'>{report.name}</a>" if report else "")
        import html

        title = (f"<b>StudyResult</b> <code>{html.escape(str(self.manifest.get('headstats_run', '')))}</code> in "
                 f"<code>{html.escape(str(self.out))}</code>:{link} (<code>.show_report()</code> shows it here)")
        facts = {"tables": ", ".join(["tests", "roles", *self.tables]),
                 "wall time": f"{self.manifest['wall_time_s']} s" if self.manifest.get("wall_time_s") else None,
                 "protocol sha256": str(self.manifest.get("protocol_sha256", ""))[:16]}
        return html_summary(title, ["model", "dataset", "inputs scored", "heads", "heads with a role",
                                    "heads per role"], rows[:HTML_ROWS], facts, more)


def needs_parses(protocol: Protocol) -> bool:
    from headstats.analyses.roles import get_role

    return any(get_role(r).kind == "arc" for r in protocol.scoring.roles)


def load_data(spec: DatasetSpec, protocol: Protocol, *, exclude_ids: set[str] | None = None) -> LoadedData:
    """Read one data set (file or GLUE task), leave out what can never be scored, and parse the rest if the
    protocol's roles need parses.

    Records with no visible text, or with more words than ``scoring.max_length`` pieces can hold (every word
    is at least one piece), are left out before parsing and counted (:attr:`LoadedData.skipped`); with
    ``too_long: truncate`` a long record is parsed on the prefix that can be scored.
    """
    from headstats.inputs.filters import split_unusable
    from headstats.inputs.parsing import parse_records
    from headstats.inputs.readers import read_records

    info: dict = {"name": spec.name}
    if spec.path is not None:
        records = read_records(spec.path, format=spec.format, limit=spec.limit)
        files = [spec.path]
        info.update(source="file", path=spec.path, format=spec.format or Path(spec.path).suffix.lstrip("."))
    else:
        from headstats.inputs.glue import glue_file, load_glue

        glue = spec.glue
        root = glue.root or protocol.data_root
        excluded = set(exclude_ids or ())
        records = load_glue(glue.task, split=glue.split, root=root, n=glue.n or spec.limit, sample=glue.sample,
                            seed=protocol.seed, exclude_ids=excluded)
        files = []
        if root is not None:
            try:
                files = [str(glue_file(glue.task, glue.split, root))]
            except HeadstatsError:
                files = []
        info.update(source="glue", task=glue.task, split=glue.split, n=glue.n, sample=glue.sample,
                    excluded_finetune_rows=len(excluded))
    info["n_read"] = len(records)
    info["pairs"] = sum(r.is_pair for r in records)
    records, skipped = split_unusable(records, max_length=protocol.scoring.max_length,
                                      too_long=protocol.scoring.too_long)
    if not records:
        from headstats.inputs.filters import skipped_counts

        raise DataError(
            f"no input of data set {spec.name!r} could be scored ({skipped_counts(skipped)}); "
            "raise scoring.max_length or set scoring.too_long: truncate"
        )
    parse = spec.parse
    if parse == "spacy" or (parse == "auto" and needs_parses(protocol)):
        if parse == "spacy":
            records = [Record(r.sentence_id, r.text_a, r.text_b, r.label, meta=r.meta) for r in records]
        clean = protocol.scoring.alignment == "first_occurrence"
        gold = 0 if clean else sum(r.is_parsed for r in records)
        records = parse_records(records, parser=protocol.scoring.parser, clean=clean)
        info["parses"] = "gold" if gold == len(records) else ("spacy" if gold == 0 else "gold+spacy")
        info["parser"] = None if gold == len(records) else protocol.scoring.parser
    elif parse == "gold":
        info["parses"] = "gold"
    else:  # no role needs parses: the data's own (a gold-parsed CoNLL-U file) are still said
        gold = parse == "auto" and records and all(r.is_parsed for r in records)
        info["parses"] = "gold" if gold else "none"
    from headstats.study.scoring import record_kinds

    has_pairs, has_parses = record_kinds(records)
    return LoadedData(spec=spec, records=records, files=files, info=info, skipped=skipped, has_pairs=has_pairs,
                      has_parses=has_parses)


def _training_progress(name: str, log: Log, progress: ProgressFactory, stack: ExitStack):
    """A fine-tuning callback: a bar of steps (with the loss where the bar can show it) and a log line at
    every 10 % of the steps, with the loss and the time left."""
    from headstats.model.finetune import TenPercentLog

    lines = TenPercentLog(log, f"fine-tuning {name}")
    bar: list = []

    def report(step) -> None:
        if not bar:  # the number of steps is known at the first step
            bar.append(stack.enter_context(progress(f"fine-tuning {name} (steps)", step.total)))
        bar[0](1)
        status = getattr(bar[0], "status", None)
        if status is not None:
            status(f"loss {step.loss:.3f}")
        lines(step)

    return report


def build_models(protocol: Protocol, log: Log, progress: ProgressFactory = _no_progress, *,
                 cache_dir: str | Path | None = None) -> tuple[dict[str, str], dict[str, dict]]:
    """Resolve every model spec to something ``load_model`` takes, fine-tuning where asked: checkpoints are
    kept under ``checkpoints/`` of the cache root (``cache_dir``, the protocol's ``cache_dir``, else
    ``$HEADSTATS_CACHE_DIR``...), where ``headstats finetune`` puts them too."""
    sources, finetuned = {}, {}
    for spec in protocol.models:
        if spec.finetune is None:
            sources[spec.name] = spec.source
            continue
        from headstats.model.finetune import cached_finetune

        from headstats.engine.cache import resolve_cache_root

        cache = resolve_cache_root(cache_dir, protocol.cache_dir)
        log(f"fine-tuning (or reusing) {spec.name}: {spec.finetune.base} on {spec.finetune.task}")
        with ExitStack() as stack:
            path = cached_finetune(spec.finetune, cache_dir=cache, data_root=protocol.data_root,
                                   progress=_training_progress(spec.name, log, progress, stack))
        sources[spec.name] = str(path)
        metrics_file = Path(path) / "metrics.json"
        metrics = json.loads(metrics_file.read_text()) if metrics_file.exists() else None
        accuracy = (metrics or {}).get("accuracy")
        log(f"{spec.name}: checkpoint {path}" + (f" (dev accuracy {accuracy:.3f})" if accuracy is not None else ""))
        finetuned[spec.name] = {"path": str(path), "recipe": spec.finetune.model_dump(), "metrics": metrics}
    return sources, finetuned


def training_exclusions(spec: DatasetSpec, finetuned: dict[str, dict]) -> set[str]:
    """Ids of a GLUE data set's rows that any fine-tuned model of the study was trained on."""
    if spec.glue is None or not spec.glue.exclude_finetune_rows or not finetuned:
        return set()
    from headstats.model.finetune import analysis_exclusions

    out: set[str] = set()
    for info in finetuned.values():
        out |= analysis_exclusions(info["path"], spec.glue.task, spec.glue.split)
    return out


@dataclass(frozen=True)
class Execution:
    """How a run's passes are executed (what the CLI options set; none of it changes a number).

    Attributes
    ----------
    cache : bool
        Look chunk states up in, and store them to, the state cache (``--no-cache`` / ``execution.cache``).
    cache_dir : str, optional
        ``--cache-dir``; else the protocol's ``cache_dir``, ``$HEADSTATS_CACHE_DIR``, ``~/.cache/headstats``.
    shard : (i, n), optional
        ``--shard i/n``: run shard ``i`` of ``n`` and write a shard folder (joined by ``headstats merge``).
    """

    cache: bool = True
    cache_dir: str | None = None
    shard: tuple[int, int] | None = None


def cache_root(protocol: Protocol, execution: Execution) -> Path | None:
    """The state cache folder of a run, or None when caching is off."""
    from headstats.engine.cache import resolve_cache_root

    if not execution.cache or not protocol.execution.cache:
        return None
    return resolve_cache_root(execution.cache_dir, protocol.cache_dir)


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` -> (i, n) with 1 <= i <= n."""
    from headstats.errors import ProtocolError

    try:
        i, n = (int(part) for part in str(text).split("/"))
    except ValueError:
        raise ProtocolError(f"--shard {text!r} is not of the form i/n (e.g. 1/4)") from None
    if not 1 <= i <= n:
        raise ProtocolError(f"--shard {text!r}: i must be between 1 and n (e.g. 1/{max(n, 1)})")
    return i, n


def run_study(
    protocol: Protocol,
    out: str | Path | None = None,
    *,
    overwrite: bool = False,
    log: Log = lambda message: None,
    progress: ProgressFactory = _no_progress,
    execution: Execution = Execution(),
) -> StudyResult:
    """Run a protocol end to end and write its output folder.

    Parameters
    ----------
    protocol : Protocol
        A validated protocol (:func:`headstats.config.protocol.load_protocol`).
    out : path, optional
        The output folder (default: the protocol's ``output``, else ``runs/<name>``).
    overwrite : bool
        Replace an existing output folder (otherwise refused before any work starts).
    log, progress
        Callbacks for messages and for progress bars (``progress(description, total)`` is a context
        manager yielding ``advance(n)``).
    execution : Execution
        Cache and shard (see :class:`Execution`). With a shard, the output is a shard folder
        (:mod:`headstats.study.merge`) and the result holds no statistics.
    """
    from headstats.study.preflight import preflight

    started = time.time()
    out = preflight(protocol, out=out or protocol.output or f"runs/{protocol.name}", overwrite=overwrite,
                    cache_dir=cache_root(protocol, execution))
    # preflight checked that the output holds none of the run's inputs; the claim locks it and stages
    with claim_output(out, overwrite=overwrite) as claim:
        result = _run_claimed(protocol, claim, started=started, log=log, progress=progress, execution=execution)
    log(f"done in {result.manifest['wall_time_s']:.1f} s: {out}")
    return result


def read_data(protocol: Protocol, finetuned: dict[str, dict], log: Log, *,
              cache: Path | None = None) -> dict[str, LoadedData]:
    """Read (and parse) every data set, saying how long it took.

    With a ``cache`` folder, a data set whose files, spec and reading options are those of an earlier run is
    taken from the cache (:func:`memoised_load_data`) instead of being read and parsed again.
    """
    data = {}
    for spec in protocol.datasets:
        log(f"reading data set {spec.name}")
        t0 = time.perf_counter()
        exclude = training_exclusions(spec, finetuned)
        data[spec.name], found = memoised_load_data(spec, protocol, exclude_ids=exclude, cache=cache)
        took = time.perf_counter() - t0
        n = len(data[spec.name].records)
        how = "found in the cache" if found else f"({data[spec.name].info.get('parses', 'none')} parses)"
        log(f"read {spec.name}: {n:,} inputs {how} in {took:.1f} s ({n / max(took, 1e-9):,.0f} inputs/s)")
    return data


def memoised_load_data(spec: DatasetSpec, protocol: Protocol, *, exclude_ids: set[str],
                       cache: Path | None) -> tuple[LoadedData, bool]:
    """:func:`load_data`, taken from the cache folder when an earlier run read the same files the same way.

    The key (:mod:`headstats.study.memo`) holds the sha256 of the data set's files, its spec, the scoring
    options that shape reading and parsing (``max_length``, ``too_long``, ``parser``, ``alignment``, whether the
    roles need parses), the ids left out for fine-tuning, the seed (GLUE samples) and the installed package
    versions (readers, spaCy and its model). A data set with no local file (a hub data set) is always read.

    What is stored is the data set without its records (counts, skipped ids, each record's digest) and, apart,
    its records; the records are read from the cache only when something looks at them
    (:class:`headstats.study.memo.RecordsFromCache`), which a re-run whose chunk states are all in the cache
    never does. With a cache, the data carries its records' digests (:attr:`LoadedData.digests`).

    Returns
    -------
    (LoadedData, bool)
        The data, and whether it came from the cache.
    """
    if cache is None:
        return load_data(spec, protocol, exclude_ids=exclude_ids), False
    from dataclasses import replace

    from headstats.engine.cache import StateCache, record_digest
    from headstats.study.memo import RecordsFromCache, folder_identity, pickled_slices, recall, remember, unpickled_slices
    from headstats.study.storage import package_versions

    def read() -> LoadedData:
        data = load_data(spec, protocol, exclude_ids=exclude_ids)
        return replace(data, digests=[record_digest(r) for r in data.records])

    files = _data_files(spec, protocol)
    if not files:
        return read(), False
    sc = protocol.scoring
    parser = Path(sc.parser).expanduser()
    key = [file_hashes(files), spec.model_dump(mode="json"), sc.max_length, sc.too_long, sc.parser, sc.alignment,
           needs_parses(protocol), sorted(exclude_ids), protocol.seed, package_versions(),
           folder_identity(parser) if parser.is_dir() else None]
    store = StateCache(cache)
    found, summary = recall(store, "data set", key)
    if found:
        def records() -> list[Record]:
            there, slices = recall(store, "data set records", key)
            return unpickled_slices(slices) if there else load_data(spec, protocol, exclude_ids=exclude_ids).records

        return replace(summary, records=RecordsFromCache(len(summary.digests), records)), True
    data = read()
    remember(store, "data set records", key, pickled_slices(data.records))  # before the summary that points to it
    remember(store, "data set", key, replace(data, records=[]))
    return data, False


def _data_files(spec: DatasetSpec, protocol: Protocol) -> list[str]:
    """The local files a data set is read from (empty when one of them is not a local file)."""
    if spec.path is not None:
        path = Path(spec.path)
        return [str(path)] if path.is_file() else []
    from headstats.inputs.glue import glue_file

    root = spec.glue.root or protocol.data_root
    if root is None:
        return []
    try:
        return [str(glue_file(spec.glue.task, spec.glue.split, root))]
    except HeadstatsError:
        return []


def dataset_manifest(data: dict[str, LoadedData]) -> dict:
    """The ``datasets`` entry of a manifest: what each data set is, and the sha256 of its files."""
    return {n: d.info | {"files_sha256": file_hashes(d.files)} for n, d in data.items()}


def _run_claimed(protocol: Protocol, claim: OutputClaim, *, started: float, log: Log,
                 progress: ProgressFactory, execution: Execution = Execution()) -> StudyResult:
    """The work of :func:`run_study` once its output folder is checked, locked and staged."""
    from headstats.study.comparison import check_comparable

    sources, finetuned = build_models(protocol, log, progress, cache_dir=execution.cache_dir)
    cache = cache_root(protocol, execution)
    check_comparable(protocol, sources, cache=cache)
    data = read_data(protocol, finetuned, log, cache=cache)
    datasets = dataset_manifest(data)
    if execution.shard is not None:
        from headstats.study.merge import run_shard, write_shard

        shard = run_shard(protocol, sources, finetuned, data, execution.shard, cache=cache,
                          log=log, progress=progress)
        return write_shard(claim, protocol, shard, datasets, started=started, log=log, data=data)
    if protocol.execution.executor == "ray":
        from headstats.study.executors import run_on_ray

        passes = run_on_ray(protocol, sources, finetuned, data, cache=cache, log=log)
    else:
        passes = run_passes(protocol, sources, finetuned, data, log=log, progress=progress,
                            cache=cache)
    return finish_study(protocol, claim, passes, datasets, started=started, log=log)


def finish_study(protocol: Protocol, claim: OutputClaim, passes: "StudyPasses", datasets: dict, *,
                 started: float, log: Log) -> StudyResult:
    """Statistics, comparisons, tables, report and manifest of a study's passes, written to ``claim``."""
    from headstats.assignment.tables import analyse, ceiling_warnings
    from headstats.study.comparison import run_comparisons
    from headstats.study.memo import write_scores_memoised
    from headstats.report.builder import build_report

    st = protocol.statistics
    tests = sum(a.n_layers * a.n_heads * len(a.measures) for a in passes.arrays)
    log(f"testing every head and role: {tests:,} (head, role) pairs, {st.test} test, tau {st.tau_text()}, "
        f"{st.correction} correction"
        + (", with tau/alpha sensitivity and robustness" if st.sensitivity else ""))
    clock = time.perf_counter()
    scales = {role: protocol.scoring.scale_of(role) for role in protocol.scoring.roles}
    analysis = analyse(passes.arrays, st, protocol.seed, scales=scales, top_k=protocol.report.top_k)
    warnings = ceiling_warnings(analysis.tables.get("ceilings", pd.DataFrame(columns=["n_taking_part"])))
    for warning in warnings:
        log(f"warning: {warning}")
    log(f"tested in {time.perf_counter() - clock:.1f} s: {int(analysis.tests['reject'].eq(True).sum()):,} "
        "(head, role) pairs assigned")
    if protocol.compare:
        log("comparing fine-tuned with base models, head by head")
    comparison = run_comparisons(protocol, passes.arrays, analysis.roles, passes.comparison_attention(),
                                 provenance=passes.provenance)
    extra = {name: tables for name, tables in passes.tables.items() if name in protocol.analyses}
    analysis.tables["claims"] = run_claims(protocol, analysis, comparison, extra)
    manifest = {
        "headstats_run": protocol.name,
        "protocol_sha256": protocol.fingerprint(),
        "seed": protocol.seed,
        "models": passes.provenance,
        "provenance": run_provenance(passes.provenance, datasets),
        "datasets": datasets,
        "inputs": passes.counts,
        "tau": protocol.statistics.tau,
        "warnings": warnings,
        #: which tables each analysis wrote, so that ``headstats report`` rebuilds its section
        "analysis_tables": {name: list(tables) for name, tables in extra.items()},
        "execution": passes.execution,
        "wall_time_s": None,
    }
    stage = claim.staging
    log(f"writing {claim.out}")
    write_scores_memoised(passes.arrays, stage / "scores.parquet", cache=passes.execution.get("cache_dir"))
    write_table(analysis.tests, stage, "tests")
    write_table(analysis.roles, stage, "roles", parquet=False)
    for name, table in analysis.tables.items():
        write_table(table, stage, name, parquet=False)
    for name, table in comparison.items():
        write_table(table, stage, f"compare_{name}", parquet=name == "paired_tests")
    for tables in extra.values():
        for name, table in tables.items():
            write_table(table, stage, name, parquet=False)
    (stage / "protocol.resolved.yaml").write_text(dump_protocol(protocol))
    log("drawing the figures and writing the report")
    build_report(stage, protocol, analysis, manifest, comparison=comparison, analyses=extra, log=log)
    manifest["wall_time_s"] = round(time.time() - started, 2)
    write_manifest(stage, manifest)
    claim.publish()
    tables = {**analysis.tables, **{f"compare_{k}": v for k, v in comparison.items()}}
    for analysis_tables in extra.values():
        tables.update(analysis_tables)
    return StudyResult(claim.out, passes.arrays, analysis.tests, analysis.roles, tables, manifest)


def run_provenance(models: dict[str, dict], datasets: dict[str, dict]) -> dict[str, dict]:
    """The manifest's ``provenance``: per model, its :class:`~headstats.provenance.Provenance` (weights, tokenizer,
    the sha256 of each data set's files, package versions)."""
    import hashlib

    from headstats.provenance import Provenance
    from headstats.study.storage import package_versions

    data = {}
    for name, info in datasets.items():
        files = info.get("files_sha256") or {}
        data[name] = (next(iter(files.values())) if len(files) == 1 else hashlib.sha256(
            "".join(f"{k}\t{v}\n" for k, v in sorted(files.items())).encode()).hexdigest() if files else None)
    versions = package_versions()
    return {name: Provenance.of_model({**prov, "model": name}, data=data, versions=versions).as_dict()
            for name, prov in models.items()}


def run_claims(protocol: Protocol, analysis, comparison: dict[str, pd.DataFrame],
               extra: dict[str, dict[str, pd.DataFrame]]) -> pd.DataFrame:
    """Every registered claim tested on the run's tables, corrected over the run's claims (``claims.csv``;
    :func:`headstats.stats.claims.evaluate_claims`)."""
    from headstats.stats.claims import ClaimSettings, evaluate_claims

    tables = {"roles": analysis.roles, "tests": analysis.tests, **analysis.tables,
              **{f"compare_{name}": table for name, table in comparison.items()}}
    for analysis_tables in extra.values():
        tables.update(analysis_tables)
    st = protocol.statistics
    return evaluate_claims(tables, ClaimSettings(alpha=st.alpha, correction=st.correction,
                                                 confidence=st.confidence))


@dataclass
class StudyPasses:
    """What the engine's one pass over every model and data set collected.

    Attributes
    ----------
    arrays : list of MeasureArray
        Role scores per (model, data set), models in protocol order, then data sets.
    counts : dict
        ``"<model>/<dataset>"`` -> inputs read, scored, skipped (with reasons), roles not applicable,
        participation.
    provenance : dict
        Model name -> provenance (with the fine-tuning recipe where headstats fine-tuned it).
    tables : dict
        Analysis name -> table name -> frame concatenated over its jobs (``special_mass``, ``similarity``,
        and each analysis of ``protocol.analyses``).
    execution : dict
        How the passes ran (recorded in the manifest; never part of a table).
    """

    arrays: list[MeasureArray]
    counts: dict
    provenance: dict
    tables: dict[str, dict[str, pd.DataFrame]]
    #: How the passes ran: executor, cache folder, chunks run and found in the cache, forward passes, loads.
    execution: dict = field(default_factory=dict)

    def comparison_attention(self) -> dict[str, pd.DataFrame]:
        """The ``similarity`` and ``special_mass`` tables the comparison step takes."""
        return {**self.tables.get("similarity", {}), **self.tables.get("special_mass", {})}


def study_roles(protocol: Protocol, data: dict[str, LoadedData]) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Per data set: the roles scored on it, and those left out with the reason."""
    from headstats.study.scoring import applicable_roles

    return {name: applicable_roles(protocol.scoring.roles, has_pairs=d.has_pairs, has_parses=d.has_parses)
            for name, d in data.items()}


def study_jobs(protocol: Protocol, data: dict[str, LoadedData] | None = None, *,
               roles: dict[str, tuple[list[str], dict[str, str]]] | None = None) -> tuple[list, dict[str, dict[str, str]]]:
    """Every engine job of a study: role scores per (model, data set), the comparisons' collectors, and each
    analysis of ``protocol.analyses`` (per model and data set; per compared pair for a pair collector).

    ``roles`` (from :func:`study_roles`) stands for ``data`` when the records are not at hand (merging shards).
    Returns the jobs and, per data set, the roles left out of it with the reason.
    """
    from headstats.analyses import get_analysis
    from headstats.analyses.role_scores import RoleScores
    from headstats.study.comparison import comparison_jobs
    from headstats.engine.runner import Job

    settings = protocol.scoring
    roles = roles if roles is not None else study_roles(protocol, data or {})
    jobs: list = []
    kept = {name: list(k) for name, (k, _) in roles.items()}
    dropped = {name: dict(d) for name, (_, d) in roles.items()}
    names = list(roles)
    jobs += [Job(RoleScores, (m.name,), name, {"roles": kept[name], "settings": settings}, name="role_scores")
             for m in protocol.models for name in names]
    jobs += comparison_jobs(protocol, names)
    pairs = [(c.base, f) for c in protocol.compare for f in c.finetuned]
    specs = {d.name: d for d in protocol.datasets}
    for analysis in protocol.analyses:
        collector = get_analysis(analysis).collector
        # A job carries what its collector reads, and so its cache key names only that: the analysis' own
        # options, the seed, the data set's file for a collector that reads it again; never the protocol.
        mine = protocol.options_of(analysis)
        options = {} if mine is None else {"options": mine}

        def job(models: tuple[str, ...], dataset: str) -> Job:
            extra = {"source": data_source(specs[dataset])} if getattr(collector, "reads_source", False) else {}
            if getattr(collector, "reads_task", False):  # the data set's GLUE task (importance: a classifier's task)
                extra["glue_task"] = specs[dataset].glue.task if specs[dataset].glue is not None else None
            return Job(collector, models, dataset, {**options, **extra}, name=analysis, seed=protocol.seed)

        # an analysis' own ``datasets`` option (e.g. clustering's) runs it on those data sets only
        on = [d for d in names if getattr(mine, "datasets", None) is None or d in mine.datasets]
        if getattr(collector, "pair", False):
            jobs += [job(pair, d) for pair in pairs for d in on]
        else:
            jobs += [job((m.name,), d) for m in protocol.models for d in on]
    return jobs, dropped


def data_source(spec: DatasetSpec) -> dict:
    """A data set's file as a collector that reads it again sees it (``options["source"]``): path, format,
    limit and the file's sha256 (so that an edited file gives new cache keys); empty paths for GLUE tasks."""
    from headstats.study.storage import file_hashes

    path = None if spec.path is None else str(spec.path)
    return {"path": path, "format": spec.format, "limit": spec.limit,
            "sha256": file_hashes([path]).get(path) if path else None}


def job_label(job) -> str:
    """A job's name in shard folders and logs: ``<analysis>:<model>[+<model>]:<dataset>`` (unique in a study)."""
    return f"{job.name}:{'+'.join(job.models)}:{job.dataset}"


def model_functions(protocol: Protocol, sources: dict[str, str], finetuned: dict[str, dict], log: Log, *,
                    cache: Path | None = None):
    """``load(name)`` and ``describe(name)`` for the runner, with the protocol's device and dtype; provenance
    (with the fine-tuning recipe where headstats fine-tuned it) is what ``describe`` returns.

    With a ``cache`` folder, the description of a local model folder is taken from the cache when no file of
    the folder changed (:func:`memoised_description`): a re-run that finds every chunk state there imports
    neither transformers nor torch.
    """
    from headstats.engine.cache import StateCache
    from headstats.engine.runner import ModelInfo
    from headstats.model.loading import load_model
    from headstats.study.memo import memoised_description

    store = StateCache(cache) if cache is not None else None
    specs = {m.name: m for m in protocol.models}
    provenance: dict[str, dict] = {}

    def describe(name: str) -> ModelInfo:
        found, longest = memoised_description(sources[name], revision=specs[name].revision,
                                              device=protocol.device, dtype=protocol.dtype, cache=store)
        found = dict(found)
        found["model"] = name
        provenance[name] = found | ({"finetune": finetuned[name]} if name in finetuned else {})
        return ModelInfo(found, longest)

    def load(name: str):
        log(f"loading model {name} ({sources[name]}, {protocol.dtype})")
        loaded = load_model(sources[name], revision=specs[name].revision, device=protocol.device, dtype=protocol.dtype)
        loaded.name = name
        loaded.provenance["model"] = name
        return loaded

    return load, describe, provenance


def make_runner(protocol: Protocol, *, cache: Path | None, log: Log, progress: ProgressFactory,
                shard: tuple[int, int] | None = None, keep_chunks: bool = False):
    """The engine's :class:`~headstats.engine.runner.Runner` with the protocol's scoring and execution options."""
    from headstats.engine.cache import StateCache
    from headstats.engine.runner import Runner

    sc, ex = protocol.scoring, protocol.execution
    return Runner(batch_size=sc.batch_size, max_length=sc.max_length, too_long=sc.too_long, progress=progress,
                  log=log, chunk_size=ex.chunk_size, cache=StateCache(cache) if cache is not None else None,
                  shard=shard, keep_chunks=keep_chunks, memory_budget=ex.memory_budget_mb << 20)


def run_passes(
    protocol: Protocol,
    sources: dict[str, str],
    finetuned: dict[str, dict],
    data: dict[str, LoadedData],
    *,
    log: Log = lambda message: None,
    progress: ProgressFactory = _no_progress,
    cache: Path | None = None,
) -> StudyPasses:
    """Load every model once and pass every input through every model once, feeding every collector.

    See :mod:`headstats.engine.runner` for the pass order (models joined by a comparison are resident
    together; the others one at a time). With a ``cache`` folder, chunks whose states are there run no
    forward pass, and a model none of whose chunks is missing is never loaded.
    """
    load, describe, provenance = model_functions(protocol, sources, finetuned, log, cache=cache)
    jobs, dropped = study_jobs(protocol, data)
    runner = make_runner(protocol, cache=cache, log=log, progress=progress)
    passed = runner.run(load, {name: d.records for name, d in data.items()}, jobs, digests=record_digests(data),
                        models=[m.name for m in protocol.models], describe=describe)
    execution = {"executor": "local", "device": protocol.device, "dtype": protocol.dtype,
                 "cache_dir": str(cache) if cache is not None else None, "chunk_size": protocol.execution.chunk_size,
                 **runner_summary(runner)}
    return assemble_passes(protocol, jobs, passed, data, dropped, provenance, execution)


def record_digests(data: dict[str, LoadedData]) -> dict[str, list[bytes]]:
    """Data set -> its records' digests, for the data sets that have them (see :attr:`LoadedData.digests`)."""
    return {name: d.digests for name, d in data.items() if d.digests is not None}


def runner_summary(runner) -> dict:
    """Chunks run and found in the cache, inputs found there, forward passes and model loads of a runner."""
    counts = list(getattr(runner, "pass_counts", {}).values())
    return {"chunks_run": sum(c.chunks_run for c in counts), "chunks_cached": sum(c.chunks_cached for c in counts),
            "inputs_cached": sum(c.n_cached for c in counts), "forward_passes": runner.forward_passes,
            "model_loads": runner.loads}


def assemble_passes(protocol: Protocol, jobs: list, passed: dict, data: dict[str, LoadedData],
                    dropped: dict[str, dict[str, str]], provenance: dict, execution: dict) -> StudyPasses:
    """:class:`StudyPasses` from jobs whose collectors hold their (merged) states."""
    arrays, counts = [], {}
    for job in jobs:
        if job.name != "role_scores":
            continue
        model, name = job.models[0], job.dataset
        count = data[name].counted(passed[(model, name)])
        if count["n_scored"] == 0:
            raise DataError(
                f"no input of data set {name!r} could be scored ({count['skipped']}); "
                "raise scoring.max_length or set scoring.too_long: truncate"
            )
        counts[f"{model}/{name}"] = count | {"model": model, "dataset": name,
                                             "roles_not_applicable": dropped[name],
                                             "participation": job.collector.participation()}
        arrays.append(job.collector.result())
    tables: dict[str, dict[str, list[pd.DataFrame]]] = {}
    for job in jobs:
        if job.name != "role_scores":
            for table, frame in job.collector.tables().items():
                tables.setdefault(job.name, {}).setdefault(table, []).append(frame)
    joined = {name: {t: pd.concat(frames, ignore_index=True) for t, frames in per.items()}
              for name, per in tables.items()}
    from headstats.study.analysis_tests import finish_analyses

    joined = finish_analyses(jobs, joined, protocol)
    order = {m.name: provenance[m.name] for m in protocol.models if m.name in provenance}
    return StudyPasses(arrays, counts, order, joined, execution)
