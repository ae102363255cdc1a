"""The hub helpers: reachability (against local sockets only), hub id and revision checks, the local cache."""

import socket

import pytest

from headstats.errors import ModelError
from headstats.hub import cached_hub_file, check_hub_id, check_revision, hub_reachable


def test_offline_flag_means_unreachable(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub_reachable() is False


def test_endpoint_with_a_listener_is_reachable_and_without_one_is_not(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
        assert hub_reachable(timeout=1.0) is True
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")  # closed now
    assert hub_reachable(timeout=1.0) is False


@pytest.mark.parametrize(
    "repo_id", ["bert-base-uncased", "google/bert_uncased_L-2_H-128_A-2", "FacebookAI/xlm-roberta-base"]
)
def test_valid_hub_ids_pass(repo_id):
    check_hub_id(repo_id)


@pytest.mark.parametrize(
    "repo_id",
    ["my model", "a/b/c", "x" * 97, "bad\x00id", "org/-name", "org--name/x", "name.git", "org/na..me"],
)
def test_invalid_hub_ids_are_refused_with_the_rules(repo_id):
    with pytest.raises(ModelError, match="not a valid Hugging Face hub id") as info:
        check_hub_id(repo_id)
    message = str(info.value)
    assert "'owner/name'" in message and "at most 96" in message and "check the folder's path" in message
    assert len(message) < 300  # a 97-character id is shortened, not pasted whole
    assert "\n" not in message


@pytest.mark.parametrize("revision", [None, "main", "v1.0", "refs/pr/1", "0123456789abcdef0123456789abcdef01234567"])
def test_valid_revisions_pass(revision):
    check_revision(revision)


@pytest.mark.parametrize("revision", ["", "  ", "my branch", "ma\x00in", "r" * 256])
def test_invalid_revisions_are_refused(revision):
    with pytest.raises(ModelError, match="is not a branch, tag or commit name; give e.g. 'main'"):
        check_revision(revision)


def test_cached_hub_file_finds_only_what_the_cache_holds(hf_cache, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    snapshot = hf_cache("org/tiny", folder)
    assert cached_hub_file("org/tiny", "config.json") == snapshot / "config.json"
    assert cached_hub_file("org/tiny", "config.json", revision="main") == snapshot / "config.json"
    assert cached_hub_file("org/tiny", "config.json", revision=snapshot.name) == snapshot / "config.json"
    assert cached_hub_file("org/tiny", "tokenizer.json") is None  # not in the snapshot
    assert cached_hub_file("org/tiny", "config.json", revision="v2") is None  # another revision
    assert cached_hub_file("org/other", "config.json") is None  # another model
