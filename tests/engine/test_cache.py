"""The state cache: atomic, checksummed chunk files; re-runs that find every chunk run no forward pass;
corrupt chunks are recomputed; housekeeping removes only the cache's own files."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from headstats.analyses.pande_roles.collect import RoleScores
from headstats.analyses.finetune_comparison.collect import SpecialMass
from headstats.engine.cache import (MARKER, StateCache, canonical, decode, default_cache_root, digest, encode,
                                     resolve_cache_root)
from headstats.engine.forward import inputs_per_batch
from headstats.engine.runner import AUTO_BATCH_CAP, Job, ModelInfo, Runner, attention_cells, shard_chunks
from headstats.inputs.records import Record

KEY = hashlib.sha256(b"a").hexdigest()
TEXTS = ["the cat sat", "a dog ran in the house", "the cat", "the old man saw a big red car", "it was",
         "she likes the book", "he read it yesterday", "big red car", "the mouse ran", "we saw it", "you read"]
RECORDS = [Record(f"s{i}", t) for i, t in enumerate(TEXTS)] + [Record("p0", "the cat sat", "a dog ran")]
ROLES = ["local", "delimiter", "delimiter_cls", "block"]


def test_put_get_round_trip_and_file_format(tmp_path):
    cache = StateCache(tmp_path)
    value = {"state": np.arange(5.0), "counts": {"n_scored": 5}}
    assert cache.put(KEY, value) is True
    path = cache.path(KEY)
    assert path == tmp_path / "states" / KEY[:2] / f"{KEY}.hsc"
    data = path.read_bytes()
    assert data.startswith(MARKER)
    got = cache.get(KEY)
    assert np.array_equal(got["state"], value["state"]) and got["counts"] == value["counts"]
    assert (tmp_path / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert not [p for p in path.parent.iterdir() if p.name != path.name]  # no temporary file left
    assert cache.get(hashlib.sha256(b"b").hexdigest()) is None


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "header"])
def test_a_damaged_chunk_is_detected_removed_and_never_read(tmp_path, damage):
    cache = StateCache(tmp_path)
    cache.put(KEY, {"x": list(range(100))})
    path = cache.path(KEY)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[-10] ^= 0xFF
    elif damage == "truncate":
        data = data[:-7]
    elif damage == "empty":
        data = bytearray()
    else:
        data = data.replace(b'"format": 3', b'"format": 9')
    path.write_bytes(bytes(data))
    assert decode(bytes(data), key=KEY) is None
    assert cache.get(KEY) is None
    assert cache.corrupt == 1 and not path.exists()
    [problem] = cache.take_problems()
    assert problem.startswith(f"{path}: ") and "\n" not in problem and cache.problems == []


def test_a_chunk_proves_its_key_a_copy_under_another_key_is_never_used(tmp_path):
    cache = StateCache(tmp_path)
    other = hashlib.sha256(b"other").hexdigest()
    cache.put(other, {"x": "the state of another key"})
    cache.path(KEY).parent.mkdir(parents=True, exist_ok=True)
    cache.path(KEY).write_bytes(cache.path(other).read_bytes())  # a whole, checksummed chunk, copied over
    assert cache.get(KEY) is None and cache.corrupt == 1 and not cache.path(KEY).exists()
    assert cache.take_problems() == [f"{cache.path(KEY)}: holds the state of another key (copied from another "
                                     "cache, chunk or protocol)"]
    assert cache.get(other) == {"x": "the state of another key"}


def test_an_entry_of_an_older_pickled_format_is_never_loaded_and_said_in_one_line(tmp_path):
    import json
    import pickle

    cache = StateCache(tmp_path)
    marker = tmp_path / "ran"
    payload = pickle.dumps(_Marker(marker))  # would create the marker file if it were unpickled
    header = {"format": 2, "key": KEY, "sha256": hashlib.sha256(payload).hexdigest(), "size": len(payload)}
    cache.path(KEY).parent.mkdir(parents=True)
    cache.path(KEY).write_bytes(MARKER + json.dumps(header).encode() + b"\n" + payload)
    assert cache.get(KEY) is None and cache.corrupt == 1 and not marker.exists()
    [problem] = cache.take_problems()
    assert "\n" not in problem and "a pickle, never loaded" in problem and "headstats cache prune --all" in problem
    assert cache.put(KEY, {"x": 2}) is True and cache.get(KEY) == {"x": 2}


class _Marker:
    """Unpickling it creates ``path`` (what a malicious cache entry would do, harmlessly)."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_foreign_file_is_never_read_overwritten_or_deleted(tmp_path):
    cache = StateCache(tmp_path)
    path = cache.path(KEY)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"my notes")
    (tmp_path / "states" / "notes.txt").write_text("mine")
    (tmp_path / "other.hsc").write_text("mine")
    assert cache.get(KEY) is None and path.read_bytes() == b"my notes"
    assert cache.put(KEY, {"x": 1}) is False  # not stored: the run keeps that state in memory
    assert path.read_bytes() == b"my notes"
    assert cache.prune(everything=True) == (0, 0)
    assert path.exists() and (tmp_path / "states" / "notes.txt").exists() and (tmp_path / "other.hsc").exists()


def test_info_and_prune(tmp_path):
    cache = StateCache(tmp_path)
    keys = [hashlib.sha256(bytes([i])).hexdigest() for i in range(4)]
    for key in keys:
        cache.put(key, np.zeros(1000))
    sizes = [cache.path(k).stat().st_size for k in keys]
    leftover = cache.path(keys[0]).parent / f".{keys[0]}.hsc.tmp-abc123"  # a write killed half-way
    leftover.write_bytes(MARKER[:5])
    info = cache.info()
    assert (info.entries, info.bytes, info.partial) == (4, sum(sizes), 1)
    removed, freed = cache.prune(max_bytes=max(sizes) * 2)  # the unfinished write, then the least recently used
    assert removed == 3 and cache.info().entries == 2 and not leftover.exists()
    left = cache.info().bytes
    assert freed == sum(sizes) - left + 5
    assert cache.prune(everything=True) == (2, left)
    assert not any((tmp_path / "states").iterdir())  # emptied sub-folders removed too


def test_encode_decode():
    blob = encode({"a": [1, 2]}, key=KEY)
    assert decode(blob, key=KEY) == {"a": [1, 2]} and decode(blob[:-1], key=KEY) is None
    assert decode(b"x" + blob, key=KEY) is None and decode(blob) is None  # the key is part of the proof


def test_cache_root_order(tmp_path, monkeypatch):
    monkeypatch.delenv("HEADSTATS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_root() == tmp_path / "xdg" / "headstats"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_root() == Path.home() / ".cache" / "headstats"
    monkeypatch.setenv("HEADSTATS_CACHE_DIR", str(tmp_path / "env"))
    assert default_cache_root() == tmp_path / "env"
    assert resolve_cache_root(None, str(tmp_path / "proto")) == tmp_path / "proto"
    assert resolve_cache_root(tmp_path / "cli", str(tmp_path / "proto")) == tmp_path / "cli"
    assert resolve_cache_root() == tmp_path / "env"


def test_digest_is_canonical():
    assert digest({"b": 1, "a": [1, 2]}) == digest({"a": [1, 2], "b": 1})
    assert digest({"a": 1}) != digest({"a": 2})


def test_options_read_only_after_the_pass_are_not_in_a_key():
    from pydantic import BaseModel, Field

    from headstats.engine.cache import AFTER_PASS

    class Options(BaseModel):
        size: int = 3
        threshold: float = Field(0.5, json_schema_extra=AFTER_PASS)

    assert digest(Options(threshold=0.9)) == digest(Options()) != digest(Options(size=4))
    assert {k: v for k, v in canonical(Options(size=4)).items() if k != "__class__"} == {"size": 4}


def test_shard_chunks_cover_every_chunk_once_in_order():
    for k in (0, 1, 5, 13):
        for n in (1, 2, 3, 7):
            parts = [list(shard_chunks(k, (i, n))) for i in range(1, n + 1)]
            assert sum(parts, []) == list(range(k))
    assert list(shard_chunks(10, (1, 3))) == [0, 1, 2] and list(shard_chunks(10, (3, 3))) == [6, 7, 8, 9]
    with pytest.raises(ValueError):
        shard_chunks(4, (0, 2))


def test_auto_batch_size():
    # 4 copies x 4 bytes x 12 layers x 12 heads x 128^2 = 37,748,736 bytes per input
    assert inputs_per_batch(128, AUTO_BATCH_CAP, attention_cells(12, 12, 1 << 30)) == (1 << 30) // 37_748_736 == 28
    assert inputs_per_batch(512, AUTO_BATCH_CAP, attention_cells(24, 16, 1 << 20)) == 1
    assert inputs_per_batch(8, AUTO_BATCH_CAP, attention_cells(2, 2, 1 << 40)) == 256


# ------------------------------------------------------------------------------------------ the runner


def counting(monkeypatch):
    """Forward passes per model: through the fused path (with maps or without), or transformers' eager one."""
    from headstats.engine import forward as extraction

    forwards: Counter = Counter()

    def counted(real):
        def forward(loaded, *args, **kwargs):
            forwards[loaded.name] += 1
            return real(loaded, *args, **kwargs)
        return forward

    monkeypatch.setattr(extraction, "forward_attentions", counted(extraction.forward_attentions))
    monkeypatch.setattr(extraction, "forward_fused", counted(extraction.forward_fused))
    return forwards


def jobs():
    return [Job(RoleScores, ("m",), "d", {"roles": ROLES}, name="pande_roles"),
            Job(SpecialMass, ("m",), "d", name="special_mass")]


def run(tiny_model, cache, loads, **kwargs):
    tiny_model.name = "m"
    info = ModelInfo(dict(tiny_model.provenance), tiny_model.max_input_length)

    def load(name):
        loads[name] += 1
        return tiny_model

    todo = jobs()
    runner = Runner(**{"batch_size": 3, "chunk_size": 4, "cache": cache, **kwargs})
    counts = runner.run(load, {"d": RECORDS}, todo, describe=lambda name: info)
    return todo, counts, runner


def same(a, b):
    """The role scores and the special mass of two runs: the same bytes (a chunk of the role scores recomputed
    alone takes the path it takes beside the special mass: :func:`headstats.engine.runner.runs_map_free`)."""
    x, y = a[0].collector.result().values, b[0].collector.result().values
    assert x.tobytes() == y.tobytes()
    fa, fb = a[1].collector.tables()["special_mass"], b[1].collector.tables()["special_mass"]
    assert fa.equals(fb)


def test_a_rerun_finds_every_chunk_and_loads_no_model(tiny_model, tmp_path, monkeypatch):
    forwards = counting(monkeypatch)
    loads: Counter = Counter()
    first, counts1, r1 = run(tiny_model, StateCache(tmp_path), loads)
    assert loads == {"m": 1} and forwards["m"] == 6  # 3 chunks of 4 inputs, batches of 3: 2 passes each
    assert r1.pass_counts[("m", "d")].chunks_run == 3
    again, counts2, r2 = run(tiny_model, StateCache(tmp_path), loads)
    assert loads == {"m": 1} and forwards["m"] == 6 and r2.forward_passes == 0
    assert r2.pass_counts[("m", "d")].n_cached == 12 and counts2 == counts1
    uncached, _, _ = run(tiny_model, None, loads)
    same(first, again)
    same(first, uncached)


def test_a_corrupt_chunk_is_recomputed_alone(tiny_model, tmp_path, monkeypatch):
    cache = StateCache(tmp_path)
    loads: Counter = Counter()
    first, _, _ = run(tiny_model, cache, loads)
    victim = sorted(cache.folder.rglob("*.hsc"))[0]
    victim.write_bytes(victim.read_bytes()[:-3])
    forwards = counting(monkeypatch)
    again, _, runner = run(tiny_model, StateCache(tmp_path), loads)
    assert runner.cache.corrupt == 1
    assert runner.pass_counts[("m", "d")].chunks_run == 1 and forwards["m"] == 2
    same(first, again)


def test_keys_change_with_what_determines_a_state(tiny_model, tmp_path, monkeypatch):
    cache = StateCache(tmp_path)
    loads: Counter = Counter()
    run(tiny_model, cache, loads)
    _, _, runner = run(tiny_model, StateCache(tmp_path), loads, max_length=8)  # another max length
    assert runner.pass_counts[("m", "d")].chunks_cached == 0
    tiny_model.provenance["dtype"] = "bfloat16"  # another precision (only the key is looked at here)
    try:
        _, _, runner = run(tiny_model, StateCache(tmp_path), loads)
        assert runner.pass_counts[("m", "d")].chunks_cached == 0
    finally:
        tiny_model.provenance["dtype"] = "float32"
    _, _, runner = run(tiny_model, StateCache(tmp_path), loads, batch_size=5)  # batches differ in the last digits
    assert runner.pass_counts[("m", "d")].chunks_cached == 0
    _, _, runner = run(tiny_model, StateCache(tmp_path), loads, memory_budget=2_000)  # so does the cell budget
    assert runner.pass_counts[("m", "d")].chunks_cached == 0


def test_swapped_and_foreign_chunks_are_reported_recomputed_and_never_used(tiny_model, tmp_path, monkeypatch):
    loads: Counter = Counter()
    uncached, _, _ = run(tiny_model, None, loads)
    run(tiny_model, StateCache(tmp_path / "a"), loads)
    run(tiny_model, StateCache(tmp_path / "b"), loads, max_length=8)  # another key for every chunk
    mine = sorted((tmp_path / "a").rglob("*.hsc"))
    theirs = sorted((tmp_path / "b").rglob("*.hsc"))
    mine[0].write_bytes(mine[1].read_bytes())  # another chunk's state: another position or another job
    mine[2].write_bytes(theirs[2].read_bytes())  # a chunk of another cache (another max length)
    lines: list[str] = []
    forwards = counting(monkeypatch)
    again, _, runner = run(tiny_model, StateCache(tmp_path / "a"), loads, log=lines.append)
    assert runner.cache.corrupt == 2 and forwards["m"] > 0
    [line] = [m for m in lines if m.startswith("cache damaged")]
    assert "holds the state of another key" in line and "(and 1 more)" in line and "cache prune" in line
    same(uncached, again)


def test_a_cache_served_run_equals_a_no_cache_run_whatever_batch_size_filled_it(tiny_model, tmp_path):
    loads: Counter = Counter()
    plain, _, _ = run(tiny_model, None, loads, batch_size=1, chunk_size=12)
    for filled_with in (8, 3, "auto"):
        cache = tmp_path / f"c{filled_with}"
        filled, _, _ = run(tiny_model, StateCache(cache), loads, batch_size=filled_with, chunk_size=12)
        if filled_with == 8:  # padded batches do change the last float32 digits: the key must tell them apart
            assert filled[0].collector.result().values.tobytes() != plain[0].collector.result().values.tobytes()
        served, _, _ = run(tiny_model, StateCache(cache), loads, batch_size=1, chunk_size=12)
        same(served, plain)
        assert served[0].collector.result().values.tobytes() == plain[0].collector.result().values.tobytes()


def test_shards_of_the_runner_merge_into_the_whole(tiny_model):
    loads: Counter = Counter()
    whole, _, _ = run(tiny_model, None, loads)
    parts = [run(tiny_model, None, loads, shard=(i, 2), keep_chunks=True)[0] for i in (1, 2)]
    assert sorted(parts[0][0].chunks) == [0] and sorted(parts[1][0].chunks) == [1, 2]
    for j, job in enumerate(whole):
        states = [parts[i][j].chunks[k]["state"] for i, k in ((0, 0), (1, 1), (1, 2))]
        merged = type(job.collector).merge(states)
        if j == 0:
            assert np.array_equal(merged.values, job.collector.state().values, equal_nan=True)
        else:
            assert np.array_equal(merged.mean, job.collector.state().mean)
            assert np.array_equal(merged.m2, job.collector.state().m2)


def test_info_and_prune_see_checkpoints_and_leave_other_folders(tmp_path):
    import json
    import os

    from headstats.folders import WRITTEN_BY, output_listing

    root = tmp_path / "cache"

    def checkpoint(name: str, *, extra: str | None = None, kind: str = "headstats finetune") -> Path:
        folder = root / "checkpoints" / name
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(b"w" * 1000)
        (folder / "COMPLETE").write_text("x\n")
        (folder / "finetune_manifest.json").write_text(json.dumps(
            {"written_by": WRITTEN_BY, "kind": kind, **output_listing(folder, manifest_name="finetune_manifest.json")}))
        if extra:
            (folder / extra).write_text("mine")
        return folder

    old, new = checkpoint("sst2-old"), checkpoint("sst2-new")
    foreign = checkpoint("user", extra="notes.txt")  # a file headstats did not write: never touched
    other_kind = checkpoint("run", kind="something else")
    os.utime(old / "COMPLETE", (1_000_000, 1_000_000))
    cache = StateCache(root)
    info = cache.info()
    size = sum(p.stat().st_size for p in new.iterdir())
    assert (info.checkpoints, info.checkpoint_bytes) == (2, 2 * size)
    assert any(line.startswith("checkpoints: 2 ") for line in info.lines())
    assert cache.prune(older_than_days=30) == (1, size)  # unused since 1970
    assert not old.exists() and new.exists()
    assert cache.prune(everything=True) == (1, size)
    assert not new.exists() and foreign.exists() and (foreign / "notes.txt").exists() and other_kind.exists()
    edited = checkpoint("edited")
    (edited / "model.safetensors").write_bytes(b"the user's own weights")
    assert cache.prune(everything=True) == (0, 0) and edited.exists()  # not as headstats wrote it: kept
