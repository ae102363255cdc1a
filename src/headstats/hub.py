"""Whether the Hugging Face hub can be reached, asked once and quickly, before a library retries for a minute."""

from __future__ import annotations

import os


def hub_reachable(timeout: float = 3.0) -> bool:
    """A quick check that the Hugging Face hub answers (False at once when HF_HUB_OFFLINE is set)."""
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        return False
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        with socket.create_connection((endpoint.hostname, endpoint.port or 443), timeout=timeout):
            return True
    except OSError:
        return False
