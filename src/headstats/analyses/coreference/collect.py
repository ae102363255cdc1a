r"""Coreference: antecedent selection by single heads (Clark et al. 2019, section 4.3; METHODS 2.4).

For every query mention of an input (``meta["coref"]`` of the readers ``gum_coref`` and ``gap``,
:mod:`headstats.inputs.coref`), on word-level attention W (METHODS 2.2), a head selects the candidate its
query's head word attends to most,

    pred(q) = argmax_c  sum_{w in words(c)} W[head(q), w]       (ties: the first candidate),

(GUM candidates are head words, GAP candidates the words of a name). The head is right when the selected
candidate is coreferent with the query. Accuracy per mention type (``pronoun``, ``proper``, ``other``, and
``all``) and per (layer, head) is set against two baselines computed from the data: the nearest candidate
(``nearest_mention``) and the nearest candidate with the same head word (``same_head_word``; a query with no
such candidate counts as wrong). Queries whose head word or gold candidates lost their pieces (truncation)
are left out and counted.

Table ``coreference``: ``model, dataset, mention_type, predictor, layer, head, n, accuracy, correct``;
``predictor`` is ``head`` (one row per layer and head) or a baseline (layer and head empty); head rows also
hold the discordant counts against each baseline (``only_vs_<baseline>``: queries only the head gets right,
``<baseline>_only``: only the baseline) and, with the input as the cluster (its mentions share its text),
the sums over inputs of ``d = head_only - baseline_only`` and of ``d^2`` (``sum_d_vs_<baseline>``,
``sum_d2_vs_<baseline>``) and the inputs with ``|d| = m`` (``absd_vs_<baseline>_<m>``, m = 1 to the largest
``|d|``, at most :data:`~headstats.engine.collector.SIGNFLIP_MAX_ABS`). The study's finish step adds Wilson
intervals (``ci_low``, ``ci_high``) and ``coreference_tests``: every head against each baseline, one-sided, by
the sign-flip test over inputs (:func:`headstats.stats.signflip.signflip_pvalues`: binomial, exact, Monte Carlo
or normal, named in ``method``; McNemar's exact test on mentions only for states without the sums), corrected
over the heads of one (model, dataset, mention type, baseline); every head is tested, so no selection inflates
the test. A baseline right on no query or on every one (GAP's same head
word: no name shares a pronoun's head word) is flagged and never tested.

Paper (BERT-base, CoNLL-2012): head 5-4 (1-based), 65 % overall; nearest mention 27 %, same head word 52 %,
rule-based sieve 69 % (not implemented here).
"""

from __future__ import annotations

from functools import lru_cache, reduce
from typing import Sequence

import numpy as np
import pandas as pd

from headstats.analyses.coreference.tables import COREFERENCE, COREFERENCE_NOTES
from headstats.engine.batch import BatchView
from headstats.engine.collector import Collector, Context, abs_histogram, add_histograms
from headstats.lazy import torch


#: Mention types, plus the pooled ``all``.
TYPES = ("pronoun", "proper", "other", "all")
#: Baselines stored by the readers with every query.
BASELINES = {"nearest_mention": "nearest", "same_head_word": "same_head"}


@lru_cache(maxsize=4)
def _queries_of_file(path: str, format: str | None, limit: int | None) -> dict[str, list[dict]]:
    from headstats.inputs.readers import read_records

    return {r.sentence_id: list(r.meta.get("coref", ())) for r in read_records(path, format=format, limit=limit)}


def queries_for(context: Context) -> dict[str, list[dict]]:
    """Sentence id -> coreference queries: ``options["queries"]`` if given, else read again from the data set's
    file that the study names in ``options["source"]`` (``path``, ``format``, ``limit``; the engine carries no
    record metadata); empty for a data set without them."""
    if "queries" in context.options:
        return dict(context.options["queries"])
    source = context.options.get("source") or {}
    if source.get("path") is None:
        return {}
    return _queries_of_file(str(source["path"]), source.get("format"), source.get("limit"))


class AntecedentSelection(Collector):
    """Counts of queries each head and each baseline gets right, per mention type."""

    #: 2: the counts of ``|d|`` reach :data:`~headstats.engine.collector.SIGNFLIP_MAX_ABS` (64; 4 before).
    version = "2"

    #: It reads its data set's file again (the queries): the study names it in ``options["source"]``, which is
    #: part of its cache key (with the file's sha256).
    reads_source = True

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.queries = queries_for(context)
        shape = (len(TYPES), context.n_layers, context.n_heads)
        self._state = {"n": np.zeros(len(TYPES), np.int64), "head": np.zeros(shape, np.int64),
                       "baselines": {b: np.zeros(len(TYPES), np.int64) for b in BASELINES},
                       "head_only": {b: np.zeros(shape, np.int64) for b in BASELINES},
                       "baseline_only": {b: np.zeros(shape, np.int64) for b in BASELINES},
                       # per input (sentence or document chunk): d = head_only - baseline_only; sums of d and d^2
                       "sum_d": {b: np.zeros(shape, np.float64) for b in BASELINES},
                       "sum_d2": {b: np.zeros(shape, np.float64) for b in BASELINES},
                       # inputs with |d| = m, m = 1..K (K: the largest |d| seen, at most SIGNFLIP_MAX_ABS): the
                       # sign-flip law of the test (headstats.stats.signflip)
                       "absd": {b: np.zeros((0, *shape), np.int64) for b in BASELINES},
                       "dropped": 0}

    def update(self, view: BatchView) -> None:
        units = view.word_units
        attn = None
        for row, item in enumerate(view.inputs):
            queries = self.queries.get(item.sentence_id)
            if not queries:
                continue
            if attn is None:
                attn = view.word_attention("mean")
            unit = units.unit_of_word[row]
            before = {b: self._state["head_only"][b] - self._state["baseline_only"][b] for b in BASELINES}
            for query in queries:
                self._one(attn[row], unit, query)
            for b in BASELINES:  # the input is the cluster: its mentions share its text
                d = (self._state["head_only"][b] - self._state["baseline_only"][b] - before[b]).astype(np.float64)
                self._state["sum_d"][b] += d
                self._state["sum_d2"][b] += d * d
                self._state["absd"][b] = add_histograms(self._state["absd"][b], abs_histogram(d[None]))

    def _one(self, attn: torch.Tensor, unit: np.ndarray, query: dict) -> None:
        q = int(unit[query["head"]]) if query["head"] < len(unit) else -1
        targets = [[int(unit[w]) for w in c["words"] if w < len(unit) and unit[w] >= 0 and unit[w] != q]
                   for c in query["candidates"]]
        gold = np.array([c["gold"] for c in query["candidates"]], dtype=bool)
        if q < 0 or not any(t for t, g in zip(targets, gold) if g):
            self._state["dropped"] += 1
            return
        scores = torch.stack([attn[:, :, q, t].sum(-1) if t else torch.full(attn.shape[:2], float("-inf"))
                              for t in targets], -1)  # (L, H, C)
        best = scores.max(-1, keepdim=True).values
        index = torch.arange(scores.shape[-1]).expand_as(scores)
        pred = torch.where(scores == best, index, scores.shape[-1]).min(-1).values.numpy()
        right = gold[pred]
        for k in (TYPES.index(query["type"]), TYPES.index("all")):
            self._state["n"][k] += 1
            self._state["head"][k] += right
            for name, key in BASELINES.items():
                choice = query[key]
                base = bool(choice >= 0 and gold[choice])
                self._state["baselines"][name][k] += int(base)
                self._state["head_only"][name][k] += right & (not base)
                self._state["baseline_only"][name][k] += (~right) & base

    @classmethod
    def merge(cls, states: Sequence[dict]) -> dict:
        return {"n": sum(s["n"] for s in states), "head": sum(s["head"] for s in states),
                "baselines": {b: sum(s["baselines"][b] for s in states) for b in BASELINES},
                "head_only": {b: sum(s["head_only"][b] for s in states) for b in BASELINES},
                "baseline_only": {b: sum(s["baseline_only"][b] for s in states) for b in BASELINES},
                **({key: {b: sum(s[key][b] for s in states) for b in BASELINES} for key in ("sum_d", "sum_d2")}
                   if all("sum_d" in s for s in states) else {}),
                **({"absd": {b: reduce(add_histograms, [s["absd"][b] for s in states]) for b in BASELINES}}
                   if all("absd" in s for s in states) else {}),
                "dropped": sum(s["dropped"] for s in states)}

    def tables(self) -> dict[str, pd.DataFrame]:
        ctx, s = self.context, self._state
        frames = []
        for k, kind in enumerate(TYPES):
            n = int(s["n"][k])
            heads = ctx.head_frame(model=ctx.model, dataset=ctx.dataset, mention_type=kind, predictor="head",
                                   n=n, accuracy=s["head"][k] / n if n else np.full(s["head"][k].shape, np.nan),
                                   correct=s["head"][k])
            for name in BASELINES:
                heads[f"only_vs_{name}"] = s["head_only"][name][k].ravel()
                heads[f"{name}_only"] = s["baseline_only"][name][k].ravel()
                if "sum_d" in s:  # a state cached before the sums were kept: McNemar on mentions only
                    heads[f"sum_d_vs_{name}"] = s["sum_d"][name][k].ravel()
                    heads[f"sum_d2_vs_{name}"] = s["sum_d2"][name][k].ravel()
                for m in range(1, len(s["absd"][name]) + 1 if "absd" in s else 1):
                    heads[f"absd_vs_{name}_{m}"] = s["absd"][name][m - 1][k].ravel()
            frames.append(heads)
            for name in BASELINES:
                c = int(s["baselines"][name][k])
                frames.append(pd.DataFrame([{"model": ctx.model, "dataset": ctx.dataset, "mention_type": kind,
                                             "predictor": name, "layer": pd.NA, "head": pd.NA, "n": n,
                                             "accuracy": c / n if n else np.nan, "correct": c}]))
        table = pd.concat(frames, ignore_index=True)
        first = ["model", "dataset", "mention_type", "predictor", "layer", "head", "n", "accuracy", "correct"]
        table = table[first + [c for c in table.columns if c not in first]]
        table["layer"] = table["layer"].astype("Int64")
        table["head"] = table["head"].astype("Int64")
        notes = pd.DataFrame([{"model": ctx.model, "dataset": ctx.dataset, "queries_dropped": s["dropped"]}])
        return {COREFERENCE.name: table, COREFERENCE_NOTES.name: notes}


