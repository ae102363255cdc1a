"""Shards: run a deterministic part of a study's inputs, write it as a shard folder, and merge shards into the
run one machine would have made.

``headstats run PROTOCOL --shard i/n`` cuts every data set into the engine's chunks (``execution.chunk_size``
records, file order) and runs the ``i``-th contiguous block of them (:func:`headstats.engine.runner.shard_chunks`).
Its output folder (written through :mod:`headstats.folders`, like every output) holds

- ``states.hsc``: every job's state of every chunk of the shard, in the state cache's checksummed format
  (:mod:`headstats.engine.cache`);
- ``protocol.resolved.yaml`` and ``manifest.json`` (``headstats_shard``: which shard, the protocol's
  fingerprints, the models' provenance, the data sets' files and hashes, what each data set holds: pairs, parses).

``headstats merge SHARD... --out DIR`` checks that the shards belong together (same protocol, models with the
same weights, tokenizer, dtype and device type, same data files, every shard of ``n`` present once, every chunk
present once) and runs the statistics, tables and report on the states merged in chunk order: the same
operations, in the same order, as one run, so the tables are byte-identical.

A shard folder's paths (no symbolic link), its manifest's shape and its states' key are checked before
anything is merged. ``states.hsc`` holds numbers and JSON (:mod:`headstats.engine.safe_state`), never a pickle:
a shard folder from elsewhere whose states are damaged, foreign or not a state is refused in one line, never
run; one with well-formed states forged on purpose can change the numbers, not run code.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from headstats.config.protocol import Protocol, dump_protocol, validate_protocol
from headstats.errors import IncompatibleResultsError, OutputError
from headstats.folders import OutputClaim, claim_output, manifest_of, member_path
from headstats.model.identity import provenance_source
from headstats.engine.runner import ProgressFactory, no_progress
from headstats.study.finish import finish_study
from headstats.study.models import model_functions
from headstats.study.passes import StudyPasses, assemble_passes, attention_of, make_runner, runner_summary
from headstats.study.plan import job_label, study_facts, study_jobs
from headstats.study.results import LoadedData, Log, ReportWriter, StudyResult
from headstats.study.storage import write_manifest

STATES_FILE = "states.hsc"
SHARD_KEY = "headstats_shard"
#: What a shard's manifest must hold under :data:`SHARD_KEY`, and of which type (a forged one is refused).
SHARD_FIELDS = {"index": int, "of": int, "pass_sha256": str, "protocol_sha256": str, "chunk_size": int,
                "max_length": dict, "n_records": dict, "n_chunks": dict, "facts": dict, "skipped_before_parsing": dict,
                "chunks": dict}


@dataclass
class ShardResult:
    """What one shard computed: every job's state of every chunk it ran (or found in the cache).

    Attributes
    ----------
    shard : (i, n)
    entries : dict
        Job label (:func:`headstats.study.plan.job_label`) -> chunk number -> ``{"state", "counts"}``.
    provenance : dict
        Model name -> provenance.
    max_length : dict
        ``"<model>/<dataset>"`` -> the effective maximum length of that pass.
    n_records, n_chunks : dict
        Data set -> records and chunks of the whole data set.
    facts : dict
        Data set -> whether it has sentence pairs and parses (:func:`headstats.study.plan.study_facts`: what the
        analyses' planners read).
    summary : dict
        Chunks run and found in the cache, forward passes, model loads.
    """

    shard: tuple[int, int]
    entries: dict[str, dict[int, Any]]
    provenance: dict
    max_length: dict[str, int]
    n_records: dict[str, int]
    n_chunks: dict[str, int]
    facts: dict
    summary: dict = field(default_factory=dict)


def run_shard(protocol: Protocol, sources: dict[str, str], finetuned: dict[str, dict], data: dict[str, LoadedData],
              shard: tuple[int, int], *, cache: Path | None, log: Log = lambda m: None,
              progress: ProgressFactory = no_progress) -> ShardResult:
    """Run shard ``(i, n)`` of every data set's chunks and return its chunk states."""
    load, describe, provenance = model_functions(protocol, sources, finetuned, log)
    facts = study_facts(data)
    jobs = study_jobs(protocol, facts=facts).jobs
    runner = make_runner(protocol, cache=cache, log=log, progress=progress, shard=shard, keep_chunks=True)
    runner.run(load, {name: d.records for name, d in data.items()}, jobs, models=[m.name for m in protocol.models],
               describe=describe)
    size = protocol.execution.chunk_size
    return ShardResult(
        shard=tuple(shard),
        entries={job_label(job): dict(job.chunks) for job in jobs},
        provenance={m.name: provenance[m.name] for m in protocol.models if m.name in provenance},
        max_length={f"{m}/{d}": c.max_length for (m, d), c in runner.pass_counts.items()},
        n_records={name: len(d.records) for name, d in data.items()},
        n_chunks={name: -(-len(d.records) // size) for name, d in data.items()},
        facts=facts,
        summary=runner_summary(runner),
    )


def shard_manifest(protocol: Protocol, shard: ShardResult, datasets: dict, data: dict[str, LoadedData]) -> dict:
    """The ``headstats_shard`` part of a shard folder's manifest."""
    return {
        "index": shard.shard[0], "of": shard.shard[1],
        "protocol_sha256": protocol_key(protocol),
        "pass_sha256": protocol.pass_fingerprint(),
        "chunk_size": protocol.execution.chunk_size,
        "batching": {"batch_size": protocol.scoring.batch_size, "memory_budget_mb": protocol.execution.memory_budget_mb},
        "n_records": shard.n_records, "n_chunks": shard.n_chunks, "max_length": shard.max_length,
        "facts": shard.facts,
        "skipped_before_parsing": {name: [list(x) for x in d.skipped] for name, d in data.items()},
        "chunks": {label: sorted(chunks) for label, chunks in shard.entries.items()},
        "summary": shard.summary,
    }


def protocol_key(protocol: Protocol) -> str:
    """Fingerprint of the protocol without where and how it runs (``output``, ``execution``)."""
    import hashlib

    data = protocol.model_dump(mode="json", exclude={"output", "execution"})
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def write_shard(claim: OutputClaim, protocol: Protocol, shard: ShardResult, datasets: dict, *, started: float,
                log: Log, data: dict[str, LoadedData] | None = None) -> StudyResult:
    """Write a shard folder into ``claim`` and publish it."""
    from headstats.engine.cache import encode

    stage = claim.staging
    log(f"writing shard {shard.shard[0]}/{shard.shard[1]} to {claim.out}")
    info = shard_manifest(protocol, shard, datasets, data or {})
    (stage / STATES_FILE).write_bytes(encode(shard.entries, key=states_key(info)))
    (stage / "protocol.resolved.yaml").write_text(dump_protocol(protocol))
    manifest = {
        "headstats_run": protocol.name,
        "protocol_sha256": protocol.fingerprint(),
        SHARD_KEY: info,
        "models": shard.provenance,
        "datasets": datasets,
        "wall_time_s": round(time.time() - started, 2),
    }
    write_manifest(stage, manifest)
    claim.publish()
    return StudyResult(claim.out, [], pd.DataFrame(), pd.DataFrame(), {}, manifest)


def states_key(info: dict) -> str:
    """The key a shard's ``states.hsc`` is stored under: which shard, of which passes, which chunks. Read back
    only under the key its manifest gives, so a states file copied from another shard or protocol is refused."""
    from headstats.engine.cache import digest

    return digest("shard-states", info.get("index"), info.get("of"), info.get("pass_sha256"), info.get("chunk_size"),
                  info.get("chunks"))


# ------------------------------------------------------------------------------------------------ merging

@dataclass
class ShardFolder:
    path: Path
    manifest: dict
    protocol: Protocol
    entries: dict[str, dict[int, Any]]


def read_shard(folder: str | Path) -> ShardFolder:
    """A shard folder's manifest, protocol and states (checksum verified)."""
    from headstats.engine.cache import decode_checked
    import yaml

    path = Path(folder)
    manifest = manifest_of(path) if path.is_dir() and not path.is_symlink() else None
    if manifest is None or SHARD_KEY not in manifest:
        raise OutputError(f"{str(path)!r} is not a shard folder (no manifest.json with '{SHARD_KEY}'); give folders "
                          "written by headstats run --shard i/n")
    info = manifest[SHARD_KEY]
    wrong = [k for k, kind in SHARD_FIELDS.items() if not isinstance(info, dict) or not isinstance(info.get(k), kind)]
    if wrong:
        raise OutputError(f"the manifest of shard folder {str(path)!r} is damaged ('{SHARD_KEY}.{wrong[0]}' is "
                          "missing or of the wrong type); run that shard again")
    named_by = f"shard folder {str(path)!r}"
    try:
        blob = member_path(path, STATES_FILE, named_by=named_by).read_bytes()
        protocol = validate_protocol(yaml.safe_load(
            member_path(path, "protocol.resolved.yaml", named_by=named_by).read_text(encoding="utf-8")))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise OutputError(f"protocol.resolved.yaml of shard folder {str(path)!r} cannot be read "
                          f"({type(exc).__name__}); run that shard again") from None
    except OSError as exc:
        raise OutputError(f"shard folder {str(path)!r} cannot be read ({exc.strerror or exc}); run that shard again") \
            from None
    entries, why = decode_checked(blob, key=states_key(info))
    if entries is not None and not _shaped(entries, info["chunks"]):
        entries, why = None, "its states are not those its manifest lists"
    if entries is None:
        raise OutputError(f"{STATES_FILE} of shard folder {str(path)!r} is not used: {why or 'not a shard state'} "
                          "(corrupt, truncated, not this shard's or not a state); run that shard again")
    return ShardFolder(path, manifest, protocol, entries)


def _shaped(entries: Any, chunks: dict) -> bool:
    """Whether shard states are job label -> chunk number -> ``{"state", "counts"}`` for exactly the chunks listed."""
    if not isinstance(entries, dict) or set(entries) != set(chunks):
        return False
    for label, found in entries.items():
        if not isinstance(found, dict) or sorted(found) != sorted(chunks[label] or []) \
                or not all(isinstance(e, dict) and {"state", "counts"} <= set(e) for e in found.values()):
            return False
    return True


def check_shards(shards: Sequence[ShardFolder]) -> None:
    """Refuse shards that do not make one run: different protocol, models, tokenizers, dtype or data; a shard
    missing or given twice."""
    from headstats.engine.runner import model_identity

    if not shards:
        raise IncompatibleResultsError("no shard folder given; give every folder written by headstats run --shard i/n")
    first = shards[0]
    head = first.manifest[SHARD_KEY]
    n = head["of"]

    def differ(what: str, other: ShardFolder, fix: str) -> IncompatibleResultsError:
        return IncompatibleResultsError(f"shard {str(other.path)!r} and shard {str(first.path)!r} differ in {what}; "
                                        f"{fix}")

    for other in shards[1:]:
        info = other.manifest[SHARD_KEY]
        if info["of"] != n:
            raise differ(f"the number of shards ({info['of']} vs {n})", other, "merge shards of the same --shard i/n split")
        if info["pass_sha256"] != head["pass_sha256"] or info["chunk_size"] != head["chunk_size"] \
                or info.get("batching") != head.get("batching"):
            raise differ("the options that change scores (models, data sets, scoring, dtype, chunk size, batching)", other,
                         "run every shard with the same protocol")
        if info["protocol_sha256"] != head["protocol_sha256"]:
            raise differ("their statistics, comparison or report options", other,
                         "run every shard with the same protocol")
        mine, theirs = first.manifest.get("models", {}), other.manifest.get("models", {})
        if set(mine) != set(theirs):
            raise differ(f"their models ({sorted(theirs)} vs {sorted(mine)})", other, "run every shard with the same models")
        for name in mine:
            a, b = model_identity(mine[name]), model_identity(theirs[name])
            if a != b:
                what = [k for k in a if a[k] != b[k]]
                raise differ(f"model {name!r} ({', '.join(what)})", other,
                             "run every shard with the same weights, tokenizer, dtype and device type")
        for name, info_a in first.manifest.get("datasets", {}).items():
            info_b = other.manifest.get("datasets", {}).get(name)
            keys = ("files_sha256", "n_read")
            if info_b is None or any(info_a.get(k) != info_b.get(k) for k in keys):
                raise differ(f"data set {name!r} (its files or records)", other, "run every shard on the same data")
    indices = sorted(s.manifest[SHARD_KEY]["index"] for s in shards)
    if indices != list(range(1, n + 1)):
        missing = sorted(set(range(1, n + 1)) - set(indices))
        twice = sorted({i for i in indices if indices.count(i) > 1})
        parts = ([f"missing {', '.join(f'{i}/{n}' for i in missing)}"] if missing else []) + \
                ([f"given twice: {', '.join(f'{i}/{n}' for i in twice)}"] if twice else [])
        raise IncompatibleResultsError(f"shards do not make one run ({'; '.join(parts)}); give each of the {n} shard "
                                       "folders exactly once")


def passes_from_shards(protocol: Protocol, parts: Sequence[ShardResult], data: dict[str, LoadedData],
                       execution: dict, *, log: Log = lambda message: None) -> StudyPasses:
    """The study's passes from the chunk states of every shard, merged in chunk order (as one run merges them).
    A collector that needs its model's input embeddings after the pass gets them from the model loaded on the CPU
    with the protocol's dtype (:class:`~headstats.engine.runner.InputEmbeddings`; the weights cast as the shards
    cast them), only then."""
    from headstats.engine.runner import InputEmbeddings, ModelInfo, PassCounts, build_collector

    first = parts[0]
    plan = study_jobs(protocol, facts=first.facts)
    jobs = plan.jobs
    provenance: dict = {}
    for part in parts:
        provenance.update(part.provenance)
    infos = {name: ModelInfo(prov, 0) for name, prov in provenance.items()}
    sources = {name: provenance_source(prov, name) for name, prov in provenance.items()}
    load = model_functions(protocol.model_copy(update={"device": "cpu"}), sources, {}, log)[0]
    embeddings = InputEmbeddings(load)
    passed: dict[tuple[str, str], dict] = {}
    for job in jobs:
        label = job_label(job)
        chunks: dict[int, Any] = {}
        for part in parts:
            for k, entry in part.entries.get(label, {}).items():
                if k in chunks:
                    raise IncompatibleResultsError(f"chunk {k} of {label} is in two shards; merge disjoint shards")
                chunks[int(k)] = entry
        expected = list(range(first.n_chunks[job.dataset]))
        if sorted(chunks) != expected:
            missing = sorted(set(expected) - set(chunks))
            raise IncompatibleResultsError(f"chunks {missing[:5]} of {label} are in no shard; give every shard folder")
        job.collector = build_collector(job, infos, input_embeddings=embeddings)
        if chunks:
            job.collector.load_state(type(job.collector).merge([chunks[k]["state"] for k in expected]))
        for m in job.models:
            if (m, job.dataset) in passed:
                continue
            counts = PassCounts(n_records=first.n_records[job.dataset],
                                max_length=_max_length(parts, m, job.dataset))
            for k in expected:
                counts.add_chunk(chunks[k]["counts"])
            passed[(m, job.dataset)] = counts.as_dict()
    return assemble_passes(protocol, plan, passed, data, provenance, execution, log=log)


def _max_length(parts: Sequence[ShardResult], model: str, dataset: str) -> int:
    found = [p.max_length[f"{model}/{dataset}"] for p in parts if f"{model}/{dataset}" in p.max_length]
    return found[0] if found else 0


def merge_shards(folders: Sequence[str | Path], out: str | Path, *, overwrite: bool = False,
                 log: Log = lambda message: None, report: ReportWriter | None = None) -> StudyResult:
    """Join shard folders into the output folder one run of their protocol would have written (with the report
    that ``report`` writes, as :func:`headstats.study.run.run_study`; ``headstats merge`` passes
    :func:`headstats.report.builder.build_report`).

    Raises
    ------
    IncompatibleResultsError
        Shards of different protocols, models, tokenizers, dtypes or data; a shard missing or given twice.
    OutputError
        A folder that is not a shard folder, a corrupt ``states.hsc``, or an output folder that may not be written.
    """
    from headstats.config.protocol import DatasetSpec
    from headstats.study.preflight import check_output

    started = time.time()
    shards = [read_shard(f) for f in folders]
    check_shards(shards)
    shards.sort(key=lambda s: s.manifest[SHARD_KEY]["index"])
    protocol = shards[0].protocol
    out = check_output(out, overwrite=overwrite, inputs=[s.path for s in shards])
    parts = [_as_result(s) for s in shards]
    head = shards[0].manifest[SHARD_KEY]
    datasets = shards[0].manifest.get("datasets", {})
    specs = {d.name: d for d in protocol.datasets}
    data = {name: LoadedData(spec=specs.get(name) or DatasetSpec(name=name, path="-"), records=[],
                             info=datasets.get(name, {}),
                             skipped=[tuple(x) for x in head["skipped_before_parsing"].get(name, [])])
            for name in head["n_records"]}
    execution = {"executor": "merge", "shards": [str(s.path) for s in shards], "device": protocol.device,
                 "dtype": protocol.dtype, "chunk_size": head["chunk_size"],
                 "attention": attention_of(part.summary for part in parts)}
    log(f"merging {len(shards)} shards")
    with claim_output(out, overwrite=overwrite) as claim:
        passes = passes_from_shards(protocol, parts, data, execution, log=log)
        result = finish_study(protocol, claim, passes, datasets, started=started, log=log, report=report)
    return result


def _as_result(shard: ShardFolder) -> ShardResult:
    info = shard.manifest[SHARD_KEY]
    return ShardResult((info["index"], info["of"]), shard.entries, shard.manifest.get("models", {}),
                       info["max_length"], info["n_records"], info["n_chunks"], info["facts"], info.get("summary", {}))
