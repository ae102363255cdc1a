"""The quick reachability check of the Hugging Face hub, against local sockets only."""

import socket

from headstats.hub import hub_reachable


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
