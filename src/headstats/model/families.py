"""The model families headstats scores: a config.json read and checked (a supported bidirectional encoder whose
sizes make a model), and the facts that differ by family (position offset, longest input)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from headstats.errors import ModelError
from headstats.model.checkpoint_files import first_line

#: ``model_type`` values (config.json) of the bidirectional encoders that headstats scores. Each family's
#: segment ids fit its embeddings: BERT, ELECTRA and ALBERT have two segment types, the RoBERTa family one
#: (its tokenizers give all zeros), and DistilBERT takes no ``token_type_ids`` at all.
SUPPORTED_MODEL_TYPES: tuple[str, ...] = (
    "bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra", "albert",
)
#: Architectures whose position ids start after the padding index (max length = positions - offset).
POSITION_OFFSET = {"roberta": 2, "xlm-roberta": 2, "camembert": 2, "longformer": 2}


def read_config(path: Path, spec: str) -> Any:
    """Read a model's config.json, check that it describes a supported encoder, and return its config object."""
    try:
        config = json.loads(Path(path).read_bytes())
    except OSError as exc:
        raise ModelError(
            f"config.json of model {spec!r} cannot be read ({exc.strerror or exc}); check the file and its permissions"
        ) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ModelError(
            f"config.json of model {spec!r} is not valid JSON ({first_line(exc)}); re-download the model or "
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


#: Largest sizes a config.json may give, checked before any weight is read (the largest encoders have 48 layers,
#: 64 heads and a hidden size of 8,192; a config that asks for a million layers would build for hours).
MAX_SIZES = {"num_hidden_layers": 1024, "num_attention_heads": 1024, "hidden_size": 1 << 16}


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
    huge = [f"{name}={getattr(parsed, name)}" for name, most in MAX_SIZES.items()
             if _is_count(getattr(parsed, name, None)) and getattr(parsed, name) > most]
    if huge:
        raise ModelError(
            f"config.json of model {spec!r} has sizes no encoder has ({', '.join(huge)}; at most "
            f"{', '.join(f'{k} {v:,}' for k, v in MAX_SIZES.items())}); re-download the model or re-save it with "
            "model.save_pretrained(folder)"
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


def max_input_length(config: Any, tokenizer: Any) -> int:
    limit = getattr(config, "max_position_embeddings", None) or 512
    limit -= POSITION_OFFSET.get(config.model_type, 0)
    tokenizer_limit = getattr(tokenizer, "model_max_length", None)
    if tokenizer_limit and tokenizer_limit < 100_000:
        limit = min(limit, int(tokenizer_limit))
    return int(limit)
