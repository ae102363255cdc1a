"""A checkpoint's files: which a model folder must hold, their checks without loading a tensor, and the one-line
errors that a bad file (or a hub model not on disk) gives.

Pickled weights are never unpickled here: whether a pickle is safe is decided by torch's ``weights_only`` loader
when :func:`headstats.model.loading.load_model` reads it.
"""

from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path

from headstats.errors import ModelError

WEIGHT_FILE_SUFFIXES = (".safetensors", ".bin", ".pt", ".h5", ".msgpack")
#: Sets of files of which one must be present for a tokenizer to be read from a folder.
TOKENIZER_FILE_SETS: tuple[tuple[str, ...], ...] = (
    ("tokenizer.json",), ("vocab.txt",), ("vocab.json", "merges.txt"), ("spiece.model",), ("sentencepiece.bpe.model",),
)
#: Weight files that transformers loads from a folder, in its order of preference (an index means shards).
TRANSFORMERS_WEIGHT_FILES = (
    "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json",
)
TOKENIZER_FILES_TEXT = (
    "tokenizer.json, or vocab.txt (BERT), vocab.json + merges.txt (RoBERTa), spiece.model (ALBERT) or "
    "sentencepiece.bpe.model (XLM-R, CamemBERT)"
)
SAVE_TOKENIZER = "save the model's tokenizer there with tokenizer.save_pretrained(folder)"


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def is_loading_error(exc: BaseException) -> bool:
    """Whether ``exc`` is what transformers, tokenizers, safetensors or torch raise for a bad model file."""
    from safetensors import SafetensorError

    known = (OSError, ValueError, KeyError, RuntimeError, ImportError, SafetensorError, pickle.UnpicklingError)
    # tokenizers (Rust) raises a bare Exception for a tokenizer.json it cannot parse
    return isinstance(exc, known) or type(exc) is Exception


def not_fetched(spec: str) -> ModelError:
    return ModelError(
        f"model {spec!r} is not on disk and could not be fetched from the Hugging Face hub "
        "(offline?); give a local directory, or 'default' for the embedded all-MiniLM-L6-v2"
    )


def loadable_weight_files(folder: Path, spec: str) -> list[Path]:
    """The weight files that transformers would load from a folder (the shards of a sharded checkpoint)."""
    for name in TRANSFORMERS_WEIGHT_FILES:
        candidate = folder / name
        if not candidate.is_file():
            continue
        if not name.endswith(".index.json"):
            return [candidate]
        return _shard_files(candidate, spec)
    found = sorted(p.name for p in folder.iterdir() if p.suffix in WEIGHT_FILE_SUFFIXES)
    raise ModelError(
        f"model directory {spec!r} has no weights that transformers loads (found {', '.join(found)}; expected "
        f"{' or '.join(TRANSFORMERS_WEIGHT_FILES)}); save the model there with model.save_pretrained(folder)"
    )


def _shard_files(index: Path, spec: str) -> list[Path]:
    try:
        weight_map = json.loads(index.read_bytes())["weight_map"]
        names = sorted(set(weight_map.values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise ModelError(
            f"weights index {index.name} of model {spec!r} is unreadable or not a shard index; "
            "re-download or re-save the model"
        ) from None
    shards = [index.parent / str(name) for name in names]
    missing = [p.name for p in shards if not p.is_file()]
    if not shards or missing:
        raise ModelError(
            f"weights index {index.name} of model {spec!r} lists shards that are not in the folder "
            f"({', '.join(missing) or 'none listed'}); re-download or re-save the model"
        )
    return shards


def check_weight_files(folder: Path, spec: str) -> None:
    """Weight files present, non-empty and well-formed, read without loading any tensor."""
    for path in loadable_weight_files(folder, spec):
        try:
            size = path.stat().st_size
            with open(path, "rb") as handle:
                head = handle.read(4)
        except OSError as exc:
            raise ModelError(
                f"weights file {path.name} of model {spec!r} cannot be read ({exc.strerror or exc}); "
                "check the file and its permissions"
            ) from None
        if size == 0:
            raise ModelError(f"weights file {path.name} of model {spec!r} is empty; re-download or re-save the model")
        if path.suffix == ".safetensors":
            _check_safetensors(path, spec)
        else:
            _check_torch_file(path, head, spec)


def corrupt_weights(path: Path | str, spec: str) -> ModelError:
    name = Path(path).name
    return ModelError(
        f"weights file {name} of model {spec!r} is corrupt or truncated; re-download or re-save the model"
    )


def _check_safetensors(path: Path, spec: str) -> None:
    """Parse the safetensors header (which also checks that the file covers every tensor); no tensor is read."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy"):
            pass
    except (SafetensorError, OSError, ValueError):
        raise corrupt_weights(path, spec) from None


def _check_torch_file(path: Path, head: bytes, spec: str) -> None:
    """A torch file is a zip archive (torch >= 1.6) or a legacy pickle; a truncated archive has no directory.

    Nothing is unpickled here: whether the pickle is safe is decided by torch's ``weights_only`` loader.
    """
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(path):
                pass
        except (zipfile.BadZipFile, OSError, ValueError):
            raise corrupt_weights(path, spec) from None
    elif not head.startswith(b"\x80"):  # pickle protocol 2+ starts with PROTO
        raise corrupt_weights(path, spec)


def check_tokenizer_files(folder: Path, spec: str) -> None:
    if not any(all((folder / name).is_file() for name in names) for names in TOKENIZER_FILE_SETS):
        raise ModelError(
            f"model directory {spec!r} has no tokenizer files (expected {TOKENIZER_FILES_TEXT}), so every word "
            f"would be an unknown token; {SAVE_TOKENIZER}"
        )
