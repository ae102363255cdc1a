"""Facts about a tokenizer that several layers need, each found one way.

- :func:`punctuation_ids`: the pieces counted as punctuation (METHODS 2.1: "." and ","), in every form a
  tokenizer writes them: bare (WordPiece ``.``), after a word-start marker of byte-level BPE (RoBERTa, GPT-2:
  ``Ġ.``) or of SentencePiece (ALBERT, XLM-R: ``▁.``). The surface, clustering, pictures and gradients analyses
  all ask here, so "punct" is one set of ids per model.
- :func:`check_same_tokenizer`: whether models split text into the same pieces with the same ids, by their
  :func:`~headstats.model.loading.tokenizer_fingerprint`. The runner (models sharing batches), the comparison
  of models (before any scoring), the before/after tables and ``hs.compare`` all ask here, so the rule and its
  error line are one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from headstats.errors import IncompatibleResultsError

__all__ = ["PUNCTUATION", "WORD_START_MARKERS", "check_same_tokenizer", "fingerprint_of", "punctuation_ids"]

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
    from headstats.model.loading import tokenizer_fingerprint

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
