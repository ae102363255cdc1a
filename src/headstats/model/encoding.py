"""Tokenisation of records into model inputs, with words aligned to word pieces by character offsets.

Each :class:`EncodedInput` holds what the scores need besides attention: the positions of the special
tokens (from the tokenizer's special-tokens mask and ids, so ``<s>``/``</s>`` work as well as
[CLS]/[SEP]), the segment of every position, and the dependency arcs as sets of piece positions
(METHODS 1.1, 1.3). Alignment is by character offsets on the text the model saw: a word owns every piece of
its own side whose offsets overlap the word's span.

Text is tokenised as text: a literal ``[SEP]``, ``[CLS]``, ``<s>`` or ``[MASK]`` written in an input is split
into ordinary pieces (``split_special_tokens=True``), so that the only special positions are those the
tokenizer adds, and such a string is a word like any other.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from headstats.errors import ModelError
from headstats.inputs.filters import SKIP_EMPTY, SKIP_TOO_LONG, is_empty_record
from headstats.inputs.records import Record, Word

#: Reason for a record a side of which the tokenizer turns into no piece at all (e.g. only U+FFFD under BERT).
SKIP_NO_PIECES = "no_pieces"


@dataclass(frozen=True)
class Arc:
    """One dependency arc, as piece positions of its dependent and head words."""

    dependent: tuple[int, ...]
    head: tuple[int, ...]
    relation: str


@dataclass
class EncodedInput:
    """One record tokenised for the model.

    Attributes
    ----------
    index : int
        Position of the record in its data set (file order).
    sentence_id : str
    input_ids, token_type_ids : ndarray of int
        ``token_type_ids`` is all zeros for models without segment embeddings.
    special, cls, sep : ndarray of bool
    segment : ndarray of int
        0 for positions of sentence A (with [CLS] and the first [SEP]), 1 for sentence B.
    is_pair : bool
    word_pieces : list of tuple of int
        Piece positions of each word, words of side A first, then side B (empty when unparsed).
    arcs : list of Arc
        Arcs whose both ends have pieces in the (possibly truncated) sequence.
    truncated : bool
    arc_length : int or None
        The sequence length n of the arc scores (METHODS 1.3): each dependent row is summed over its first n
        keys and divided by n. None: the input's length. The published code's lookup
        (``scoring.alignment: first_occurrence``) sets the length of the cleaned copy's pieces, capped at the
        maximum length (METHODS 1.6 (c)).
    """

    index: int
    sentence_id: str
    input_ids: np.ndarray
    token_type_ids: np.ndarray
    special: np.ndarray
    cls: np.ndarray
    sep: np.ndarray
    segment: np.ndarray
    is_pair: bool
    word_pieces: list[tuple[int, ...]] = field(default_factory=list)
    arcs: list[Arc] = field(default_factory=list)
    truncated: bool = False
    arc_length: int | None = None
    #: The record's class label (GLUE, JSONL), for analyses that score a task head; None when it has none.
    label: str | None = None

    @property
    def length(self) -> int:
        return int(self.input_ids.shape[0])


@dataclass
class EncodingResult:
    """Encoded inputs and what was left out, with reasons.

    ``skipped`` counts inputs not scored: ``too_long``, ``empty`` (a side with no visible character, see
    :func:`headstats.inputs.filters.has_visible_text`) and ``no_pieces`` (a side the tokenizer turns into no
    piece); ``notes`` counts things that were kept but changed (``truncated``, ``arcs_dropped_truncation``,
    ``words_without_pieces``).
    """

    inputs: list[EncodedInput]
    skipped: Counter
    notes: Counter


def _segments(sequence_ids: list[int | None], special: np.ndarray) -> np.ndarray:
    """Segment per position; special positions join A until the first B piece, B after it."""
    seq = np.array([-1 if s is None else s for s in sequence_ids])
    segment = np.where(seq < 0, 0, seq).astype(np.int8)
    b_positions = np.flatnonzero(seq == 1)
    if b_positions.size:
        first_b = b_positions[0]
        idx = np.arange(len(seq))
        # A special after the first B piece ([SEP] closing B) belongs to B; [CLS] and the [SEP]
        # closing A come before it and stay in A.
        segment[(seq < 0) & (idx > first_b)] = 1
    return segment


def align_words(
    words: Iterable[Word], offsets: np.ndarray, sequence_ids: list[int | None], side: int
) -> list[tuple[int, ...]]:
    """Piece positions of each word: pieces of ``side`` whose character span overlaps the word's.

    Parameters
    ----------
    words : iterable of Word
        Words with ``start``/``end`` offsets into their side's text.
    offsets : ndarray, shape (n, 2)
        The fast tokenizer's ``offset_mapping`` (character spans into each piece's own side).
    sequence_ids : list
        ``BatchEncoding.sequence_ids()``: 0, 1 or None per piece.
    side : int
        0 for text A, 1 for text B.
    """
    on_side = np.array([s == side for s in sequence_ids]) & (offsets[:, 1] > offsets[:, 0])
    positions = np.flatnonzero(on_side)
    starts, ends = offsets[positions, 0], offsets[positions, 1]
    words = list(words)
    if (np.diff(starts) >= 0).all() and (np.diff(ends) >= 0).all():
        # spans in reading order (a fast tokenizer's): the pieces with start < word end are a prefix, those with
        # end > word start a suffix, so a word's pieces are one run, found by two binary searches for all words
        first = np.searchsorted(ends, [w.start for w in words], side="right")
        stop = np.searchsorted(starts, [w.end for w in words], side="left")
        listed = positions.tolist()
        return [tuple(listed[a:b]) for a, b in zip(first.tolist(), stop.tolist())]
    pieces = []
    for word in words:
        hit = (starts < word.end) & (ends > word.start)
        pieces.append(tuple(int(p) for p in positions[hit]))
    return pieces


def _published_alignment(record: Record, cleaned: tuple[str, str | None], tokenizer: Any, *, length: int,
                         max_length: int, notes: Counter) -> tuple[list[tuple[int, ...]], list[Arc], int]:
    """Word pieces, arcs and arc length as ``syntactic_score.ipynb`` of Pande et al. finds them (METHODS 1.6).

    The words index into the cleaned copies ``cleaned`` (``(a, b)``), whose pieces make the published code's
    sequence ``CLS A SEP B SEP``. Each piece of a word is found on its own at its first occurrence (side A in
    that whole sequence, side B among B's pieces, shifted by ``len(A) + 2``;
    :func:`headstats.inputs.parsing.first_occurrence_pieces`); an arc is kept when both its words have pieces,
    both texts are whitespace tokens of the cleaned side (:func:`~headstats.inputs.parsing.published_arc_kept`)
    and every position is below ``max_length``. The arc length is that of the cleaned sequence, capped at
    ``max_length``: the scores cut the rows there and divide by it. An arc with a position the model's input
    does not reach (the cleaned copy has more pieces than the text; the notebooks read a padded row there) is
    dropped and counted in ``notes["arcs_dropped_beyond_input"]``. ``word_pieces`` keeps, per word, its
    positions inside the model's input.
    """
    from headstats.inputs.parsing import first_occurrence_pieces, published_arc_kept

    side_a = tokenizer.tokenize(cleaned[0])
    side_b = tokenizer.tokenize(cleaned[1]) if record.is_pair else []
    sequence = ["CLS", *side_a, "SEP", *side_b, "SEP"] if record.is_pair else ["CLS", *side_a, "SEP"]
    word_pieces: list[tuple[int, ...]] = []
    arcs: list[Arc] = []
    for side, words in ((0, record.words_a), (1, record.words_b)):
        if not words:
            continue
        if side == 0:
            pieces = first_occurrence_pieces(words, sequence, tokenizer.tokenize)
        else:
            pieces = first_occurrence_pieces(words, side_b, tokenizer.tokenize, offset=len(side_a) + 2)
        word_pieces.extend(tuple(sorted({p for p in ps if p < length})) for ps in pieces)
        for word, dep in zip(words, pieces):
            if word.head < 0:
                continue
            head = pieces[word.head]
            if not dep or not head:
                notes["arcs_dropped_no_pieces"] += 1
            elif not published_arc_kept(word.text, words[word.head].text, cleaned[side]):
                notes["arcs_dropped_split_token"] += 1
            elif max(dep + head) >= max_length:
                notes["arcs_dropped_truncation"] += 1
            elif max(dep + head) >= length:
                notes["arcs_dropped_beyond_input"] += 1
            else:
                arcs.append(Arc(dep, head, word.deprel))
    return word_pieces, arcs, min(max_length, len(sequence))


def _tokenize(tokenizer: Any, record: Record, **kwargs: Any) -> Any:
    """Call the tokenizer with literal special tokens in the text split into ordinary pieces."""
    try:
        return tokenizer(record.text_a, record.text_b, split_special_tokens=True, **kwargs)
    except TypeError as exc:
        if "split_special_tokens" not in str(exc):
            raise
        raise ModelError(
            "this version of transformers cannot tokenise '[SEP]', '<s>' ... written in the text as text "
            "(split_special_tokens); upgrade it: pip install -U 'transformers>=4.42'"
        ) from None


#: What every tokenizer call of the encoding returns beside the ids.
_ENCODING_OUTPUTS = dict(return_offsets_mapping=True, return_special_tokens_mask=True, return_token_type_ids=True)


class _ItemEncoding:
    """Item ``i`` of a batch call's ``BatchEncoding``, read as the encoding of a single call is
    (``encoding[key]``, ``encoding.get(key)``, ``encoding.sequence_ids()``)."""

    def __init__(self, batch: Any, i: int) -> None:
        self.batch, self.i = batch, i

    def __getitem__(self, key: str) -> Any:
        return self.batch[key][self.i]

    def get(self, key: str, default: Any = None) -> Any:
        return self.batch[key][self.i] if key in self.batch else default

    def sequence_ids(self) -> list[int | None]:
        return self.batch.sequence_ids(self.i)


def _tokenize_all(tokenizer: Any, records: Sequence[Record]) -> list[Any]:
    """The untruncated encoding of every record, single sentences and pairs each in one call of the fast
    tokenizer (its per-call cost is most of a short sentence's); the same encodings as one call per record.
    A tokenizer without batch encodings (not a fast one) gets None: one call per record then."""
    out: list[Any] = [None] * len(records)
    for pairs in (False, True):
        rows = [k for k, record in enumerate(records) if record.is_pair == pairs]
        if not rows:
            continue
        texts = [records[k].text_a for k in rows]
        others = [records[k].text_b for k in rows] if pairs else None
        try:
            batch = tokenizer(texts, others, split_special_tokens=True, truncation=False, **_ENCODING_OUTPUTS)
            batch.sequence_ids(0)
        except (TypeError, ValueError):  # not a fast tokenizer, or an old transformers: one call per record
            return [None] * len(records)
        for n, k in enumerate(rows):
            out[k] = _ItemEncoding(batch, n)
    return out


def _has_empty_side(sequence_ids: list[int | None], is_pair: bool) -> bool:
    sides = {s for s in sequence_ids if s is not None}
    return not {0, 1} <= sides if is_pair else 0 not in sides


def encode_record(
    record: Record,
    tokenizer: Any,
    *,
    index: int,
    max_length: int = 128,
    too_long: str = "skip",
    notes: Counter | None = None,
    skipped: Counter | None = None,
    encoding: Any = None,
) -> EncodedInput | None:
    """Tokenise one record; return None when it is skipped (and count the reason in ``skipped``).

    ``encoding``: the record's untruncated encoding when already made (:func:`encode_records` tokenises a chunk's
    records in one call of the fast tokenizer, :class:`_ItemEncoding`).

    It is skipped when it is longer than ``max_length`` pieces and ``too_long="skip"`` (``"too_long"``), or
    when a side yields no piece at all (``"no_pieces"``: text the tokenizer's normaliser deletes entirely).
    Truncation (``too_long="truncate"``) cuts the longest side first; arcs that lose an end are dropped
    and counted in ``notes["arcs_dropped_truncation"]``. ``[SEP]``, ``<s>`` ... written in the text are
    tokenised as text (see the module's docstring).
    """
    notes = Counter() if notes is None else notes
    skipped = Counter() if skipped is None else skipped
    kwargs = _ENCODING_OUTPUTS
    if encoding is None:
        encoding = _tokenize(tokenizer, record, truncation=False, **kwargs)
    if _has_empty_side(encoding.sequence_ids(), record.is_pair):
        skipped[SKIP_NO_PIECES] += 1
        return None
    truncated = False
    if len(encoding["input_ids"]) > max_length:
        if too_long == "skip":
            skipped[SKIP_TOO_LONG] += 1
            return None
        encoding = _tokenize(tokenizer, record, truncation="longest_first", max_length=max_length, **kwargs)
        truncated = True
        notes["truncated"] += 1
    input_ids = np.asarray(encoding["input_ids"], dtype=np.int64)
    special = np.asarray(encoding["special_tokens_mask"], dtype=bool)
    sequence_ids = encoding.sequence_ids()
    cls = special & (input_ids == tokenizer.cls_token_id) if tokenizer.cls_token_id is not None else special & False
    sep = special & (input_ids == tokenizer.sep_token_id) if tokenizer.sep_token_id is not None else special & False
    token_type_ids = np.asarray(encoding.get("token_type_ids") or np.zeros_like(input_ids), dtype=np.int64)
    offsets = np.asarray(encoding["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    word_pieces: list[tuple[int, ...]] = []
    arcs: list[Arc] = []
    arc_length = None
    cleaned = record.meta.get("cleaned_text")
    if cleaned is not None:  # the published code's lookup (METHODS 1.6)
        word_pieces, arcs, arc_length = _published_alignment(record, cleaned, tokenizer, length=len(input_ids),
                                                             max_length=max_length, notes=notes)
    for side, words in ((0, record.words_a), (1, record.words_b)):
        if not words or cleaned is not None:
            continue
        pieces = align_words(words, offsets, sequence_ids, side)
        word_pieces.extend(pieces)
        for word, dep in zip(words, pieces):
            if word.head < 0:
                continue
            head = pieces[word.head]
            if dep and head:
                arcs.append(Arc(dep, head, word.deprel))
            elif truncated:
                notes["arcs_dropped_truncation"] += 1
            else:
                notes["arcs_dropped_no_pieces"] += 1
        missing = sum(1 for p in pieces if not p)
        if missing and not truncated:
            notes["words_without_pieces"] += missing
    return EncodedInput(
        index=index,
        sentence_id=record.sentence_id,
        label=record.label,
        input_ids=input_ids,
        token_type_ids=token_type_ids,
        special=special,
        cls=cls,
        sep=sep,
        segment=_segments(sequence_ids, special),
        is_pair=record.is_pair,
        word_pieces=word_pieces,
        arcs=arcs,
        truncated=truncated,
        arc_length=arc_length,
    )


def encode_records(
    records: list[Record],
    tokenizer: Any,
    *,
    max_length: int = 128,
    too_long: str = "skip",
) -> EncodingResult:
    """Tokenise every record; inputs over ``max_length`` pieces are skipped or truncated and counted.

    A record a side of which has no visible character (``text_b`` too, for a pair) is skipped as
    ``"empty"`` (:func:`headstats.inputs.filters.is_empty_record`, the same test as the filter run before
    parsing), one whose side yields no piece as ``"no_pieces"``.

    Parameters
    ----------
    records : list of Record
    tokenizer : transformers fast tokenizer
    max_length : int
        Maximum number of pieces, special tokens included (128 in the paper).
    too_long : {"skip", "truncate"}
    """
    if too_long not in ("skip", "truncate"):
        raise ValueError(f"too_long must be 'skip' or 'truncate', not {too_long!r}")
    skipped: Counter = Counter()
    notes: Counter = Counter()
    inputs = []
    kept = [index for index, record in enumerate(records) if not is_empty_record(record)]
    if len(kept) < len(records):
        skipped[SKIP_EMPTY] += len(records) - len(kept)
    encodings = _tokenize_all(tokenizer, [records[index] for index in kept])
    for index, encoding in zip(kept, encodings):
        encoded = encode_record(records[index], tokenizer, index=index, max_length=max_length, too_long=too_long,
                                notes=notes, skipped=skipped, encoding=encoding)
        if encoded is not None:
            inputs.append(encoded)
    return EncodingResult(inputs=inputs, skipped=skipped, notes=notes)
