"""Read inputs from files: plain text, JSONL, GLUE-format TSV and CoNLL-U (gold parses).

Every reader returns a list of :class:`~headstats.inputs.records.Record`. ``sentence_id`` is the record's
own id where the format has one (JSONL ``id``, CoNLL-U ``# sent_id``, GLUE index column), else its 0-based
index among the records of the file, in file order, as a string. Problems with a file are raised as
:class:`~headstats.errors.DataError` naming the file, the line where there is one, and the fix.

A text with no visible character (only whitespace, zero-width or other invisible characters, see
:func:`headstats.inputs.filters.has_visible_text`) is empty. Where a format allows empty inputs they are
read as records and left out later with the reason ``"empty"``
(:func:`headstats.inputs.filters.split_unusable`, or the encoder); a file whose records are all empty is
refused like an empty file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from headstats.errors import DataError, HeadstatsError
from headstats.inputs.files import check_data_file, iter_lines
from headstats.inputs.filters import check_usable, has_visible_text
from headstats.inputs.conllu import read_conllu
from headstats.inputs.coref import read_gap, read_gum_coref
from headstats.inputs.records import Record, first_shared_id
from headstats.registry import Registry

__all__ = ["INPUT_FORMATS", "InputFormat", "infer_format", "list_formats", "register_format", "read_records", "read_text", "read_jsonl", "read_conllu"]

#: ``reader(path, *, limit) -> list[Record]``.
Reader = Callable[..., list[Record]]


@dataclass(frozen=True)
class InputFormat:
    """A registered input format: its reader and the file extensions that select it.

    Attributes
    ----------
    name : str
        The name a protocol's ``format:`` or ``read_records(format=...)`` uses.
    reader : callable
        ``reader(path, *, limit=None) -> list[Record]``.
    extensions : tuple of str
        Lower-case file extensions (with the dot) read in this format when no format is named.
    description : str
    """

    name: str
    reader: Reader
    extensions: tuple[str, ...] = ()
    description: str = ""


#: Every input format :func:`read_records` understands; built-ins are registered below like user formats.
INPUT_FORMATS: Registry[InputFormat] = Registry("input format", hint="or leave format out to infer it from the extension")


def register_format(name: str, reader: Reader, *, extensions: Sequence[str] = (), description: str = "",
                    overwrite: bool = False) -> InputFormat:
    """Register an input format; ``extensions`` (e.g. ``[".csv"]``) select it when no format is named."""
    if not callable(reader):
        raise TypeError("reader must be a callable (path, *, limit) -> list of Record")
    taken = {ext: f.name for f in (INPUT_FORMATS.get(n) for n in INPUT_FORMATS) for ext in f.extensions if f.name != name}
    exts = tuple(e.lower() if e.startswith(".") else "." + e.lower() for e in extensions)
    clash = [e for e in exts if e in taken]
    if clash and not overwrite:
        raise ValueError(f"extension {clash[0]} already selects format {taken[clash[0]]!r}; pass overwrite=True")
    return INPUT_FORMATS.register(name, InputFormat(name, reader, exts, description), overwrite=overwrite)


def list_formats() -> list[str]:
    """Names of the registered input formats."""
    return INPUT_FORMATS.names()


def _extensions() -> dict[str, str]:
    return {ext: name for name in INPUT_FORMATS for ext in INPUT_FORMATS.get(name).extensions}


def infer_format(path: str | os.PathLike[str]) -> str:
    """Infer the input format from a file's extension.

    ``.txt`` is ``text``, ``.jsonl`` is ``jsonl``, ``.tsv`` is ``glue``, ``.conllu`` and ``.conll`` are
    ``conllu`` (case-insensitive).

    Parameters
    ----------
    path : str or path-like
        The data file.

    Returns
    -------
    str
        A registered format (:data:`INPUT_FORMATS`).

    Raises
    ------
    DataError
        If the extension is not one of those.
    """
    suffix = Path(path).suffix.lower()
    extensions = _extensions()
    if suffix in extensions:
        return extensions[suffix]
    known = ", ".join(f"{ext} ({fmt})" for ext, fmt in extensions.items())
    raise DataError(
        f"cannot tell the format of {os.fspath(path)!r} from its extension {suffix or '(none)'!r}; "
        f"known: {known}; pass format: one of {', '.join(list_formats())}"
    )


def read_records(
    path: str | os.PathLike[str], *, format: str | None = None, limit: int | None = None
) -> list[Record]:
    """Read the inputs of a data file.

    Parameters
    ----------
    path : str or path-like
        The data file.
    format : str, optional
        A registered format (:func:`list_formats`: text, jsonl, glue, conllu and the others); inferred from
        the extension when None (see :func:`infer_format`).
    limit : int, optional
        Read at most this many records (the first ones in file order); all when None.

    Returns
    -------
    list of Record
        At least one record, and at least one that is not empty. Records from CoNLL-U carry gold parses;
        the others are unparsed (see :func:`headstats.inputs.parsing.parse_records`). Empty records (no
        visible character) are kept, to be skipped with a reason (see
        :func:`headstats.inputs.filters.split_unusable`).

    Raises
    ------
    DataError
        If the path is missing or is a folder, the format unknown, the file not UTF-8 text or binary, the
        content malformed (with the line number), two records share a ``sentence_id``, or the file holds no
        record, or only empty ones.
    HeadstatsError
        If ``limit`` is not a positive whole number.
    """
    path = Path(path)
    fmt = infer_format(path) if format is None else format
    if fmt not in INPUT_FORMATS:
        raise DataError(INPUT_FORMATS.unknown_message(fmt))
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise HeadstatsError(f"limit must be a positive whole number or None, got {limit!r}")
    check_data_file(path)
    records = INPUT_FORMATS.get(fmt).reader(path, limit=limit)
    if not records:
        raise DataError(
            f"no inputs in {os.fspath(path)!r} (read as {fmt}); the corpus is empty: add inputs, or name its format "
            "if it is not " + fmt + " (headstats list-formats)"
        )
    check_usable(records, repr(os.fspath(path)))
    _check_unique_ids(records, path)
    return records


def _check_unique_ids(records: list[Record], path: Path) -> None:
    shared = first_shared_id(records)
    if shared is not None:
        earlier, later, sentence_id = shared
        raise DataError(f"{os.fspath(path)}: records {earlier} and {later} (0-based) share the id {sentence_id!r}; "
                        "give every record its own id")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(1-based line number, line without its end-of-line)``; see :func:`~headstats.inputs.files.iter_lines`."""
    return iter_lines(path)


# --- plain text ------------------------------------------------------------------------------------------


def read_text(path: str | os.PathLike[str], *, limit: int | None = None) -> list[Record]:
    """Read plain text: one input per line, a TAB between the two sides of a pair.

    Blank lines (empty or only whitespace) are skipped and do not count: the ``sentence_id`` of an input is
    its 0-based index among the non-blank lines. ``#`` starts no comment. Each side is stripped of
    surrounding whitespace. A line of invisible characters only (zero-width spaces, a soft hyphen, ...) is
    no blank line but an empty input: it is read as a record, to be skipped with the reason ``"empty"``.

    Parameters
    ----------
    path : str or path-like
        The text file (UTF-8).
    limit : int, optional
        Stop after this many records.

    Returns
    -------
    list of Record

    Raises
    ------
    DataError
        If a line holds more than one TAB, or one side of a pair is empty or has no visible character (with
        the line number).
    """
    path = Path(path)
    records: list[Record] = []
    for number, line in _lines(path):
        if limit is not None and len(records) >= limit:
            break
        if not line.strip():
            continue
        sides = line.split("\t")
        if len(sides) > 2:
            raise DataError(
                f"{os.fspath(path)}, line {number}: {len(sides) - 1} TABs; a line holds one input, or two sides "
                "of a pair separated by one TAB"
            )
        sides = [side.strip() for side in sides]
        if len(sides) == 2 and not all(has_visible_text(side) for side in sides):
            raise DataError(
                f"{os.fspath(path)}, line {number}: one side of the pair is empty (no visible character); remove "
                "the TAB or add the missing side"
            )
        records.append(
            Record(
                sentence_id=str(len(records)),
                text_a=sides[0],
                text_b=sides[1] if len(sides) == 2 else None,
                meta={"line": number},
            )
        )
    return records


# --- JSONL -----------------------------------------------------------------------------------------------


def _optional_text(obj: dict, key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DataError(f"{where}: field {key!r} must be a string or a number, got {type(value).__name__}")
    return str(value)


def read_jsonl(path: str | os.PathLike[str], *, limit: int | None = None) -> list[Record]:
    """Read JSON Lines: one object per line with ``text_a`` and optional ``text_b``, ``id``, ``label``.

    Blank lines are skipped; ``sentence_id`` is ``id`` (as a string) when present, else the 0-based index
    of the record among the non-blank lines. Other fields are ignored.

    Parameters
    ----------
    path : str or path-like
        The JSONL file (UTF-8).
    limit : int, optional
        Stop after this many records.

    Returns
    -------
    list of Record

    Raises
    ------
    DataError
        If a line is not a JSON object, lacks a string ``text_a`` with a visible character (an empty or
        invisible ``text_a`` is an error here, as it always was), or has a ``text_b`` that is not such a
        string (with the line number).
    """
    path = Path(path)
    records: list[Record] = []
    for number, line in _lines(path):
        if limit is not None and len(records) >= limit:
            break
        if not line.strip():
            continue
        where = f"{os.fspath(path)}, line {number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"{where}: invalid JSON ({exc.msg}, column {exc.colno}); write one JSON object per line"
            ) from None
        except (ValueError, RecursionError) as exc:  # an integer of over 4300 digits; nesting too deep
            raise DataError(f"{where}: JSON that cannot be read ({exc}); write one flat JSON object per line") from None
        if not isinstance(obj, dict):
            raise DataError(f"{where}: expected a JSON object with 'text_a', got {type(obj).__name__}")
        text_a = obj.get("text_a")
        if not isinstance(text_a, str) or not has_visible_text(text_a):
            raise DataError(
                f"{where}: missing or empty 'text_a'; every line needs a string 'text_a' with a visible character"
            )
        text_b = obj.get("text_b")
        if text_b is not None and (not isinstance(text_b, str) or not has_visible_text(text_b)):
            raise DataError(
                f"{where}: 'text_b' must be a string with a visible character, or left out for a single input"
            )
        given_id = _optional_text(obj, "id", where)
        records.append(
            Record(
                sentence_id=given_id if given_id is not None else str(len(records)),
                text_a=text_a,
                text_b=text_b,
                label=_optional_text(obj, "label", where),
                meta={"line": number},
            )
        )
    return records


# --- GLUE TSV --------------------------------------------------------------------------------------------


def _read_glue(path: Path, *, limit: int | None = None) -> list[Record]:
    from headstats.inputs.glue import read_glue_tsv  # imported here: the GLUE reader is its own module

    records = read_glue_tsv(path, task=None)
    return list(records if limit is None else records[:limit])


register_format("text", read_text, extensions=[".txt"],
                description="one input per line; a tab separates the two sides of a pair")
register_format("jsonl", read_jsonl, extensions=[".jsonl"],
                description="one JSON object per line: text_a, optional text_b, id, label")
register_format("glue", _read_glue, extensions=[".tsv"], description="a GLUE task's TSV file (header row)")
register_format("conllu", read_conllu, extensions=[".conllu", ".conll"],
                description="Universal Dependencies CoNLL-U with gold parses")


def _read_wikitext_pairs(path: Path, *, limit: int | None = None) -> list[Record]:
    from headstats.inputs.wikitext import read_wikitext_pairs

    return read_wikitext_pairs(path, limit=limit)


register_format("wikitext_pairs", _read_wikitext_pairs, extensions=[".raw"],
                description="raw WikiText: pairs of consecutive paragraphs of one section (Clark et al. 2019)")
register_format("gum_coref", read_gum_coref,
                description="UD GUM CoNLL-U with Entity= coreference in MISC, joined into multi-sentence inputs")
register_format("gap", read_gap, description="GAP coreference TSV (pronoun, names A and B)")
