"""A study's data sets: read (a file or a GLUE task), leave out what can never be scored, parse where the roles
need it, taken from the state cache when an earlier run read the same files the same way; and the manifest's
``datasets`` entry."""

from __future__ import annotations

import time
from typing import Any
from pathlib import Path

from headstats.analyses.sieves import ScoreSettings
from headstats.config.protocol import DatasetSpec, Protocol
from headstats.errors import DataError, HeadstatsError
from headstats.inputs.records import Record
from headstats.study.results import LoadedData, Log
from headstats.study.storage import file_hashes


def needs_parses(scoring: ScoreSettings) -> bool:
    """Whether a role of ``scoring`` reads dependency arcs (a syntactic role)."""
    from headstats.analyses.roles import get_role

    return any(get_role(r).kind == "arc" for r in scoring.roles)


def prepare_records(records: list[Record], scoring: ScoreSettings, *, name: str,
                    parse: str = "auto") -> tuple[list[Record], list[tuple[str, str]], dict]:
    """What every scoring does to records before the forward pass: leave out those that can never be scored,
    then parse the rest where the roles need it.

    Parameters
    ----------
    records : list of Record
    scoring : ScoreSettings
        ``max_length`` and ``too_long`` (what is left out or cut), ``roles`` (whether parses are needed),
        ``parser`` and ``alignment`` (how raw text is parsed).
    name : str
        The data set's name, for the error.
    parse : {"auto", "spacy", "gold", "none"}
        A data set's ``parse``: ``auto`` parses when a role reads arcs and keeps gold parses where present
        (all records are re-parsed under ``alignment: first_occurrence``, as the published notebooks did);
        ``spacy`` re-parses every record; ``gold`` and ``none`` parse nothing.

    Returns
    -------
    (records, skipped, info)
        The records to score; ``(sentence_id, reason)`` of those left out (``empty``, ``too_long``); and the
        manifest's ``parses`` (``gold``, ``spacy``, ``gold+spacy`` or ``none``) and ``parser``.

    Raises
    ------
    DataError
        If no record is left to score, with the reasons and the fix.
    """
    from headstats.inputs.filters import nothing_to_score, skipped_counts, split_unusable
    from headstats.inputs.parsing import parse_records

    records, skipped = split_unusable(records, max_length=scoring.max_length, too_long=scoring.too_long)
    if not records:
        raise nothing_to_score(name, skipped_counts(skipped))
    info: dict = {}
    if parse == "spacy" or (parse == "auto" and needs_parses(scoring)):
        if parse == "spacy":
            records = [Record(r.sentence_id, r.text_a, r.text_b, r.label, meta=r.meta) for r in records]
        clean = scoring.alignment == "first_occurrence"
        gold = 0 if clean else sum(r.is_parsed for r in records)
        records = parse_records(records, parser=scoring.parser, clean=clean)
        info["parses"] = "gold" if gold == len(records) else ("spacy" if gold == 0 else "gold+spacy")
        info["parser"] = None if gold == len(records) else scoring.parser
    else:  # nothing parsed here: the data's own parses (a CoNLL-U file) are said, words without arcs are none
        gold = parse in ("auto", "gold") and all(r.is_parsed for r in records) and any(map(has_arcs, records))
        info["parses"] = "gold" if gold else "none"
    return records, skipped, info


#: The manifest's ``parses`` in words, for the log and the methods paragraph.
PARSE_WORDS = {"gold": "gold CoNLL-U parses", "spacy": "parsed by spaCy", "gold+spacy": "gold CoNLL-U parses, the "
               "rest parsed by spaCy", "none": "no parse"}


def has_arcs(record: Record) -> bool:
    """Whether a record's words carry at least one dependency arc (a reader that only splits words, such as
    GAP's, gives words whose heads are all -1: no parse; a data set is parsed when some record has arcs)."""
    return any(w.head >= 0 for words in (record.words_a, record.words_b) if words for w in words)


def load_data(spec: DatasetSpec, protocol: Protocol, *, exclude_ids: set[str] | None = None) -> LoadedData:
    """Read one data set (file or GLUE task), leave out what can never be scored, and parse the rest if the
    protocol's roles need parses.

    Records with no visible text, or with more words than ``scoring.max_length`` pieces can hold (every word
    is at least one piece), are left out before parsing and counted (:attr:`LoadedData.skipped`); with
    ``too_long: truncate`` a long record is parsed on the prefix that can be scored.
    """
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
    records, skipped, how = prepare_records(records, protocol.scoring, name=spec.name, parse=spec.parse)
    info.update(how)
    from headstats.analyses.roles import record_kinds

    has_pairs, has_parses = record_kinds(records)
    return LoadedData(spec=spec, records=records, files=files, info=info, skipped=skipped, has_pairs=has_pairs,
                      has_parses=has_parses)


def training_exclusions(spec: DatasetSpec, finetuned: dict[str, dict]) -> set[str]:
    """Ids of a GLUE data set's rows that any fine-tuned model of the study was trained on."""
    if spec.glue is None or not spec.glue.exclude_finetune_rows or not finetuned:
        return set()
    from headstats.model.finetune import analysis_exclusions

    out: set[str] = set()
    for info in finetuned.values():
        out |= analysis_exclusions(info["path"], spec.glue.task, spec.glue.split)
    return out


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
        how = "found in the cache" if found else f"({PARSE_WORDS[data[spec.name].info.get('parses', 'none')]})"
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
    from headstats.study.memo import RecordsFromCache, folder_identity, recall, remember
    from headstats.provenance import package_versions

    def read() -> LoadedData:
        data = load_data(spec, protocol, exclude_ids=exclude_ids)
        return replace(data, digests=[record_digest(r) for r in data.records])

    files = _data_files(spec, protocol)
    if not files:
        return read(), False
    sc = protocol.scoring
    parser = Path(sc.parser).expanduser()
    key = [file_hashes(files), spec.model_dump(mode="json"), sc.max_length, sc.too_long, sc.parser, sc.alignment,
           needs_parses(protocol.scoring), sorted(exclude_ids), protocol.seed, package_versions(),
           folder_identity(parser) if parser.is_dir() else None]
    store = StateCache(cache)
    found, stored = recall(store, "data set", key)
    summary = _summary_back(spec, stored) if found else None
    if summary is not None:
        def records() -> list[Record]:
            there, stored_records = recall(store, "data set records", key)
            if there and isinstance(stored_records, list) and all(isinstance(r, Record) for r in stored_records):
                return stored_records
            return load_data(spec, protocol, exclude_ids=exclude_ids).records

        return replace(summary, records=RecordsFromCache(len(summary.digests), records)), True
    data = read()
    remember(store, "data set records", key, list(data.records))  # before the summary that points to it
    remember(store, "data set", key, _summary(data))
    return data, False


def _summary(data: LoadedData) -> dict:
    """What the cache keeps of a data set besides its records: numbers and strings (the cache holds no pickle)."""
    import numpy as np

    return {"files": list(data.files), "info": data.info, "skipped": [list(x) for x in data.skipped],
            "has_pairs": data.has_pairs, "has_parses": data.has_parses,
            "digests": np.frombuffer(b"".join(data.digests or []), dtype=np.uint8).reshape(-1, 32)}


def _summary_back(spec: DatasetSpec, stored: Any) -> LoadedData | None:
    """The :class:`LoadedData` (without records) of a :func:`_summary`, or None when it is not one."""
    try:
        return LoadedData(spec, [], list(stored["files"]), dict(stored["info"]),
                          [tuple(x) for x in stored["skipped"]], bool(stored["has_pairs"]),
                          bool(stored["has_parses"]), [bytes(row) for row in stored["digests"]])
    except (KeyError, TypeError, ValueError):
        return None


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
