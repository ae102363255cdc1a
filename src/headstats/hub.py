"""The Hugging Face hub: whether it answers, whether a spec can be a hub id, and what the local cache holds.

Everything here is quick and offline except :func:`hub_reachable`, which opens one socket with a short
timeout, so that a run stops at once instead of letting a library retry for a minute.
"""

from __future__ import annotations

import os
from pathlib import Path

from headstats.errors import ModelError

#: Longest revision (branch, tag or commit) accepted; git refs are far shorter in practice.
MAX_REVISION_LENGTH = 255


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


def check_hub_id(repo_id: str) -> None:
    """Refuse a string that cannot be a hub model id (the hub's own rules, checked offline).

    Raises
    ------
    ModelError
        Naming the rules; such a spec is usually a mistyped local folder.
    """
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        shown = repo_id if len(repo_id) <= 80 else repo_id[:77] + "..."
        raise ModelError(
            f"model {shown!r} is not a local folder and not a valid Hugging Face hub id (an id is 'name' or "
            "'owner/name', at most 96 letters, digits, '-', '_' or '.'); check the folder's path or the id"
        ) from None


def check_revision(revision: str | None) -> None:
    """Refuse a revision that no hub repository can have (empty, with spaces or NUL, absurdly long)."""
    if revision is None:
        return
    if (
        not isinstance(revision, str)
        or not revision.strip()
        or len(revision) > MAX_REVISION_LENGTH
        or any(c.isspace() or c == "\x00" for c in revision)
    ):
        shown = revision if not isinstance(revision, str) or len(revision) <= 80 else revision[:77] + "..."
        raise ModelError(
            f"revision {shown!r} is not a branch, tag or commit name; give e.g. 'main' or a commit hash, "
            "or leave revision out"
        )


def cached_hub_file(repo_id: str, filename: str, *, revision: str | None = None) -> Path | None:
    """Path of ``filename`` of hub model ``repo_id`` in the local Hugging Face cache, or None if not cached.

    Never touches the network. ``repo_id`` should have passed :func:`check_hub_id`.
    """
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, filename, revision=revision)
    return Path(found) if isinstance(found, str) else None


#: Weight files of a hub model, one of which must be in the cache to load it offline.
HUB_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                    "pytorch_model.bin.index.json")


def not_available_error(spec: str) -> ModelError:
    """The one line for a hub model that is neither on disk nor reachable (``validate``, ``run`` and
    ``load_model`` all give it)."""
    return ModelError(
        f"model {spec!r} is not on disk (no local directory, not in the Hugging Face cache) and the hub "
        "cannot be reached (offline?); give a local directory, or 'default' for the embedded all-MiniLM-L6-v2"
    )


def check_hub_model_available(repo_id: str, *, revision: str | None = None) -> None:
    """Refuse a hub model that cannot be loaded here: its ``config.json`` or its weights are not in the local
    Hugging Face cache and the hub cannot be reached. Quick: the cache is looked at first, the network only
    when something is missing (:func:`hub_reachable`).

    Raises
    ------
    ModelError
        :func:`not_available_error`.
    """
    cached = cached_hub_file(repo_id, "config.json", revision=revision) is not None and any(
        cached_hub_file(repo_id, name, revision=revision) is not None for name in HUB_WEIGHT_FILES)
    if not cached and not hub_reachable():
        raise not_available_error(repo_id)
