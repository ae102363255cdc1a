r"""Readers of coreference data for antecedent selection (Clark et al. 2019, section 4.3; METHODS 2.4).

Both formats produce ordinary :class:`~headstats.inputs.records.Record`\ s (so that every other analysis can
run on them) whose ``meta["coref"]`` lists the *queries*: a mention whose antecedent is to be selected, its
type, and its candidates with the gold answer and the two baselines' choices. Word indices refer to the
record's ``words_a``.

- ``gum_coref``: UD English GUM CoNLL-U with entity brackets in MISC (``Entity=(37-person-...``, closed by
  ``37)``; see ``shared/data/README.md``). Consecutive sentences of one document (``# newdoc id``) are joined
  into inputs of at most :data:`GUM_MAX_WORDS` words (antecedents must fall in the same input). A mention's
  head word is the word of its span whose head lies outside the span; its type is ``pronoun`` (UPOS PRON),
  ``proper`` (PROPN) or ``other``. Every mention with an earlier mention of the same entity in the input is
  a query; its candidates are the head words of every earlier mention (of any entity) whose head word
  differs from its own.
- ``gap``: GAP (Webster et al. 2018) TSV: a pronoun and two names A and B; the query is the pronoun (type
  ``pronoun``), the candidates are A and B (all their words), and rows where neither or both are
  coreferent are left out. The text is cut to the sentences from the first to the last of the three
  mentions, so that it fits a 128-piece model input. Words are split at spaces and punctuation and carry no
  parse (head -1).

Baselines stored with each query (candidate indices, or -1): ``nearest`` (the candidate closest before the
query; for GAP the nearer of A and B in characters) and ``same_head`` (the nearest earlier candidate whose
head word is the query's head word, lower-cased; -1 when there is none, which counts as wrong). The
rule-based sieve of the paper is not implemented.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Sequence
from pathlib import Path

from headstats.errors import DataError
from headstats.inputs.records import Record, Word
from headstats.inputs.conllu import read_conllu

#: Words per GUM input (consecutive sentences of one document are joined up to this many words).
GUM_MAX_WORDS = 80
MENTION_TYPES = ("pronoun", "proper", "other")


def parse_entity_field(value: str) -> tuple[list[str], list[str], list[str]]:
    """Entity ids opened, opened-and-closed on this word, and closed, from a GUM ``Entity=`` value.

    ``(3-abstract-new-...-coref`` opens 3; ``(37-person-...-ana)`` is a one-word mention of 37; ``3)``
    closes 3. Returns ``(opened, single, closed)`` in the order written.
    """
    opened, single, closed = [], [], []
    pos = 0
    while pos < len(value):
        if value[pos] == "(":
            end = pos + 1
            while end < len(value) and value[end] not in "()":
                end += 1
            ident = value[pos + 1:end].split("-")[0]
            if end < len(value) and value[end] == ")":
                single.append(ident)
                end += 1
            else:
                opened.append(ident)
            pos = end
        else:
            end = value.find(")", pos)
            if end < 0:
                break
            closed.append(value[pos:end])
            pos = end + 1
    return opened, single, closed


def _gum_sentences(path: Path) -> list[dict]:
    """Per sentence: document id, UPOS and MISC ``Entity`` value of every word (multiword ranges skipped)."""
    from conllu import parse_incr

    out, doc = [], ""
    with open(path, encoding="utf-8") as handle:
        for sentence in parse_incr(handle):
            doc = sentence.metadata.get("newdoc id", doc)
            words = [t for t in sentence if isinstance(t["id"], int)]
            out.append({"doc": doc, "upos": [t["upos"] for t in words],
                        "entity": [(t["misc"] or {}).get("Entity", "") for t in words],
                        "sent_id": sentence.metadata.get("sent_id")})
    return out


def _span_head(words: Sequence[Word], start: int, end: int) -> int:
    """The word of ``start..end`` (inclusive) whose head is outside the span (the first such word)."""
    for k in range(start, end + 1):
        if not start <= words[k].head <= end:
            return k
    return end


def _mention_type(upos: str) -> str:
    return {"PRON": "pronoun", "PROPN": "proper"}.get(upos, "other")


def _join(records: Sequence[Record]) -> tuple[str, list[Word]]:
    """One text and word list from consecutive sentences (offsets and heads shifted)."""
    text, words = "", []
    for rec in records:
        base, shift = len(text) + (1 if text else 0), len(words)
        text = f"{text} {rec.text_a}" if text else rec.text_a
        words += [Word(w.text, w.start + base, w.end + base, w.head + shift if w.head >= 0 else -1, w.deprel)
                  for w in rec.words_a or ()]
    return text, words


def _queries(words: Sequence[Word], mentions: list[tuple[int, int, str]], upos: Sequence[str]) -> list[dict]:
    """Queries of one GUM input: mentions ``(start, end, entity)`` sorted by start (module docstring)."""
    heads = [_span_head(words, s, e) for s, e, _ in mentions]
    out = []
    for k, (start, end, entity) in enumerate(mentions):
        head = heads[k]
        earlier = [j for j, (s, _, _) in enumerate(mentions) if s < start and heads[j] != head]
        if not any(mentions[j][2] == entity for j in earlier):
            continue
        earlier.sort(key=lambda j: (mentions[j][0], heads[j]))
        text = words[head].text.lower()
        candidates = [{"words": [heads[j]], "gold": mentions[j][2] == entity, "head_text": words[heads[j]].text.lower()}
                      for j in earlier]
        same = [i for i, c in enumerate(candidates) if c["head_text"] == text]
        out.append({"head": head, "type": _mention_type(upos[head]), "candidates": candidates,
                    "nearest": len(candidates) - 1, "same_head": same[-1] if same else -1})
    return out


def read_gum_coref(path: str | os.PathLike[str], *, limit: int | None = None,
                   max_words: int = GUM_MAX_WORDS) -> list[Record]:
    """Read GUM CoNLL-U into inputs of consecutive sentences with coreference queries (module docstring)."""
    path = Path(path)
    sentences = read_conllu(path)
    extra = _gum_sentences(path)
    if len(extra) != len(sentences):
        raise DataError(f"{os.fspath(path)}: {len(extra)} sentences with entity columns but {len(sentences)} "
                        "with parses; check the file is valid CoNLL-U")
    groups: list[list[int]] = []
    for k, info in enumerate(extra):
        n = len(sentences[k].words_a or ())
        last = groups[-1] if groups else None
        if last and extra[last[0]]["doc"] == info["doc"] and sum(len(sentences[j].words_a) for j in last) + n <= max_words:
            last.append(k)
        else:
            groups.append([k])
    records = []
    open_spans: dict[str, list[tuple[int, int]]] = {}
    for group in groups:
        if limit is not None and len(records) >= limit:
            break
        text, words = _join([sentences[k] for k in group])
        upos = [u for k in group for u in extra[k]["upos"]]
        entity = [e for k in group for e in extra[k]["entity"]]
        mentions: list[tuple[int, int, str]] = []
        open_spans = {}
        for w, value in enumerate(entity):
            opened, single, closed = parse_entity_field(value)
            for ident in opened:
                open_spans.setdefault(ident, []).append(w)
            for ident in single:
                mentions.append((w, w, ident))
            for ident in closed:
                if open_spans.get(ident):
                    mentions.append((open_spans[ident].pop(), w, ident))  # spans opened before the input: dropped
        mentions.sort(key=lambda m: (m[0], m[1]))
        first = sentences[group[0]]
        records.append(Record(sentence_id=f"{extra[group[0]]['doc']}/{first.sentence_id}", text_a=text,
                              words_a=tuple(words), meta={"coref": _queries(words, mentions, upos),
                                                           "line": first.meta.get("line")}))
    return records


_WORD = re.compile(r"\w+|[^\w\s]")


def _gap_window(text: str, spans: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """Character window from the start of the sentence of the first span to the end of that of the last."""
    lo, hi = min(s for s, _ in spans), max(e for _, e in spans)
    start = max(text.rfind(". ", 0, lo) + 2, 0) if text.rfind(". ", 0, lo) >= 0 else 0
    stop = text.find(". ", hi)
    return start, (len(text) if stop < 0 else stop + 1)


def read_gap(path: str | os.PathLike[str], *, limit: int | None = None) -> list[Record]:
    """Read GAP TSV into inputs whose one query is the pronoun and whose candidates are A and B."""
    path = Path(path)
    records = []
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        need = {"ID", "Text", "Pronoun", "Pronoun-offset", "A", "A-offset", "A-coref", "B", "B-offset", "B-coref"}
        if not need <= set(reader.fieldnames or ()):
            raise DataError(f"{os.fspath(path)}: not a GAP file (columns {sorted(need)} needed); give format: gap only "
                            "for GAP TSV files")
        for number, row in enumerate(reader, start=2):
            if limit is not None and len(records) >= limit:
                break
            gold = [row["A-coref"].upper() == "TRUE", row["B-coref"].upper() == "TRUE"]
            if sum(gold) != 1:
                continue
            text = row["Text"]
            spans = [(int(row[f"{k}-offset"]), int(row[f"{k}-offset"]) + len(row[k])) for k in ("Pronoun", "A", "B")]
            if any(text[s:e] != row[k] for (s, e), k in zip(spans, ("Pronoun", "A", "B"))):
                raise DataError(f"{os.fspath(path)}, line {number}: a mention's offset does not point at its text; "
                                "check the file is GAP TSV")
            start, stop = _gap_window(text, spans)
            cut = text[start:stop]
            words = tuple(Word(m.group(), m.start(), m.end(), -1, "dep") for m in _WORD.finditer(cut))
            covering = [[k for k, w in enumerate(words) if w.start < e - start and w.end > s - start] for s, e in spans]
            pronoun, a, b = covering
            distance = [abs(spans[0][0] - spans[i][0]) for i in (1, 2)]
            query = {"head": pronoun[0], "type": "pronoun",
                     "candidates": [{"words": a, "gold": gold[0], "head_text": row["A"].lower()},
                                    {"words": b, "gold": gold[1], "head_text": row["B"].lower()}],
                     "nearest": int(distance[1] < distance[0]), "same_head": -1}
            records.append(Record(sentence_id=row["ID"], text_a=cut, words_a=words,
                                  meta={"coref": [query], "line": number}))
    return records

