"""The attention of a few ad-hoc inputs, for ``headstats view`` and ``hs.view``: one forward pass through the engine.

:func:`view_inputs` encodes the records and runs the model once through :class:`~headstats.engine.runner.Runner`
(the encoding, batching and forward pass of every score: never another attention), with one collector,
:class:`ViewMaps`, that keeps every input's maps, ``(L, H, n, n)`` float32 over its real pieces, with its pieces,
segments and words. Meant for a handful of inputs (the page draws each one): :data:`MOST_INPUTS` at most.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from headstats.engine.batch import BatchView
from headstats.engine.collector import Collector, Context
from headstats.errors import DataError
from headstats.inputs.records import Record
from headstats.model.loading import LoadedModel
from headstats.model.tokenizers import WORD_START_MARKERS
from headstats.registry import Registry

__all__ = ["MOST_INPUTS", "VIEW_MEASURES", "ViewInput", "ViewMaps", "ViewMeasure", "view_inputs", "word_of_pieces"]

#: The most inputs one page holds (each adds its maps to the page: see the viewer's size notes).
MOST_INPUTS = 50


@dataclass
class ViewInput:
    """One input as the viewer draws it.

    Attributes
    ----------
    sentence_id : str
    tokens : list of str
        The n pieces, as the tokenizer writes them.
    segment, special, cls, sep : ndarray (n,)
        Sentence (0 = A, 1 = B) and special / [CLS] / [SEP] flags of every piece.
    word : ndarray (n,) int
        The word of every piece (0, 1, ...): a special piece is a word of its own.
    maps : ndarray (L, H, n, n) float32
        ``maps[l, h, i, j]``: weight of key j in the row of query i (the model's softmax, as the scores see it).
    is_pair, truncated : bool
    """

    sentence_id: str
    tokens: list[str]
    segment: np.ndarray
    special: np.ndarray
    cls: np.ndarray
    sep: np.ndarray
    word: np.ndarray
    maps: np.ndarray
    is_pair: bool = False
    truncated: bool = False
    text: str = ""

    @property
    def length(self) -> int:
        return len(self.tokens)


def word_of_pieces(tokens: Sequence[str], special: Sequence[bool],
                   word_pieces: Sequence[Sequence[int]] = ()) -> np.ndarray:
    """The word of every piece: from the aligned words when the input was parsed (``word_pieces``), else from
    the pieces' own marks: WordPiece continues a word with ``##``; byte-level BPE and SentencePiece start one with
    ``Ġ`` or ``▁`` (:data:`~headstats.model.tokenizers.WORD_START_MARKERS`). A special piece is a word of its own."""
    n = len(tokens)
    starts = np.ones(n, bool)
    if word_pieces:
        starts[:] = True
        for pieces in word_pieces:
            for p in sorted(pieces)[1:]:
                if p < n:
                    starts[p] = False
    else:
        marked = any(t[:1] in WORD_START_MARKERS for t in tokens)
        for i, t in enumerate(tokens):
            if i == 0 or special[i] or special[i - 1]:
                continue
            starts[i] = (t[:1] in WORD_START_MARKERS) if marked else not t.startswith("##")
    starts |= np.asarray(special, bool)
    return np.cumsum(starts) - 1


@dataclass(frozen=True)
class ViewMeasure:
    """What the viewer draws per head: ``maps(view, b)`` gives input ``b``'s ``(L, H, n, n)`` array of the batch
    view, rows summing to 1 (queries down, keys across); ``description`` is what ``--measure`` lists."""

    description: str
    maps: Callable[[BatchView, int], np.ndarray]


def _weights(view: BatchView, b: int) -> np.ndarray:
    n = view.inputs[b].length
    return view.attention[b, :, :, :n, :n].detach().cpu().numpy().astype(np.float32)


#: The measures ``headstats view --measure`` draws (one today: the attention weights).
VIEW_MEASURES: Registry[ViewMeasure] = Registry("view measure", hint="headstats view --measure")
VIEW_MEASURES.register("weights", ViewMeasure("the attention weights (the softmax of each head), as the scores use",
                                              _weights))


class ViewMaps(Collector):
    """Keeps the maps of every input it sees (few inputs: the viewer's), in data-set order; options:
    ``measure`` (a :data:`VIEW_MEASURES` name, default ``weights``)."""

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.measure = VIEW_MEASURES.get(str(context.options.get("measure", "weights")))
        self._state: dict[int, tuple] = {}

    def update(self, view: BatchView) -> None:
        for b, item in enumerate(view.inputs):
            self._state[int(item.index)] = (item, self.measure.maps(view, b))

    @classmethod
    def merge(cls, states):
        out: dict = {}
        for s in states:
            out.update(s)
        return out

    def tables(self) -> dict:
        return {}


def view_inputs(loaded: LoadedModel, records: Sequence[Record], *, max_length: int | None = None,
                batch_size: int = 8, measure: str = "weights") -> list[ViewInput]:
    """Every record's attention in one forward pass of ``loaded`` (the engine's), as :class:`ViewInput`.

    Inputs longer than ``max_length`` pieces (default and most: the model's maximum) are truncated
    (``truncated`` says so). Raises :class:`~headstats.errors.DataError` when no record gives an input, or
    when there are more than :data:`MOST_INPUTS`.
    """
    from headstats.engine.runner import Job, Runner

    records = list(records)
    if not records:
        raise DataError("nothing to view: give a text, or a data file with at least one input")
    if len(records) > MOST_INPUTS:
        raise DataError(f"{len(records)} inputs is more than one page holds ({MOST_INPUTS}); give --limit N")
    VIEW_MEASURES.get(measure)  # an unknown measure is refused before the pass
    most = loaded.max_input_length
    max_length = most if max_length is None else min(int(max_length), most)
    job = Job(ViewMaps, (loaded.name,), "view", {"measure": measure}, name="view")
    Runner(batch_size=batch_size, max_length=max_length, too_long="truncate").run(
        lambda name: loaded, {"view": records}, [job])
    kept = job.collector.state()
    if not kept:
        raise DataError("no input to view: every text was empty or gave no word piece")
    tokenizer = loaded.tokenizer
    out = []
    for index in sorted(kept):
        item, maps = kept[index]
        tokens = list(tokenizer.convert_ids_to_tokens([int(i) for i in item.input_ids]))
        record = records[index]
        text = record.text_a if record.text_b is None else f"{record.text_a} / {record.text_b}"
        out.append(ViewInput(
            sentence_id=str(item.sentence_id), tokens=tokens, segment=np.asarray(item.segment, int),
            special=np.asarray(item.special, bool), cls=np.asarray(item.cls, bool), sep=np.asarray(item.sep, bool),
            word=word_of_pieces(tokens, item.special, item.word_pieces), maps=maps, is_pair=bool(item.is_pair),
            truncated=bool(item.truncated), text=text))
    return out

