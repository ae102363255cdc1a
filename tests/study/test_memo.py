"""What a re-run takes from the cache besides chunk states: the memo's keys, its entries, the lazily read
records and the stored scores table."""

from __future__ import annotations

import os
import pickle

import pytest

from conftest import planted_arrays
from headstats.engine.cache import StateCache
from headstats.study.memo import (RecordsFromCache, arrays_digest, described_before, folder_identity, memoised,
                                  memoised_description, recall, remember, write_scores_memoised)
from headstats.study.scoring import write_scores


def test_folder_identity_changes_when_a_file_is_replaced_even_with_the_same_size_and_mtime(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"a" * 100)
    (folder / "sub").mkdir()
    (folder / "sub" / "vocab.txt").write_text("x")
    before = folder_identity(folder)
    assert [entry[:2] for entry in before] == [("sub/vocab.txt", 1), ("weights.bin", 100)]
    assert folder_identity(folder) == before
    stat = (folder / "weights.bin").stat()
    replacement = tmp_path / "copy.bin"
    replacement.write_bytes(b"b" * 100)
    os.replace(replacement, folder / "weights.bin")
    os.utime(folder / "weights.bin", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same mtime
    after = folder_identity(folder)
    assert after[1][1:3] == before[1][1:3] and after != before  # inode and change time differ


def test_memoised_computes_once_per_key_and_keeps_kinds_apart(tmp_path):
    cache = StateCache(tmp_path / "cache")
    calls = []

    def compute():
        calls.append(1)
        return {"n": len(calls)}

    assert memoised(cache, "kind a", [1, "x"], compute) == ({"n": 1}, False)
    assert memoised(cache, "kind a", [1, "x"], compute) == ({"n": 1}, True)
    assert memoised(cache, "kind a", [2, "x"], compute) == ({"n": 2}, False)
    assert memoised(cache, "kind b", [1, "x"], compute) == ({"n": 3}, False)
    assert memoised(None, "kind a", [1, "x"], compute) == ({"n": 4}, False)  # no cache: always computed
    assert recall(cache, "kind a", [1, "x"]) == (True, {"n": 1})
    assert recall(cache, "kind a", [3]) == (False, None)
    remember(cache, "kind a", [3], None)
    assert recall(cache, "kind a", [3]) == (True, None)  # a stored None is a result, not a miss


def test_a_corrupt_memo_entry_is_recomputed(tmp_path):
    cache = StateCache(tmp_path / "cache")
    memoised(cache, "kind", [1], lambda: "first")
    (entry,) = [p for p in (tmp_path / "cache").rglob("*.hsc")]
    entry.write_bytes(entry.read_bytes()[:-3])  # a truncated write
    assert memoised(cache, "kind", [1], lambda: "again") == ("again", False)


def test_records_from_cache_are_read_only_when_looked_at_and_pickle_as_a_list():
    reads = []

    def load():
        reads.append(1)
        return ["r0", "r1", "r2"]

    records = RecordsFromCache(3, load)
    assert len(records) == 3 and not records.loaded and reads == []
    assert records[1] == "r1" and records[0:2] == ["r0", "r1"] and list(records) == ["r0", "r1", "r2"]
    assert reads == [1]
    assert pickle.loads(pickle.dumps(records)) == ["r0", "r1", "r2"]
    with pytest.raises(RuntimeError, match="2 records where 3"):
        RecordsFromCache(3, lambda: ["a", "b"])[0]


def test_the_stored_scores_table_is_the_written_one_and_is_not_written_again(tmp_path, monkeypatch):
    arrays = planted_arrays()
    write_scores(arrays, tmp_path / "direct.parquet")
    cache = tmp_path / "cache"
    write_scores_memoised(arrays, tmp_path / "first.parquet", cache=cache)
    assert (tmp_path / "first.parquet").read_bytes() == (tmp_path / "direct.parquet").read_bytes()

    def refuse(*args, **kwargs):
        raise AssertionError("written again")

    monkeypatch.setattr("headstats.study.scoring.write_scores", refuse)
    write_scores_memoised(arrays, tmp_path / "second.parquet", cache=cache)
    assert (tmp_path / "second.parquet").read_bytes() == (tmp_path / "direct.parquet").read_bytes()
    changed = planted_arrays(seed=1)
    assert arrays_digest(changed) != arrays_digest(arrays)
    with pytest.raises(AssertionError, match="written again"):
        write_scores_memoised(changed, tmp_path / "third.parquet", cache=cache)


def test_a_model_description_is_stored_for_a_local_folder_and_renewed_when_a_file_changes(tmp_path, tiny_model_dir,
                                                                                        monkeypatch):
    import shutil

    from headstats.model.loading import describe_model

    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    cache = StateCache(tmp_path / "cache")
    assert not described_before(str(folder), device="cpu", dtype="float32", cache=cache)
    expected = describe_model(str(folder))
    assert memoised_description(str(folder), revision=None, device="cpu", dtype="float32", cache=cache) == expected
    assert described_before(str(folder), device="cpu", dtype="float32", cache=cache)
    assert not described_before(str(folder), device="cpu", dtype="bfloat16", cache=cache)
    calls = []
    monkeypatch.setattr("headstats.model.loading.describe_model", lambda *a, **k: calls.append(1) or ({}, 0))
    assert memoised_description(str(folder), revision=None, device="cpu", dtype="float32", cache=cache) == expected
    assert calls == []
    (folder / "config.json").write_text((folder / "config.json").read_text() + "\n")
    assert not described_before(str(folder), device="cpu", dtype="float32", cache=cache)
    memoised_description(str(folder), revision=None, device="cpu", dtype="float32", cache=cache)
    assert calls == [1]
    memoised_description(str(folder), revision=None, device="auto", dtype="float32", cache=cache)
    assert calls == [1, 1]  # device auto is never memoised


def test_parsed_records_go_through_the_cache_as_numbers_and_strings_and_come_back_equal(tmp_path):
    from headstats.inputs.records import Record, Word

    records = [Record(f"s{i}", f"word{i} x", words_a=(Word(f"word{i}", 0, 4 + len(str(i)), -1, "root"),),
                      meta={"parse_prefix": (1, 2), "coref": [{"mention": (0, 1)}]}) for i in range(300)]
    cache = StateCache(tmp_path / "cache")
    remember(cache, "data set records", [1], records)
    found, back = recall(cache, "data set records", [1])
    assert found and back == records and [r.meta for r in back] == [r.meta for r in records]
    assert all(isinstance(r.words_a, tuple) for r in back)
    (entry,) = (tmp_path / "cache").rglob("*.hsc")
    assert b"pickle" not in entry.read_bytes() and b"\x80\x05" not in entry.read_bytes()[:200]


def test_a_model_is_described_once_per_process_without_a_cache_until_a_file_changes(tmp_path, tiny_model_dir,
                                                                                    monkeypatch):
    import shutil

    from headstats.model.loading import describe_model

    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return describe_model(*args, **kwargs)

    monkeypatch.setattr("headstats.model.loading.describe_model", counted)
    first = memoised_description(str(folder), revision=None, device="cpu", dtype="float32", cache=None)
    first[0]["model"] = "renamed"  # a caller's change reaches no later caller
    again = memoised_description(str(folder), revision=None, device="cpu", dtype="float32", cache=None)
    assert calls == [1] and again == describe_model(str(folder))
    (folder / "config.json").write_text((folder / "config.json").read_text() + "\n")
    memoised_description(str(folder), revision=None, device="cpu", dtype="float32", cache=None)
    assert calls == [1, 1]
