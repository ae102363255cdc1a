"""Who a model is: sha256 of its weight files and the provenance dict that goes into every output (the
tokenizer's part is :func:`headstats.model.tokenizers.tokenizer_fingerprint`)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from headstats.model.checkpoint_files import WEIGHT_FILE_SUFFIXES
from headstats.model.sources import DEFAULT_MODEL
from headstats.model.tokenizers import tokenizer_fingerprint

def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """sha256 hex digest of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


_HASHES: dict[tuple[str, int, int], str] = {}


def sha256_file_memo(path: str | Path) -> str:
    """:func:`sha256_file`, remembered for this process while the file's size and modification time stay."""
    stat = os.stat(path)
    key = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _HASHES:
        _HASHES[key] = sha256_file(path)
    return _HASHES[key]


def weight_hashes(path: str, is_local: bool, revision: str | None) -> dict[str, str]:
    """sha256 of each weight file of a model directory (or of the hub cache's copy of a hub model)."""
    if is_local:
        folder = Path(path)
        return {p.name: sha256_file_memo(p) for p in sorted(folder.iterdir()) if p.suffix in WEIGHT_FILE_SUFFIXES}
    from transformers.utils import cached_file

    hashes = {}
    for name in ("model.safetensors", "pytorch_model.bin"):
        try:
            resolved = cached_file(path, name, revision=revision, _raise_exceptions_for_missing_entries=False)
        except Exception:  # noqa: BLE001 - provenance is best effort for hub files
            resolved = None
        if resolved:
            hashes[name] = sha256_file_memo(resolved)
            break
    return hashes


def model_provenance(spec: str, path: str, is_local: bool, revision: str | None, config: Any, architecture: str,
                tokenizer: Any, device: str, dtype: str) -> dict:
    return {
        "model": spec,
        "path": path if is_local else None,
        "hub_id": None if is_local else spec,
        "revision": revision,
        "model_type": config.model_type,
        "architecture": architecture,
        "n_layers": int(config.num_hidden_layers),
        "n_heads": int(config.num_attention_heads),
        "weights_sha256": weight_hashes(path, is_local, revision),
        "tokenizer_class": type(tokenizer).__name__,
        "vocab_sha256": tokenizer_fingerprint(tokenizer),
        "device": device,
        "device_type": device.split(":")[0],
        "dtype": dtype,
    }


def provenance_source(provenance: Mapping[str, Any], default: str = DEFAULT_MODEL) -> str:
    """What :func:`load_model` takes to load a model again from its provenance: its folder, else its hub id."""
    return str(provenance.get("path") or provenance.get("hub_id") or default)
