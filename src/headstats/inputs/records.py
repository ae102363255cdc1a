"""The data model every reader produces and every later layer consumes.

A :class:`Record` is one model input: a single sentence (``text_a``) or a pair (``text_a``, ``text_b``),
with an optional dependency parse of each side. Words carry character offsets into the text of their own
side, so that they can be aligned to word pieces by offsets (METHODS 1.3), never by string search.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a parsed side.

    Attributes
    ----------
    text : str
        The word's form.
    start, end : int
        Character offsets of the word in its side's text, ``text[start:end]``. Words of one multiword
        token (UD ``2-3``) share the token's span.
    head : int
        0-based index of the head word within the same side; -1 for the root.
    deprel : str
        The relation to the head in headstats' canonical label set (spaCy/ClearNLP style: ``nsubj``,
        ``dobj``, ``amod``, ``advmod``, ...; UD ``obj`` is stored as ``dobj``). See
        :func:`headstats.inputs.parsing.canonical_relation`.
    """

    text: str
    start: int
    end: int
    head: int
    deprel: str


@dataclass(frozen=True, slots=True)
class Record:
    """One input: a sentence or a sentence pair, with optional parses.

    Attributes
    ----------
    sentence_id : str
        The record's ``id`` if the source gives one, else its 0-based index in file order, as a string.
    text_a, text_b : str, str or None
        The two sides; ``text_b`` is None for single-sentence inputs.
    label : str or None
        A class label, if the source has one (GLUE, JSONL); kept for fine-tuning, unused by scores.
    words_a, words_b : tuple of Word or None
        Dependency parses of each side, None when the side was not parsed.
    """

    sentence_id: str
    text_a: str
    text_b: str | None = None
    label: str | None = None
    words_a: tuple[Word, ...] | None = None
    words_b: tuple[Word, ...] | None = None
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_pair(self) -> bool:
        return self.text_b is not None

    @property
    def is_parsed(self) -> bool:
        return self.words_a is not None and (self.text_b is None or self.words_b is not None)


def count_records(records) -> str:
    """How many records and what kind, as the CLI and a repr say it: ``264 inputs``, ``116 pairs`` or ``300
    inputs, 116 pairs`` (a mix of single sentences and pairs)."""
    pairs = sum(r.is_pair for r in records)
    kind = "pairs" if pairs == len(records) else "inputs" if not pairs else f"inputs, {pairs:,} pairs"
    return f"{len(records):,} {kind}"



def as_records(items) -> list[Record]:
    """The records of what a Python caller hands over: a :class:`Record` as it is, a ``str`` as one sentence, a
    pair of ``str`` (a tuple or list of two) as a sentence pair. A sentence or pair gets its 0-based position as
    its ``sentence_id``; none may be a Record's id too.

    Raises
    ------
    DataError
        One line naming the first item that is none of these, or an id given twice, and the fix.
    """
    from collections.abc import Iterable, Mapping

    from headstats.errors import DataError

    if isinstance(items, Mapping) or not isinstance(items, Iterable):
        raise DataError(f"the inputs are a {type(items).__name__}: give a list of Records (hs.read_records), "
                        "sentences (str) or sentence pairs ((str, str))")
    out: list[Record] = []
    for i, item in enumerate(items):
        if isinstance(item, Record):
            out.append(item)
        elif isinstance(item, str):
            out.append(Record(str(i), item))
        elif isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(t, str) for t in item):
            out.append(Record(str(i), item[0], item[1]))
        else:
            raise DataError(f"input {i} is a {type(item).__name__}, not a sentence: give Records "
                            "(hs.read_records), sentences (str) or sentence pairs ((str, str))")
    shared = first_shared_id(out)
    if shared is not None:
        raise DataError(f"two inputs have the id {shared[2]!r}: give Records with distinct sentence_id values, or "
                        "sentences alone (each gets its position)")
    return out


def first_shared_id(records) -> tuple[int, int, str] | None:
    """The 0-based positions of the first record whose ``sentence_id`` an earlier one already has, of that earlier
    one, and the id: ``(earlier, later, id)``; None when every id is its own."""
    seen: dict[str, int] = {}
    for k, record in enumerate(records):
        if record.sentence_id in seen:
            return seen[record.sentence_id], k, record.sentence_id
        seen[record.sentence_id] = k
    return None
