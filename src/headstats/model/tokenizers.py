"""Facts about a tokenizer that several layers need, each found one way.

- :func:`punctuation_ids`: the pieces counted as punctuation (METHODS 2.1: "." and ","), in every form a
  tokenizer writes them: bare (WordPiece ``.``), after a word-start marker of byte-level BPE (RoBERTa, GPT-2:
  ``Ġ.``) or of SentencePiece (ALBERT, XLM-R: ``▁.``). The surface, clustering, pictures and gradients analyses
  all ask here, so "punct" is one set of ids per model.
- :func:`check_same_tokenizer`: whether models split text into the same pieces with the same ids, by their
  :func:`tokenizer_fingerprint`. The runner (models sharing batches), the comparison
  of models (before any scoring), the before/after tables and ``hs.compare`` all ask here, so the rule and its
  error line are one.
- :func:`read_tokenizer` and :func:`check_tokenizer`: a model's tokenizer read from its folder or the hub, and
  refused in one line when it is empty, slow, larger than the embeddings or gives segment ids the model has no
  rows for (:func:`headstats.model.loading.load_model` and :func:`headstats.model.sources.check_model_source`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from headstats.errors import IncompatibleResultsError, ModelError
from headstats.model.checkpoint_files import (SAVE_TOKENIZER, TOKENIZER_FILES_TEXT, first_line, is_loading_error,
                                              not_fetched)

__all__ = ["PUNCTUATION", "WORD_START_MARKERS", "check_same_tokenizer", "check_tokenizer", "check_vocabulary_fits",
           "fingerprint_of", "punctuation_ids", "read_tokenizer", "tokenizer_fingerprint"]

#: The pieces counted as punctuation (Clark et al. 2019; METHODS 2.1: "." and ",").
PUNCTUATION: tuple[str, ...] = (".", ",")
#: Word-start markers a vocabulary may write before a piece: byte-level BPE's ``Ġ`` (U+0120, RoBERTa, GPT-2)
#: and SentencePiece's ``▁`` (U+2581, ALBERT, XLM-R, T5).
WORD_START_MARKERS: tuple[str, ...] = ("\u0120", "\u2581")


def punctuation_ids(tokenizer: Any, marks: Sequence[str] = PUNCTUATION) -> tuple[int, ...]:
    """Ids of the pieces that are exactly one of ``marks``, bare or after a word-start marker (``Ġ.``, ``▁,``).

    Parameters
    ----------
    tokenizer : transformers tokenizer
        Anything with ``get_vocab()`` (piece -> id).
    marks : sequence of str
        The punctuation marks, :data:`PUNCTUATION` by default.

    Returns
    -------
    tuple of int
        Sorted, without duplicates; empty when the vocabulary has none of them.
    """
    vocab = tokenizer.get_vocab()
    forms = [form for mark in marks for form in (mark, *(f"{m}{mark}" for m in WORD_START_MARKERS))]
    return tuple(sorted({int(vocab[form]) for form in forms if form in vocab}))


def fingerprint_of(obj: Any) -> str | None:
    """The tokenizer fingerprint of ``obj``, None when it carries none.

    ``obj`` is a fingerprint already (str), a provenance mapping (its ``vocab_sha256``), a tokenizer (anything
    with ``get_vocab``) or an object holding one as ``.tokenizer`` (a :class:`~headstats.model.loading.LoadedModel`).
    """
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, Mapping):
        value = obj.get("vocab_sha256")
        return str(value) if value else None
    tokenizer = getattr(obj, "tokenizer", obj)
    if not hasattr(tokenizer, "get_vocab"):
        raise TypeError(f"cannot find a tokenizer in {type(obj).__name__}; pass a tokenizer, a loaded model, "
                        "a provenance mapping or a fingerprint")
    return tokenizer_fingerprint(tokenizer)


def check_same_tokenizer(*models: Any, names: Sequence[str] | None = None) -> str | None:
    """Refuse models that do not split text identically; return their common fingerprint.

    Two models are compatible when their tokenizers have the same :func:`fingerprint_of` (vocabulary, special
    tokens, casing): then every text becomes the same pieces with the same ids, so their attention maps can be
    run over the same batches and compared input by input. A model whose fingerprint is unknown (None) is
    left out of the check.

    Parameters
    ----------
    *models
        What :func:`fingerprint_of` accepts, one per model.
    names : sequence of str, optional
        The models' names for the error line; by default each one's ``.name``, else ``A``, ``B``, ...

    Raises
    ------
    IncompatibleResultsError
        Naming the first two models that differ and the fix.
    """
    if names is None:
        names = [str(getattr(m, "name", chr(ord("A") + i))) for i, m in enumerate(models)]
    known = [(name, fp) for name, fp in zip(names, map(fingerprint_of, models)) if fp is not None]
    for name, fp in known[1:]:
        if fp != known[0][1]:
            raise IncompatibleResultsError(
                f"cannot compare models {known[0][0]!r} and {name!r}: they have different tokenizers (vocabulary "
                f"sha256 {known[0][1][:12]} vs {fp[:12]}), so inputs are not split into the same pieces; compare "
                "a model with versions fine-tuned from it"
            )
    return known[0][1] if known else None


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """sha256 of the tokenizer's vocabulary (sorted token -> id pairs) and special tokens.

    Two tokenizers with the same fingerprint split every text into the same pieces with the same ids.
    """
    vocab = sorted(tokenizer.get_vocab().items())
    digest = hashlib.sha256(repr(vocab).encode())
    digest.update(repr(sorted(tokenizer.all_special_tokens)).encode())
    digest.update(repr(getattr(tokenizer, "do_lower_case", None)).encode())
    return digest.hexdigest()


def read_tokenizer(path: str, spec: str, *, is_local: bool, revision: str | None) -> Any:
    from transformers import AutoTokenizer

    kwargs: dict[str, Any] = {} if is_local else {"revision": revision}
    try:
        return AutoTokenizer.from_pretrained(path, **kwargs)
    except Exception as exc:
        if not is_loading_error(exc):
            raise
        if not is_local and isinstance(exc, OSError):
            raise not_fetched(spec) from exc
        fix = SAVE_TOKENIZER if is_local else "give a local folder that holds the model and its tokenizer"
        raise ModelError(f"the tokenizer of model {spec!r} cannot be read ({first_line(exc)}); {fix}") from exc


def check_tokenizer(tokenizer: Any, config: Any, spec: str) -> None:
    """Refuse an empty, slow or oversized tokenizer, or one whose segment ids the model has no rows for."""
    vocab = tokenizer.get_vocab()
    added = set(tokenizer.added_tokens_encoder)
    if not any(token not in added for token in vocab):
        raise ModelError(
            f"the tokenizer of model {spec!r} holds only its {len(vocab)} special tokens: no vocabulary was read "
            f"(expected {TOKENIZER_FILES_TEXT}), so every word would be an unknown token; {SAVE_TOKENIZER}"
        )
    if not getattr(tokenizer, "is_fast", False):
        raise ModelError(
            f"model {spec!r} has no fast tokenizer; headstats aligns words to pieces by character offsets, "
            "which needs one (save a tokenizer.json with the model)"
        )
    check_vocabulary_fits(len(tokenizer), config.vocab_size, spec, "config.json vocab_size")
    type_vocab_size = getattr(config, "type_vocab_size", None)
    if type_vocab_size is not None:
        types = tokenizer("a", "b", return_token_type_ids=True).get("token_type_ids") or [0]
        if max(types) >= type_vocab_size:
            raise ModelError(
                f"the tokenizer of model {spec!r} gives segment ids up to {max(types)} but the model has "
                f"{type_vocab_size} segment type(s) (type_vocab_size in config.json), so the tokenizer is not this "
                f"model's; {SAVE_TOKENIZER} using the tokenizer the model was trained with"
            )


def check_vocabulary_fits(n_tokens: int, rows: int, spec: str, what: str) -> None:
    if n_tokens > rows:
        raise ModelError(
            f"the tokenizer of model {spec!r} has {n_tokens} tokens but the model's embeddings have only {rows} "
            f"rows ({what}), so tokens with ids >= {rows} cannot be embedded; give the tokenizer the model was "
            "trained with, or call model.resize_token_embeddings(len(tokenizer)) and save the model again"
        )
