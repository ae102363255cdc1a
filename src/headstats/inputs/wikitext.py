"""WikiText paragraph pairs: the inputs of Clark et al. (2019), section 3 (METHODS 2.1).

Clark et al. ran their surface analyses on "1000 Wikipedia segments" of two consecutive paragraphs, fed as
``[CLS] A [SEP] B [SEP]`` and truncated to 128 pieces. :func:`read_wikitext_pairs` reads the raw WikiText
files (``wiki.test.raw``, ... of WikiText-2 or -103): an article starts at a level-1 heading `` = Title = ``,
sections at `` = = ... = = `` (skipped: a pair may span a section heading), and every other non-blank line
is a paragraph. Consecutive paragraphs of one article are paired without overlap (1-2, 3-4, ...; a paragraph left over at an article's end is dropped). The
tokenisation marks of WikiText are undone (``@-@`` -> ``-``, ``@,@`` -> ``,``, ``@.@`` -> ``.``); spaces
before punctuation are left, since word-piece tokenisers split punctuation anyway.

``sentence_id`` is ``<article>-<pair>`` (0-based article number in the file, pair number in the article);
``meta`` holds the article's title and the line numbers of both paragraphs. Registered as the input format
``wikitext_pairs`` (extension ``.raw``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from headstats.errors import DataError
from headstats.inputs.files import iter_lines
from headstats.inputs.records import Record

_HEADING = re.compile(r"^\s*((?:=\s)+)(.*?)((?:\s=)+)\s*$")
_MARKS = {" @-@ ": "-", " @,@ ": ",", " @.@ ": "."}


def clean_wikitext(text: str) -> str:
    """Undo WikiText's ``@-@``, ``@,@`` and ``@.@`` marks and strip the line."""
    for mark, char in _MARKS.items():
        text = text.replace(mark, char)
    return text.strip()


def read_wikitext_pairs(path: str | os.PathLike[str], *, limit: int | None = None) -> list[Record]:
    """Pairs of consecutive paragraphs of each article of a raw WikiText file (see the module docstring).

    Raises
    ------
    DataError
        When the file holds no pair of paragraphs (not a WikiText file, or articles of one paragraph only).
    """
    path = Path(path)
    records: list[Record] = []
    article, title = -1, ""
    pending: tuple[int, str] | None = None
    pair = 0
    for number, line in iter_lines(path):
        if limit is not None and len(records) >= limit:
            break
        if not line.strip():
            continue
        heading = _HEADING.match(line)
        if heading:
            if heading.group(1).count("=") == 1:  # a new article: paragraphs pair within one article
                article, title, pair, pending = article + 1, heading.group(2).strip(), 0, None
            continue
        text = clean_wikitext(line)
        if not text:
            continue
        if pending is None:
            pending = (number, text)
            continue
        records.append(Record(sentence_id=f"{max(article, 0)}-{pair}", text_a=pending[1], text_b=text,
                              meta={"title": title, "lines": (pending[0], number)}))
        pair += 1
        pending = None
    if not records:
        raise DataError(f"{os.fspath(path)} holds no two consecutive paragraphs of one article; give a raw "
                        "WikiText file (wiki.test.raw) or choose another format")
    return records
