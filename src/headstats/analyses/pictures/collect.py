r"""Pictures of attention: which heads best show each BertViz pattern, and their maps on a few inputs (METHODS 3).

BertViz (Vig 2019) names six patterns a reader can see in one head's attention on one input. Each is read
off a surface measure (:mod:`headstats.analyses.surface.collect`), averaged over *every* input of the data set:

| pattern | measure (per input, averaged over queries) |
|---|---|
| ``next_word`` | ``next``: mass on the next piece |
| ``previous_word`` | ``prev``: mass on the previous piece |
| ``identical_words`` | ``same_token``: mass on other positions holding the query's own piece |
| ``same_word_other_sentence`` | ``same_token_other``: the same, keys in the other sentence of a pair only |
| ``delimiters`` | ``cls + sep``: mass on [CLS] and [SEP] |
| ``broad`` | ``entropy_ratio``: row entropy over ln n |

The gallery takes, per pattern, the head with the largest mean, and shows it on the kept input where that
head's value of the measure is largest. Only a few inputs' maps are ever held (options
``analysis_options.pictures``, :class:`PicturesOptions`): the first
``n_inputs`` inputs of at most ``max_pieces`` pieces (the shortest ones when none is that short), or those
named in ``sentence_ids``; every other input only adds to the running means. A longer input is drawn on at
most ``max_pieces`` of its pieces, the first of each sentence (:func:`shown_positions`; weights to pieces not
drawn are left out). At the end, the maps of the chosen heads on their inputs (and of ``heads`` on the first
kept input), and the weights of at least :data:`VIEW_FLOOR` of every other head on every kept input (for the
interactive view), become long tables, so the report draws them (heat map, line view, the interactive view) from tables alone:

- ``gallery``: ``model, dataset, pattern, measure, layer, head, mean, strength, weak, sentence_id, value``
  (``weak``: even the best head's mean is below the pattern's stated ``strength``, :data:`GALLERY_STRENGTH`; the
  report labels such an example weak rather than showing it as the pattern);
- ``attention_maps``: ``model, dataset, sentence_id, layer, head, query, key, weight`` (positions drawn);
- ``attention_tokens``: ``model, dataset, sentence_id, position, token, segment, special``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from headstats.analyses import collector_options
from headstats.analyses.pictures.options import PicturesOptions
from headstats.analyses.pictures.tables import ATTENTION_MAPS, ATTENTION_TOKENS, GALLERY
from headstats.analyses.surface.options import SURFACE_MEASURES
from headstats.analyses.surface.collect import context_punctuation_ids, context_tokenizer, surface_of
from headstats.engine.batch import BatchView
from headstats.engine.collector import Collector, Context, Moments


#: pattern -> the surface measures whose sum reads it.
PATTERNS: dict[str, tuple[str, ...]] = {
    "next_word": ("next",),
    "previous_word": ("prev",),
    "identical_words": ("same_token",),
    "same_word_other_sentence": ("same_token_other",),
    "delimiters": ("cls", "sep"),
    "broad": ("entropy_ratio",),
}
#: pattern -> the mean a head must reach to be a gallery example of it, not a weak one: more than half its
#: attention on the pattern's keys (as "attends mostly to" in Clark et al. and the dominant behaviour of
#: :func:`headstats.analyses.surface.collect.dominant_behaviour`); broad: entropy at least 0.75 of ln n (the clustering
#: option ``broad_share``'s default).
GALLERY_STRENGTH: dict[str, float] = {"next_word": 0.5, "previous_word": 0.5, "identical_words": 0.5,
                                      "same_word_other_sentence": 0.5, "delimiters": 0.5, "broad": 0.75}
#: Lightest weight kept for the interactive view's heads beyond the gallery's (the view draws no lighter line).
VIEW_FLOOR = 0.01
GALLERY_COLUMNS = ["model", "dataset", "pattern", "measure", "layer", "head", "mean", "strength", "weak",
                   "sentence_id", "value"]
MAP_COLUMNS = ["model", "dataset", "sentence_id", "layer", "head", "query", "key", "weight"]
TOKEN_COLUMNS = ["model", "dataset", "sentence_id", "position", "token", "segment", "special"]


@dataclass
class KeptInput:
    """One input whose maps are kept: every head's map over its real positions and its surface measures."""

    index: int
    sentence_id: str
    maps: np.ndarray  # (L, H, n, n) float32
    input_ids: np.ndarray
    segment: np.ndarray
    special: np.ndarray
    surface: np.ndarray  # (L, H, M)

    @property
    def length(self) -> int:
        return int(self.maps.shape[-1])


@dataclass
class PicturesState:
    surface: Moments
    kept: list[KeptInput] = field(default_factory=list)


def pattern_values(surface: np.ndarray, pattern: str) -> np.ndarray:
    """(..., M) surface values -> (...) the pattern's value (the sum of its measures)."""
    idx = [SURFACE_MEASURES.index(m) for m in PATTERNS[pattern]]
    return surface[..., idx].sum(-1)


def shown_positions(segment: np.ndarray, max_pieces: int) -> np.ndarray:
    """Positions drawn for an input: all when it has at most ``max_pieces``; else the first half of them from
    sentence A and the rest from the start of sentence B (so both sentences of a pair stay in the picture)."""
    segment = np.asarray(segment)
    n = segment.size
    if n <= max_pieces:
        return np.arange(n)
    a, b = np.flatnonzero(segment == 0), np.flatnonzero(segment != 0)
    if b.size == 0:
        return np.arange(max_pieces)
    take_b = min(b.size, max_pieces // 2)
    take_a = min(a.size, max_pieces - take_b)
    take_b = min(b.size, max_pieces - take_a)
    return np.concatenate([a[:take_a], b[:take_b]])


class AttentionPictures(Collector):
    """Keeps the maps of a few inputs and the running surface means that choose the gallery's heads."""

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        options = context.options
        mine: PicturesOptions = collector_options(context, PicturesOptions)

        def option(name):
            return getattr(mine, name)

        self.n_inputs = int(option("n_inputs"))
        self.max_pieces = int(option("max_pieces"))
        ids = option("sentence_ids")
        self.sentence_ids = None if ids is None else [str(i) for i in ids]
        self.heads = [tuple(int(x) for x in h) for h in option("heads")]
        self._punct = options.get("punct_ids")
        self._tokens = options.get("tokens")  # optional callable ids -> tokens (tests)
        self._tokenizer: Any = None
        self._state = PicturesState(Moments.zeros((context.n_layers, context.n_heads, len(SURFACE_MEASURES))))

    @property
    def punct_ids(self) -> tuple[int, ...]:
        if self._punct is None:
            self._punct = context_punctuation_ids(self.context)
        return tuple(self._punct)

    def _key(self, sentence_id: str, index: int, length: int) -> tuple:
        """Order of preference of the inputs to keep: those named first, else the first that fit
        ``max_pieces``, then the shortest."""
        if self.sentence_ids is not None:
            return (self.sentence_ids.index(sentence_id), index)
        too_long = length > self.max_pieces
        return (too_long, length if too_long else 0, index)

    def _rank(self, item: KeptInput) -> tuple:
        return self._key(item.sentence_id, item.index, item.length)

    def update(self, view: BatchView) -> None:
        surface = surface_of(view, self.punct_ids).cpu().numpy()
        self._state.surface.add(surface)
        kept = self._state.kept
        # the batch's inputs that would be kept, chosen before any map is copied (at most n_inputs copies)
        candidates = [(self._key(item.sentence_id, int(item.index), item.length), b)
                      for b, item in enumerate(view.inputs)
                      if self.sentence_ids is None or item.sentence_id in self.sentence_ids]
        chosen = sorted(candidates)[: self.n_inputs]
        if len(kept) >= self.n_inputs:
            worst = max(self._rank(k) for k in kept)
            chosen = [(key, b) for key, b in chosen if key < worst]
        for _, b in chosen:
            item = view.inputs[b]
            n = item.length
            kept.append(KeptInput(int(item.index), item.sentence_id,
                                  view.attention[b, :, :, :n, :n].detach().cpu().numpy().astype(np.float32),
                                  np.asarray(item.input_ids), np.asarray(item.segment), np.asarray(item.special),
                                  surface[b].astype(np.float32)))
        kept.sort(key=self._rank)
        del kept[self.n_inputs:]

    @classmethod
    def merge(cls, states: Sequence[PicturesState]) -> PicturesState:
        kept = [k for s in states for k in s.kept]
        return PicturesState(Moments.combine([s.surface for s in states]), kept)

    def load_state(self, state: PicturesState) -> None:
        state.kept.sort(key=self._rank)
        del state.kept[self.n_inputs:]
        self._state = state

    def gallery(self) -> pd.DataFrame:
        """Per pattern, the head with the largest mean over inputs and the kept input that shows it best."""
        ctx, s = self.context, self._state
        means = s.surface.mean_or_nan
        rows = []
        for pattern, measures in PATTERNS.items():
            values = pattern_values(means, pattern)
            if not np.isfinite(values).any() or not s.kept:
                continue
            layer, head = np.unravel_index(int(np.nanargmax(values)), values.shape)
            per_input = np.array([pattern_values(k.surface[layer, head], pattern) for k in s.kept], dtype=float)
            if not np.isfinite(per_input).any():
                continue
            best = s.kept[int(np.nanargmax(per_input))]
            mean, strength = float(values[layer, head]), GALLERY_STRENGTH[pattern]
            rows.append((ctx.model, ctx.dataset, pattern, "+".join(measures), int(layer), int(head), mean,
                         strength, bool(mean < strength), best.sentence_id, float(np.nanmax(per_input))))
        return pd.DataFrame(rows, columns=GALLERY_COLUMNS)

    def _token_strings(self, ids: np.ndarray) -> list[str]:
        if self._tokens is not None:
            return list(self._tokens(ids))
        if self._tokenizer is None:  # read once per collector (after the pass: loaded from the model's folder)
            self._tokenizer = context_tokenizer(self.context) or False
        tokenizer = self._tokenizer
        if not tokenizer:
            return [str(i) for i in ids]
        return list(tokenizer.convert_ids_to_tokens([int(i) for i in ids]))

    def tables(self) -> dict[str, pd.DataFrame]:
        """``gallery``, ``attention_maps`` and ``attention_tokens`` (see the module docstring)."""
        ctx, s = self.context, self._state
        gallery = self.gallery()
        wanted = [(r.sentence_id, r.layer, r.head) for r in gallery.itertuples()]
        if s.kept:
            wanted += [(s.kept[0].sentence_id, layer, head) for layer, head in self.heads
                       if 0 <= layer < ctx.n_layers and 0 <= head < ctx.n_heads]
        wanted = list(dict.fromkeys(wanted))
        by_id = {k.sentence_id: k for k in s.kept}
        maps, tokens = [], []
        for sid, layer, head in wanted:
            item = by_id[sid]
            shown = shown_positions(item.segment, self.max_pieces)
            q, k = np.meshgrid(shown, shown, indexing="ij")
            maps.append(pd.DataFrame({"model": ctx.model, "dataset": ctx.dataset, "sentence_id": sid,
                                      "layer": layer, "head": head, "query": q.ravel(), "key": k.ravel(),
                                      "weight": item.maps[layer, head][np.ix_(shown, shown)].ravel().astype(np.float64)}))
        # every other head of every kept input, for the interactive view (any layer and head, or all heads of a
        # layer): its weights of at least VIEW_FLOOR only (the view draws no lighter line), so the table stays small
        drawn = set(wanted)
        for item in s.kept:
            shown = shown_positions(item.segment, self.max_pieces)
            block = item.maps[:, :, shown][:, :, :, shown]  # (L, H, n, n)
            layer, head, qi, ki = np.nonzero(block >= VIEW_FLOOR)
            keep = np.array([(item.sentence_id, int(a), int(b)) not in drawn for a, b in zip(layer, head)], bool)
            if keep.any():
                maps.append(pd.DataFrame({"model": ctx.model, "dataset": ctx.dataset, "sentence_id": item.sentence_id,
                                          "layer": layer[keep], "head": head[keep], "query": shown[qi[keep]],
                                          "key": shown[ki[keep]],
                                          "weight": block[layer[keep], head[keep], qi[keep], ki[keep]].astype(np.float64)}))
            wanted.append((item.sentence_id, -1, -1))
        for sid in dict.fromkeys(w[0] for w in wanted):
            item = by_id[sid]
            shown = shown_positions(item.segment, self.max_pieces)
            tokens.append(pd.DataFrame({"model": ctx.model, "dataset": ctx.dataset, "sentence_id": sid,
                                        "position": shown,
                                        "token": self._token_strings(item.input_ids[shown]),
                                        "segment": item.segment[shown].astype(int),
                                        "special": item.special[shown].astype(bool)}))
        maps_frame = pd.concat(maps, ignore_index=True) if maps else pd.DataFrame(columns=MAP_COLUMNS)
        token_frame = pd.concat(tokens, ignore_index=True) if tokens else pd.DataFrame(columns=TOKEN_COLUMNS)
        return {GALLERY.name: gallery, ATTENTION_MAPS.name: maps_frame[MAP_COLUMNS],
                ATTENTION_TOKENS.name: token_frame[TOKEN_COLUMNS]}


