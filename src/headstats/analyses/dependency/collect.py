r"""Dependency relations in single heads (Clark et al. 2019, section 4.2 and Table 1; METHODS 2.3).

On the word-level attention of every input (:meth:`headstats.engine.batch.BatchView.word_attention`,
METHODS 2.2) a head's prediction for a word is the other word it attends to most: the diagonal is zeroed,
[CLS], [SEP] and other special units are dropped, and the argmax is taken (ties: the lowest index, as
``numpy.argmax``). Two directions are tried:

- ``dependent_to_head``: the prediction for dependent d is ``argmax_j W[d, j]`` (the dependent's row);
- ``head_to_dependent``: the prediction for d is ``argmax_i W[i, d]``, the word that attends most to d.

The accuracy of a head for relation r is the share of words with relation r whose prediction is their gold
head. The baseline predicts, for every word, the word at a fixed offset ``i + o`` (``o`` in -3..+2 without 0,
which is the word itself; clipped to the sentence's words). Root words have no head word and are not
counted; ``all`` counts every other word, punctuation included, and ``all_nopunct`` leaves out ``punct``.

Labels: UD relations read from CoNLL-U are stored in headstats' canonical set (UD ``obj`` is ``dobj``,
``nmod:poss`` is ``poss``; :func:`headstats.inputs.parsing.canonical_relation`). With ``labels: base`` (the
default, the paper's "subtype stripped") the passive and other subtype names fold back into their base
(``nsubjpass`` -> ``nsubj``, ``auxpass`` -> ``aux``, ``relcl`` -> ``acl``, ...); ``dobj``, ``poss``,
``dative`` (UD ``iobj``) and ``npadvmod`` keep their canonical names, so the table shows ``dobj`` where UD
writes ``obj``. ``labels: canonical`` keeps every canonical name.

What the collector keeps (no attention): per relation and per half of the data (inputs of even and odd
position in the file), the number of words, the number each (layer, head, direction) gets right, the number
each offset gets right, and for every (head, direction, offset) the words only the head gets right and the
words only the offset gets right (the discordant pairs of a paired exact test), and per sentence the sums and
the histogram of ``|d_s|`` (``d_s``: words the head gets right minus words the offset gets right) that give the
sign-flip test over sentences its law (:mod:`headstats.stats.signflip`). The halves make an honest
test possible: the best head and offset are chosen on the even half and tested on the odd half
(``selection: split``); the Table 1 numbers (best on all words, as in the paper) are given beside them. The
tests, confidence intervals and correction over relations are added by the study's ``finish`` step
(:func:`headstats.analyses.dependency.finish.finish_dependency`).

Tables: ``dependency_heads`` (``model, dataset, relation, layer, head, direction, n, accuracy``) and the
counts behind ``dependency_table`` (see :meth:`DependencyAccuracy.tables`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from headstats.analyses import collector_options
from headstats.analyses.dependency.options import DependencyOptions
from headstats.analyses.dependency.tables import DEPENDENCY_COUNTS, DEPENDENCY_HEADS, DEPENDENCY_NOTES
from headstats.engine.batch import BatchView
from headstats.engine.collector import Collector, Context, abs_histogram, add_histograms
from headstats.lazy import torch


#: The two ways a head can point a word at its head (METHODS 2.3).
DIRECTIONS = ("dependent_to_head", "head_to_dependent")
#: Canonical names that fold into their base with ``labels: base`` (UD subtype stripped, METHODS 2.3).
BASE_LABELS = {"nsubjpass": "nsubj", "csubjpass": "csubj", "auxpass": "aux", "relcl": "acl", "prt": "compound",
               "predet": "det", "preconj": "cc"}
#: The two pooled rows: every non-root word, and every non-root word but punctuation.
ALL, ALL_NOPUNCT = "all", "all_nopunct"
#: The halves of the data: inputs of even position choose, those of odd position test.
HALVES = ("choose", "test")


def relation_label(relation: str, labels: str = "base") -> str:
    """The label a relation is counted under (see the module docstring)."""
    return BASE_LABELS.get(relation, relation) if labels == "base" else relation


def head_predictions(word_attn: torch.Tensor, candidates: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Predicted head unit of every unit, in both directions, shape (B, L, H, U) each.

    Parameters
    ----------
    word_attn : Tensor (B, L, H, U, U)
        Word-level attention.
    candidates : bool Tensor (B, U)
        Units that may be predicted (words: not special, not padded).

    Returns
    -------
    dependent_to_head, head_to_dependent : Tensor (B, L, H, U) of int64
        ``argmax_{j != d, j candidate} W[d, j]`` and ``argmax_{i != d, i candidate} W[i, d]``; ties go to the
        lowest index.
    """
    U = word_attn.shape[-1]
    eye = torch.eye(U, dtype=torch.bool, device=word_attn.device)
    # rows: key j of query d blocked when j == d or j is no candidate; columns: query i of key d likewise
    rows = word_attn.masked_fill((eye[None] | ~candidates[:, None, :])[:, None, None], float("-inf"))
    cols = word_attn.masked_fill((eye[None] | ~candidates[:, :, None])[:, None, None], float("-inf"))
    return _first_argmax(rows, -1), _first_argmax(cols, -2)


def _first_argmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """argmax over ``dim``, the lowest index among ties (``torch.argmax`` returns the first maximal value)."""
    return torch.argmax(scores, dim=dim)


def _per_sentence(sentence: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Sums of ``values`` (arcs first) per sentence (``sentence``: 0..S-1 per arc)."""
    out = np.zeros((int(sentence.max()) + 1, *values.shape[1:]), dtype=values.dtype)
    np.add.at(out, sentence, values)
    return out


def offset_predictions(textual: np.ndarray, offsets: Sequence[int]) -> np.ndarray:
    """For units of text in order (``textual``: unit indices), the unit at each offset, clipped: (len, O)."""
    m = len(textual)
    rank = np.arange(m)[:, None] + np.asarray(offsets)[None, :]
    return textual[np.clip(rank, 0, m - 1)]


def _zero_filled(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The frames of every relation in one table; the counts of ``|d| = m`` that a relation has no column for
    (its largest ``|d|`` is smaller) are 0."""
    if not frames:
        return pd.DataFrame()
    table = pd.concat(frames, ignore_index=True)
    absd = [c for c in table.columns if c.startswith("absd")]
    table[absd] = table[absd].fillna(0).astype(np.int64)
    return table


class DependencyAccuracy(Collector):
    """Counts of words each head and each offset attach correctly, per relation and half (module docstring)."""

    #: 2: the counts of ``|d_s|`` reach :data:`~headstats.engine.collector.SIGNFLIP_MAX_ABS` (64; 4 before).
    version = "2"

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.options: DependencyOptions = collector_options(context, DependencyOptions)
        self._state = {"relations": {}, "notes": {"same_unit": 0, "no_pieces": 0},
                       "offsets": list(self.options.offsets)}

    def _cell(self, relation: str, where: str = "relations") -> dict[str, np.ndarray]:
        rel = self._state.setdefault(where, {})
        if relation not in rel:
            L, H, O = self.context.n_layers, self.context.n_heads, len(self.options.offsets)
            rel[relation] = {"n": np.zeros(2, np.int64), "head": np.zeros((2, L, H, 2), np.int64),
                             "offset": np.zeros((2, O), np.int64), "head_only": np.zeros((2, L, H, 2, O), np.int64),
                             "offset_only": np.zeros((2, L, H, 2, O), np.int64),
                             # per sentence s (the unit of the tests, METHODS 5.3): sentences, the sums over
                             # sentences of d_s^2 (d_s = words the head gets right - words the offset gets right),
                             # of c_s^2 and c_s n_s (c_s words right of n_s) for the clustered intervals
                             "n_sentences": np.zeros(2, np.int64), "d2": np.zeros((2, L, H, 2, O), np.int64),
                             # the sentences with |d_s| = m, m = 1..K (K: the largest |d_s| seen, at most
                             # SIGNFLIP_MAX_ABS): the sign-flip law of the test (headstats.stats.signflip)
                             "absd": np.zeros((2, 0, L, H, 2, O), np.int64),
                             "head_c2": np.zeros((2, L, H, 2), np.int64), "head_cn": np.zeros((2, L, H, 2), np.int64),
                             "offset_c2": np.zeros((2, O), np.int64), "offset_cn": np.zeros((2, O), np.int64),
                             "nn": np.zeros(2, np.int64)}
        return rel[relation]

    def update(self, view: BatchView) -> None:
        units = view.word_units
        arcs = self._arcs(view)
        if not arcs:
            return
        attn = view.word_attention(self.options.from_word)
        textual = units.textual
        to_head, to_dep = head_predictions(attn, textual)
        b, d, h, rel, half = (np.array(x) for x in zip(*arcs))
        bt, dt = torch.from_numpy(b), torch.from_numpy(d)
        right = torch.stack([to_head.permute(0, 3, 1, 2)[bt, dt], to_dep.permute(0, 3, 1, 2)[bt, dt]], -1)
        head_right = (right == torch.from_numpy(h)[:, None, None, None]).cpu().numpy()  # (A, L, H, 2)
        offset_right = np.zeros((len(b), len(self.options.offsets)), dtype=bool)
        textual_np = textual.cpu().numpy()
        for row in np.unique(b):
            words = np.flatnonzero(textual_np[row])
            predicted = offset_predictions(words, self.options.offsets)  # (m, O)
            rank = {u: k for k, u in enumerate(words)}
            mine = np.flatnonzero(b == row)
            offset_right[mine] = predicted[[rank[u] for u in d[mine]]] == h[mine, None]
        self._add(rel, half, head_right, offset_right, b)

    def _arcs(self, view: BatchView) -> list[tuple[int, int, int, str, int]]:
        """``(row, dependent unit, head unit, label, half)`` of every arc whose ends are different units."""
        units = view.word_units
        out = []
        for row, item in enumerate(view.inputs):
            unit = units.unit_of_piece[row]
            for arc in item.arcs:
                if not arc.dependent or not arc.head:
                    self._state["notes"]["no_pieces"] += 1
                    continue
                dep, head = int(unit[arc.dependent[0]]), int(unit[arc.head[0]])
                if dep == head:
                    self._state["notes"]["same_unit"] += 1  # both words of one multiword token
                    continue
                out.append((row, dep, head, relation_label(arc.relation, self.options.labels), item.index % 2))
        return out

    def _add(self, rel: np.ndarray, half: np.ndarray, head_right: np.ndarray, offset_right: np.ndarray,
             rows: np.ndarray) -> None:
        """Add a batch's arcs (``rows``: the input of each arc, the sentence) to their relation's cell and to the
        pooled cells ``all`` and ``all_nopunct`` (pooled per sentence, so their sums of squares are right)."""
        groups = [(str(r), rel == r, "relations") for r in np.unique(rel)]
        groups += [(ALL, np.ones(len(rel), bool), "pooled"), (ALL_NOPUNCT, rel != "punct", "pooled")]
        for relation, of_relation, where in groups:
            for k in (0, 1):
                sel = of_relation & (half == k)
                if not sel.any():
                    continue
                cell = self._cell(relation, where)
                hr, orr = head_right[sel], offset_right[sel]
                cell["n"][k] += int(sel.sum())
                cell["head"][k] += hr.sum(0)
                cell["offset"][k] += orr.sum(0)
                hr_f, or_f = hr.astype(np.int64), orr.astype(np.int64)
                cell["head_only"][k] += np.einsum("alhd,ao->lhdo", hr_f, 1 - or_f)
                cell["offset_only"][k] += np.einsum("alhd,ao->lhdo", 1 - hr_f, or_f)
                _, sentence = np.unique(rows[sel], return_inverse=True)
                n_s = np.bincount(sentence)
                c_head, c_offset = _per_sentence(sentence, hr_f), _per_sentence(sentence, or_f)
                d = c_head[..., None] - c_offset[:, None, None, None, :]  # (S, L, H, 2, O)
                cell["n_sentences"][k] += len(n_s)
                cell["d2"][k] += np.einsum("slhdo,slhdo->lhdo", d, d)
                histogram = abs_histogram(d)  # (K, L, H, 2, O), K = the batch's largest |d_s|
                counted = np.zeros((2, *histogram.shape), np.int64)
                counted[k] = histogram
                cell["absd"] = add_histograms(cell["absd"], counted, axis=1)
                cell["head_c2"][k] += np.einsum("slhd,slhd->lhd", c_head, c_head)
                cell["head_cn"][k] += np.einsum("slhd,s->lhd", c_head, n_s)
                cell["offset_c2"][k] += np.einsum("so,so->o", c_offset, c_offset)
                cell["offset_cn"][k] += np.einsum("so,s->o", c_offset, n_s)
                cell["nn"][k] += int((n_s * n_s).sum())

    @classmethod
    def merge(cls, states: Sequence[dict]) -> dict:
        out: dict[str, Any] = {"relations": {}, "pooled": {}, "notes": {}, "offsets": states[0]["offsets"]}
        for s in states:
            for key, value in s["notes"].items():
                out["notes"][key] = out["notes"].get(key, 0) + value
            for where in ("relations", "pooled"):
                for relation, cell in s.get(where, {}).items():
                    if relation not in out[where]:
                        out[where][relation] = {k: v.copy() for k, v in cell.items()}
                    else:
                        mine = out[where][relation]
                        for k, v in cell.items():
                            if k == "absd":  # histograms of |d| as long as each state's largest |d|
                                mine[k] = add_histograms(mine[k], v, axis=1)
                            else:
                                mine[k] += v
        return out

    def pooled(self) -> dict[str, dict[str, np.ndarray]]:
        """The per-relation counts with the pooled rows ``all`` and ``all_nopunct`` first (counted per sentence
        over the arcs of every relation, so their sums of squares over sentences are the pooled ones)."""
        cells = dict(sorted(self._state["relations"].items()))
        if not cells:
            return {}
        pooled = self._state.get("pooled", {})
        return {**{name: pooled[name] for name in (ALL, ALL_NOPUNCT) if name in pooled}, **cells}

    def tables(self) -> dict[str, pd.DataFrame]:
        """``dependency_heads``: ``model, dataset, relation, layer, head, direction, n, accuracy, correct``
        (all words); ``dependency_counts``: per relation, head, direction and offset, the words of each half,
        what each gets right and the discordant counts (the input of the tests; see
        :func:`headstats.analyses.dependency.finish.finish_dependency`)."""
        ctx = self.context
        L, H = ctx.n_layers, ctx.n_heads
        offsets = self._state["offsets"]
        heads, counts = [], []
        layer, head, direction = np.meshgrid(np.arange(L), np.arange(H), np.arange(2), indexing="ij")
        for relation, cell in self.pooled().items():
            n = int(cell["n"].sum())
            correct = cell["head"].sum(0)
            heads.append(pd.DataFrame({
                "model": ctx.model, "dataset": ctx.dataset, "relation": relation, "layer": layer.ravel(),
                "head": head.ravel(), "direction": np.array(DIRECTIONS)[direction.ravel()], "n": n,
                "accuracy": correct.ravel() / n if n else np.nan, "correct": correct.ravel(),
                "n_sentences": int(cell["n_sentences"].sum()), "c2": cell["head_c2"].sum(0).ravel(),
                "cn": cell["head_cn"].sum(0).ravel(), "nn": int(cell["nn"].sum())}))
            frame = {"model": ctx.model, "dataset": ctx.dataset, "relation": relation}
            lo, ho, do, oo = np.meshgrid(np.arange(L), np.arange(H), np.arange(2), np.arange(len(offsets)),
                                         indexing="ij")
            frame |= {"layer": lo.ravel(), "head": ho.ravel(), "direction": np.array(DIRECTIONS)[do.ravel()],
                      "offset": np.asarray(offsets)[oo.ravel()]}
            for k, half in enumerate(HALVES):
                frame[f"n_{half}"] = int(cell["n"][k])
                frame[f"head_correct_{half}"] = np.broadcast_to(cell["head"][k][..., None], lo.shape).ravel()
                frame[f"offset_correct_{half}"] = np.broadcast_to(cell["offset"][k], lo.shape).ravel()
                frame[f"head_only_{half}"] = cell["head_only"][k].ravel()
                frame[f"offset_only_{half}"] = cell["offset_only"][k].ravel()
                frame[f"n_sentences_{half}"] = int(cell["n_sentences"][k])
                frame[f"d2_{half}"] = cell["d2"][k].ravel()
                for m in range(1, cell["absd"].shape[1] + 1 if "absd" in cell else 1):
                    frame[f"absd{m}_{half}"] = cell["absd"][k, m - 1].ravel()
                frame[f"head_c2_{half}"] = np.broadcast_to(cell["head_c2"][k][..., None], lo.shape).ravel()
                frame[f"head_cn_{half}"] = np.broadcast_to(cell["head_cn"][k][..., None], lo.shape).ravel()
                frame[f"offset_c2_{half}"] = np.broadcast_to(cell["offset_c2"][k], lo.shape).ravel()
                frame[f"offset_cn_{half}"] = np.broadcast_to(cell["offset_cn"][k], lo.shape).ravel()
                frame[f"nn_{half}"] = int(cell["nn"][k])
            counts.append(pd.DataFrame(frame))
        columns = ["model", "dataset", "relation", "layer", "head", "direction", "n", "accuracy", "correct"]
        out = {DEPENDENCY_HEADS.name: pd.concat(heads, ignore_index=True) if heads else pd.DataFrame(columns=columns),
               DEPENDENCY_COUNTS.name: _zero_filled(counts)}
        notes = {"model": ctx.model, "dataset": ctx.dataset, **self._state["notes"]}
        out[DEPENDENCY_NOTES.name] = pd.DataFrame([notes])
        return out


