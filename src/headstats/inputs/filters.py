"""Filters that run before parsing: inputs with no visible character, and inputs too long for any model.

Both return the records they keep and, for each record left out, ``(sentence_id, reason)``, so that the
inputs skipped before parsing are reported with those the encoder skips (the ``skipped`` counts of
:class:`headstats.model.encoding.EncodingResult` use the same reasons, ``"empty"`` and ``"too_long"``).

**Empty.** A text is empty when it has no *visible* character: a letter, number, punctuation mark or symbol
(Unicode categories L, N, P, S) other than the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0). Whitespace,
zero-width characters (U+200B..U+200D, U+2060, U+FEFF), the soft hyphen U+00AD, other format and control
characters, and combining marks on their own are not visible. A record is empty when one of its sides is.

**Too long, without a tokenizer.** Every word yields at least one word piece, so a text with more words than
``max_length`` minus the special tokens can never fit, whatever the tokenizer. Here a *word* is a maximal run
of characters other than space, TAB, CR and LF that holds a character which yields a piece in every
tokenizer headstats supports: one whose NFKD form holds a letter, number, punctuation mark or symbol, other
than U+FFFD and the Hangul fillers (BERT's normalizer deletes U+FFFD; the compatibility decomposition and
accent stripping of ALBERT may reduce a character such as U+00A8 to a space). These words are never split
across two pieces, since WordPiece, byte-level BPE and SentencePiece tokenizers all pre-split text at those
four characters; so the count is a lower bound on the number of pieces of a text, and skipping on it never
skips an input that a tokenizer could fit (checked over every code point against the BERT normalizers and
NFKD with accent stripping). The encoder still checks the exact length of every input it is given.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from headstats.errors import DataError
from headstats.inputs.records import Record

__all__ = [
    "PARSE_PREFIX",
    "SKIP_EMPTY",
    "SKIP_TOO_LONG",
    "check_usable",
    "count_words",
    "has_visible_text",
    "is_empty_record",
    "skipped_counts",
    "split_empty",
    "split_too_long",
    "split_unusable",
]

#: Reason given for a record with a side that has no visible character (as in ``EncodingResult.skipped``).
SKIP_EMPTY = "empty"
#: Reason given for a record longer than ``max_length`` pieces (as in ``EncodingResult.skipped``).
SKIP_TOO_LONG = "too_long"
#: ``Record.meta`` key set by :func:`split_too_long` with ``too_long="truncate"``: ``(end_a, end_b)``, the
#: character offset at which the parser stops reading each side (None: the whole side). Read by
#: :func:`headstats.inputs.parsing.parse_records`; the model still sees the whole text.
PARSE_PREFIX = "parse_prefix"

_TOO_LONG_CHOICES = ("skip", "truncate")
#: Letters that render as nothing (Unicode Default_Ignorable_Code_Point, category Lo).
_HANGUL_FILLERS = frozenset("\u115f\u1160\u3164\uffa0")
#: Characters that some tokenizer turns into nothing although their category is L, N, P or S: U+FFFD (BERT's
#: normalizer deletes it), and two Vedic signs that newer Unicode versions class as combining marks.
_NO_PIECE = _HANGUL_FILLERS | frozenset("\ufffd\u1cf2\u1cf3")
#: Printable ASCII other than space: every one of these is visible and yields a piece (a fast path).
_ASCII_PRINTABLE = re.compile(r"[!-~]")
#: A word: a maximal run of characters other than the four separators every tokenizer splits at.
_WORD = re.compile(r"[^ \t\r\n]+")


def _visible(char: str) -> bool:
    return unicodedata.category(char)[0] in "LNPS" and char not in _HANGUL_FILLERS


@lru_cache(maxsize=65536)
def _yields_piece(char: str) -> bool:
    if char in _NO_PIECE:
        return False
    return any(unicodedata.category(c)[0] in "LNPS" for c in unicodedata.normalize("NFKD", char))


def has_visible_text(text: str | None) -> bool:
    """Whether ``text`` holds at least one visible character (see the module's docstring).

    Examples
    --------
    >>> has_visible_text("a cat"), has_visible_text(" \\u200b\\u00ad\\ufeff\\t"), has_visible_text(None)
    (True, False, False)
    """
    if not text:
        return False
    if _ASCII_PRINTABLE.search(text):
        return True
    return any(_visible(char) for char in text)


def is_empty_record(record: Record) -> bool:
    """Whether a side of the record (``text_a``, or ``text_b`` of a pair) has no visible character."""
    return not has_visible_text(record.text_a) or (record.text_b is not None and not has_visible_text(record.text_b))


def _words(text: str) -> Iterable[re.Match[str]]:
    """The words of ``text`` that surely yield a piece, as regex matches (lazily, in order)."""
    for match in _WORD.finditer(text):
        word = match.group()
        if _ASCII_PRINTABLE.search(word) or any(_yields_piece(char) for char in word):
            yield match


def count_words(text: str | None, *, stop_after: int | None = None) -> int:
    """Number of words of ``text`` that surely yield a word piece: a lower bound on its pieces.

    Parameters
    ----------
    text : str or None
    stop_after : int, optional
        Stop counting once the count exceeds this (returns ``stop_after + 1``), so that a huge text costs
        no more than its first words.

    Examples
    --------
    >>> count_words("The cat sat."), count_words("a \\u200b b\\tc\\n"), count_words("")
    (3, 3, 0)
    """
    n = 0
    for _ in _words(text or ""):
        n += 1
        if stop_after is not None and n > stop_after:
            break
    return n


def _prefix_end(text: str, n_words: int) -> int | None:
    """Character offset just after the ``n_words``-th word; None if the text has no more words than that."""
    end = 0
    for k, match in enumerate(_words(text), start=1):
        if k > n_words:
            return end
        end = match.end()
    return None


def _check_options(max_length: int, too_long: str, n_special: int, n_special_pair: int) -> None:
    if too_long not in _TOO_LONG_CHOICES:
        raise ValueError(f"too_long must be 'skip' or 'truncate', not {too_long!r}")
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
        raise ValueError(f"max_length must be a positive whole number, not {max_length!r}")
    for name, value in (("n_special", n_special), ("n_special_pair", n_special_pair)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number >= 0, not {value!r}")


def split_empty(records: Sequence[Record]) -> tuple[list[Record], list[tuple[str, str]]]:
    """Leave out the records that have a side with no visible character.

    Parameters
    ----------
    records : sequence of Record

    Returns
    -------
    kept : list of Record
        The other records, in order.
    skipped : list of (str, str)
        ``(sentence_id, "empty")`` of each record left out, in order.
    """
    kept, skipped = [], []
    for record in records:
        if is_empty_record(record):
            skipped.append((record.sentence_id, SKIP_EMPTY))
        else:
            kept.append(record)
    return kept, skipped


def split_too_long(
    records: Sequence[Record],
    *,
    max_length: int,
    too_long: str,
    n_special: int = 0,
    n_special_pair: int = 0,
) -> tuple[list[Record], list[tuple[str, str]]]:
    """Deal with inputs too long for the model before they are parsed, using only a count of words.

    A record whose sides have more words in all (see :func:`count_words`) than ``max_length`` minus its
    special tokens can never fit: every word yields at least one piece.

    - ``too_long="skip"``: such records are left out with the reason ``"too_long"``. The encoder would skip
      them too, so nothing changes but that they are never parsed; records that fit by words but not by
      pieces are still skipped, and counted, by the encoder.
    - ``too_long="truncate"``: every record is kept. A side with more than ``max_length`` minus the
      special tokens words, which no truncation can keep whole, is marked to be parsed only up to the end of
      that many words (``record.meta[PARSE_PREFIX]``): those words yield at least as many pieces as
      truncation can keep of that side, so every piece the model sees lies in the parsed prefix. The parse
      is a parse of that prefix, which may attach the last words differently than a parse of the whole text
      would. The text itself is not changed, so the model sees exactly what it would see without this
      filter.

    Parameters
    ----------
    records : sequence of Record
    max_length : int
        Maximum number of pieces, special tokens included (the protocol's ``scoring.max_length``; a model
        with fewer positions only lowers the limit, which keeps the bound valid).
    too_long : {"skip", "truncate"}
    n_special, n_special_pair : int, default 0
        Special tokens the tokenizer adds to a single input and to a pair:
        ``tokenizer.num_special_tokens_to_add(pair=False)`` and ``(pair=True)`` (2 and 3 for BERT, 2 and 4
        for RoBERTa). With several models give the smallest of each; 0 is always safe, only less tight.

    Returns
    -------
    kept : list of Record
        In order; with ``too_long="truncate"``, records with a long side carry ``meta[PARSE_PREFIX]``.
    skipped : list of (str, str)
        ``(sentence_id, "too_long")`` of each record left out, in order (empty with ``"truncate"``).

    Raises
    ------
    ValueError
        For an unknown ``too_long``, or a ``max_length`` or special-token count that is not a whole number
        in range.
    """
    _check_options(max_length, too_long, n_special, n_special_pair)
    kept, skipped = [], []
    for record in records:
        out = _apply_too_long(record, max_length, too_long, n_special, n_special_pair)
        if out is None:
            skipped.append((record.sentence_id, SKIP_TOO_LONG))
        else:
            kept.append(out)
    return kept, skipped


def _apply_too_long(record: Record, max_length: int, too_long: str, n_special: int, n_special_pair: int) -> Record | None:
    """The record (marked with a parse prefix where needed), or None when it is skipped as too long."""
    budget = max_length - (n_special_pair if record.is_pair else n_special)
    if too_long == "skip":
        n_words = count_words(record.text_a, stop_after=budget)
        if record.is_pair:
            n_words += count_words(record.text_b, stop_after=budget)
        return None if n_words > budget else record
    ends = (_prefix_end(record.text_a, budget), _prefix_end(record.text_b, budget) if record.is_pair else None)
    if ends == (None, None):
        return record
    return dataclasses.replace(record, meta={**record.meta, PARSE_PREFIX: ends})


def split_unusable(
    records: Sequence[Record],
    *,
    max_length: int,
    too_long: str,
    n_special: int = 0,
    n_special_pair: int = 0,
) -> tuple[list[Record], list[tuple[str, str]]]:
    """:func:`split_empty`, then :func:`split_too_long`: the filter to run on a data set before parsing.

    Returns
    -------
    kept : list of Record
    skipped : list of (str, str)
        ``(sentence_id, reason)`` in the order of ``records``; reasons ``"empty"`` and ``"too_long"``.
    """
    _check_options(max_length, too_long, n_special, n_special_pair)
    kept, skipped = [], []
    for record in records:
        if is_empty_record(record):
            skipped.append((record.sentence_id, SKIP_EMPTY))
            continue
        out = _apply_too_long(record, max_length, too_long, n_special, n_special_pair)
        if out is None:
            skipped.append((record.sentence_id, SKIP_TOO_LONG))
        else:
            kept.append(out)
    return kept, skipped


def skipped_counts(skipped: Iterable[tuple[str, str]]) -> dict[str, int]:
    """``{reason: number of records}``, the shape of ``ScoreRun.counts["skipped"]``.

    Examples
    --------
    >>> skipped_counts([("3", "empty"), ("7", "too_long"), ("9", "empty")])
    {'empty': 2, 'too_long': 1}
    """
    return dict(Counter(reason for _, reason in skipped))


def check_usable(records: Sequence[Record], source: str) -> None:
    """Refuse a data set in which every record is empty (no visible character).

    Raises
    ------
    DataError
        Naming the source and how many records it read.
    """
    if records and all(is_empty_record(record) for record in records):
        raise DataError(
            f"no usable inputs in {source}: all {len(records)} record(s) are empty (no visible character, only "
            "whitespace or zero-width/invisible characters); add inputs with text or check the file"
        )


def nothing_to_score(name: str, skipped: dict[str, int]) -> DataError:
    """The one-line error for a data set of which no input is left to score, with the fix that fits why:
    ``skipped`` is :func:`skipped_counts` of the data set (``{}``: it had no input at all)."""
    if not skipped:
        return DataError(f"data set {name!r} has no input; give at least one sentence or pair")
    fix = ("raise scoring.max_length or set scoring.too_long: truncate" if skipped.get("too_long")
           else "give inputs with visible text")
    return DataError(f"no input of data set {name!r} could be scored ({skipped}); {fix}")
