"""CoNLL-U with gold dependency parses (the ``conllu`` input format): one record per sentence.

Its own module so that readers of formats built on CoNLL-U (:mod:`headstats.inputs.coref`) and the format
registry (:mod:`headstats.inputs.readers`) both import it without importing each other.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

from headstats.errors import DataError
from headstats.inputs.files import iter_lines
from headstats.inputs.parsing import canonical_relation
from headstats.inputs.records import Record, Word

__all__ = ["read_conllu"]


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(1-based line number, line without its end-of-line)``; see :func:`~headstats.inputs.files.iter_lines`."""
    return iter_lines(path)


_N_COLUMNS = 10


def _conllu_blocks(path: Path) -> Iterator[list[tuple[int, str]]]:
    """Yield each sentence block of a CoNLL-U file as ``[(line number, line), ...]``."""
    block: list[tuple[int, str]] = []
    for number, line in _lines(path):
        if line.strip():
            block.append((number, line))
        elif block:
            yield block
            block = []
    if block:
        yield block


class _Token:
    """One token line of CoNLL-U, checked: a word (``int`` id), a multiword range, or an empty node."""

    __slots__ = ("line", "kind", "first", "last", "form", "head", "deprel", "space_after")

    def __init__(self, line: int, kind: str, first: int, last: int, form: str, head: int | None,
                 deprel: str, space_after: bool) -> None:
        self.line, self.kind, self.first, self.last = line, kind, first, last
        self.form, self.head, self.deprel, self.space_after = form, head, deprel, space_after


def _parse_token_line(number: int, line: str, where: str) -> _Token:
    from conllu.exceptions import ParseException
    from conllu.parser import DEFAULT_FIELDS, parse_line


    columns = line.split("\t")
    if len(columns) != _N_COLUMNS:
        raise DataError(
            f"{where}, line {number}: malformed CoNLL-U, {len(columns)} columns where 10 TAB-separated "
            "columns are needed (ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC)"
        )
    is_word = "-" not in columns[0] and "." not in columns[0]
    if is_word and not columns[6].strip().isdigit():
        raise DataError(
            f"{where}, line {number}: malformed CoNLL-U, HEAD {columns[6]!r} is not an integer; "
            "gold heads are needed (0 for the root)"
        )
    if columns[0].isdigit() and columns[6].isdigit() and columns[7] not in ("", "_"):
        # an ordinary word line: what conllu's parser would give for the columns used here, four times faster
        space_after = "SpaceAfter=No" not in columns[9].split("|")
        word = int(columns[0])
        return _Token(number, "word", word, word, columns[1], int(columns[6]), columns[7], space_after)
    try:
        token = parse_line(line, fields=DEFAULT_FIELDS)
    except ParseException as exc:
        raise DataError(f"{where}, line {number}: malformed CoNLL-U ({exc}); fix that line") from None
    token_id = token["id"]
    misc = token["misc"] or {}
    space_after = misc.get("SpaceAfter") != "No"
    if isinstance(token_id, tuple):
        first, sep, last = token_id
        kind = "range" if sep == "-" else "empty"
        return _Token(number, kind, first, last, token["form"], None, "", space_after)
    if not isinstance(token_id, int):
        raise DataError(f"{where}, line {number}: malformed CoNLL-U, ID {columns[0]!r} is not a word index")
    head = token["head"]
    if not isinstance(head, int):
        raise DataError(
            f"{where}, line {number}: malformed CoNLL-U, HEAD {columns[6]!r} is not an integer; "
            "gold heads are needed (0 for the root)"
        )
    deprel = token["deprel"]
    if not deprel or deprel == "_":
        raise DataError(
            f"{where}, line {number}: malformed CoNLL-U, DEPREL is missing; give every word a relation"
        )
    return _Token(number, "word", token_id, token_id, token["form"], head, deprel, space_after)


def _surface_tokens(tokens: list[_Token]) -> list[_Token]:
    """The tokens that make up the text: multiword ranges, and words outside any range."""
    surface, covered_until = [], 0
    for tok in tokens:
        if tok.kind == "range":
            surface.append(tok)
            covered_until = tok.last
        elif tok.kind == "word" and tok.first > covered_until:
            surface.append(tok)
    return surface


def _joined_text(surface: list[_Token]) -> str:
    """Rebuild a sentence's text from its surface forms, a space after each unless ``SpaceAfter=No``."""
    parts = []
    for tok in surface:
        parts.append(tok.form)
        if tok.space_after:
            parts.append(" ")
    return "".join(parts).rstrip(" ")


def _find_spans(text: str, surface: list[_Token]) -> list[tuple[int, int]] | None:
    """Scan ``text`` left to right for each surface form; None if one is missing or text is skipped."""
    spans, pos = [], 0
    for tok in surface:
        start = text.find(tok.form, pos)
        if start < 0 or text[pos:start].strip():
            return None
        spans.append((start, start + len(tok.form)))
        pos = start + len(tok.form)
    return spans


def _check_tree(tokens: list[_Token], sentence_id: str, where: str, line: int) -> None:
    """Refuse a sentence whose heads do not form one tree.

    That is: a head outside the sentence, a word that is its own head, no root or several roots (words with
    HEAD 0), or a cycle of heads.
    """
    words = {tok.first: tok for tok in tokens if tok.kind == "word"}
    n_words = len(words)
    sentence = f"sentence {sentence_id!r} in {where} (line {line})"
    fix = "fix the file or remove the sentence"
    for tok in words.values():
        if not 0 <= tok.head <= n_words:
            raise DataError(
                f"{where}, line {tok.line}: malformed CoNLL-U, HEAD {tok.head} is out of range in sentence "
                f"{sentence_id!r}: it points outside the sentence, which has {n_words} words (0 is the root); {fix}"
            )
        if tok.head == tok.first:
            raise DataError(
                f"{where}, line {tok.line}: malformed CoNLL-U, word {tok.first} is its own head in sentence "
                f"{sentence_id!r}; {fix}"
            )
    roots = [word_id for word_id, tok in words.items() if tok.head == 0]
    if not roots:
        raise DataError(f"{sentence} has no root (no word has HEAD 0); {fix}")
    if len(roots) > 1:
        listed = ", ".join(str(r) for r in roots)
        raise DataError(
            f"{sentence} has {len(roots)} roots (words {listed} have HEAD 0) where a sentence has one; {fix}"
        )
    cycle = _head_cycle({word_id: tok.head for word_id, tok in words.items()})
    if cycle:
        raise DataError(f"{sentence} has a head cycle (words {' -> '.join(str(w) for w in cycle)}); {fix}")


def _head_cycle(heads: dict[int, int]) -> list[int] | None:
    """The first cycle of heads, as word ids ending where it starts (``[3, 5, 3]``); None if all reach 0."""
    reaches_root: set[int] = set()
    for start in heads:
        path: list[int] = []
        on_path: set[int] = set()
        word = start
        while word != 0 and word not in reaches_root:
            if word in on_path:
                cycle = path[path.index(word):]
                return [*cycle, word]
            path.append(word)
            on_path.add(word)
            word = heads[word]
        reaches_root.update(path)
    return None


def _sentence_words(tokens: list[_Token], text: str, where: str) -> tuple[str, tuple[Word, ...], bool]:
    """Build the words of one sentence; returns ``(text used, words, whether the forms rebuilt the text)``."""
    surface = _surface_tokens(tokens)
    spans = _find_spans(text, surface) if text else None
    rebuilt = spans is None
    if rebuilt:
        text = _joined_text(surface)
        spans = _find_spans(text, surface)
    span_of_word: dict[int, tuple[int, int]] = {}
    for tok, span in zip(surface, spans, strict=True):
        for word_id in range(tok.first, tok.last + 1):
            span_of_word[word_id] = span
    words = []
    for tok in tokens:
        if tok.kind != "word":
            continue
        start, end = span_of_word[tok.first]
        words.append(Word(text=sys.intern(tok.form), start=start, end=end, head=tok.head - 1,
                          deprel=canonical_relation(tok.deprel)))
    return text, tuple(words), rebuilt


def _check_word_ids(tokens: list[_Token], where: str) -> None:
    expected = 1
    for tok in tokens:
        if tok.kind == "word":
            if tok.first != expected:
                raise DataError(
                    f"{where}, line {tok.line}: malformed CoNLL-U, word ID {tok.first} where {expected} was "
                    "expected; word IDs run 1, 2, 3, ... in each sentence"
                )
            expected += 1
        elif tok.kind == "range" and not tok.first <= tok.last:
            raise DataError(
                f"{where}, line {tok.line}: malformed CoNLL-U, range {tok.first}-{tok.last} is empty"
            )


def _read_block(block: list[tuple[int, str]], where: str) -> tuple[dict[str, str], list[_Token]]:
    from conllu.exceptions import ParseException
    from conllu.parser import parse_comment_line

    metadata: dict[str, str] = {}
    tokens: list[_Token] = []
    for number, line in block:
        if line.startswith("#"):
            try:
                pairs = parse_comment_line(line)
            except ParseException:
                continue  # a comment that is no "key = value" pair
            for key, value in pairs:
                if isinstance(value, str):
                    metadata.setdefault(key, value)
        else:
            tokens.append(_parse_token_line(number, line, where))
    _check_word_ids(tokens, where)
    return metadata, tokens


def read_conllu(path: str | os.PathLike[str], *, limit: int | None = None) -> list[Record]:
    """Read CoNLL-U with gold dependency parses: one record per sentence.

    ``sentence_id`` is ``# sent_id`` when present, else the sentence's 0-based index in the file; the text
    is ``# text`` when present, else the forms joined with a space unless ``SpaceAfter=No``. Words get
    character offsets by scanning the text left to right for each surface token; the words of a multiword
    token (``2-3``) share its span; empty nodes (``8.1``) are skipped. Heads become 0-based word indices
    (-1 for the root) and relations go through
    :func:`~headstats.inputs.parsing.canonical_relation` (``obj`` becomes ``dobj``).

    If a sentence's forms cannot be found in order in its ``# text``, the forms joined as above serve as its
    text instead; heads and relations are unaffected, so nothing is lost but the original spacing. The
    number of such sentences is given in one warning.

    Parameters
    ----------
    path : str or path-like
        The CoNLL-U file (UTF-8).
    limit : int, optional
        Stop after this many sentences.

    Returns
    -------
    list of Record
        Single-sentence records with ``words_a`` set; ``meta`` holds the first ``line`` of the sentence.

    Raises
    ------
    DataError
        For malformed CoNLL-U (a wrong number of columns, a non-integer head, word IDs not running 1, 2,
        3, ...), naming the file and the line; and for a sentence whose heads form no tree (a head outside
        the sentence, no root or more than one, a cycle), naming the file, the sentence and its first line.
    """
    path = Path(path)
    where = os.fspath(path)
    records: list[Record] = []
    rebuilt_ids: list[str] = []
    for block in _conllu_blocks(path):
        if limit is not None and len(records) >= limit:
            break
        metadata, tokens = _read_block(block, where)
        if not any(tok.kind == "word" for tok in tokens):
            continue  # a block of comments only
        sentence_id = metadata.get("sent_id", str(len(records)))
        _check_tree(tokens, sentence_id, where, block[0][0])
        text, words, rebuilt = _sentence_words(tokens, metadata.get("text", "").strip(), where)
        if rebuilt and "text" in metadata:
            rebuilt_ids.append(sentence_id)
        records.append(
            Record(sentence_id=sentence_id, text_a=text, words_a=words,
                   meta={"line": block[0][0], "text_source": "forms" if rebuilt else "text"})
        )
    if rebuilt_ids:
        warnings.warn(
            f"{where}: in {len(rebuilt_ids)} sentence(s) (first: {rebuilt_ids[0]!r}) the word forms do not "
            "match '# text'; their text was rebuilt from the forms, so heads and relations are all kept",
            stacklevel=2,
        )
    return records
