"""The viewer inside a run's report: the ``pictures`` analysis' kept inputs (``attention_maps``,
``attention_tokens``), linked to the run's statistics read from the folder the report is built in (each head's
roles, tau, claims, the stored per-input scores of these inputs and the run's inputs where each head scores
highest: :mod:`headstats.report.viewer.stats`).

The maps of a report hold the weights of at least 0.01 only (all of them for the gallery's heads), cut to the
pieces drawn; so a role's sieve grid shows the run's stored per-input scores of the input (what the tests used),
and a sieve of pieces the reader picks is computed from the drawn weights and called approximate.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from headstats.errors import HeadstatsError
from headstats.report.viewer.page import viewer_fragment
from headstats.report.viewer.payload import viewer_data
from headstats.report.viewer.stats import run_stats, stored_scores
from headstats.study.viewing import ViewInput, word_of_pieces

__all__ = ["report_viewers"]


def _kept_input(tok: pd.DataFrame, maps: pd.DataFrame, n_layers: int, n_heads: int) -> ViewInput:
    tok = tok.sort_values("position")
    where = pd.Index(tok["position"].to_numpy(int))
    n = len(tok)
    dense = np.zeros((n_layers, n_heads, n, n), np.float32)
    dense[maps["layer"].to_numpy(int), maps["head"].to_numpy(int), where.get_indexer(maps["query"].to_numpy(int)),
          where.get_indexer(maps["key"].to_numpy(int))] = maps["weight"].to_numpy(float)
    tokens = tok["token"].astype(str).tolist()
    special = tok["special"].to_numpy(bool)
    cls = special & (np.arange(n) == 0)
    return ViewInput(sentence_id=str(tok["sentence_id"].iloc[0]), tokens=tokens,
                     segment=tok["segment"].to_numpy(int), special=special, cls=cls, sep=special & ~cls,
                     word=word_of_pieces(tokens, special), maps=dense, is_pair=bool((tok["segment"] != 0).any()))


def report_viewers(root: Path, gallery: pd.DataFrame, maps: pd.DataFrame, tokens: pd.DataFrame
                   ) -> list[tuple[str, str, str]]:
    """One viewer per (model, data set) of the kept inputs: ``(model, dataset, html fragment)``. The statistics
    come from ``root`` when it holds the run's tables (a report built without them shows the attention alone)."""
    out = []
    for (model, dataset), tok in tokens.groupby(["model", "dataset"], sort=False):
        part = maps[(maps["model"] == model) & (maps["dataset"] == dataset)]
        if part.empty:
            continue
        n_layers, n_heads = int(part["layer"].max()) + 1, int(part["head"].max()) + 1
        by_id = [(str(sid), t) for sid, t in tok.groupby(tok["sentence_id"].astype(str), sort=False)]
        inputs = [_kept_input(t, part[part["sentence_id"].astype(str) == sid], n_layers, n_heads) for sid, t in by_id]
        try:
            stats, protocol = run_stats(root, model=str(model), dataset=str(dataset))
            scoring = protocol.scoring
            stored = [{role: grid for role, grid in s.items() if role in stats["tau"]}
                      for s in stored_scores(root, str(model), str(dataset), [v.sentence_id for v in inputs],
                                             n_layers, n_heads)]
        except HeadstatsError:  # tables alone (a section drawn on its own): the attention without statistics
            stats, scoring, stored = None, None, None
        first = gallery[(gallery["model"] == model) & (gallery["dataset"] == dataset)]
        start = ({"mode": "head", "layer": int(first["layer"].iloc[0]), "heads": [int(first["head"].iloc[0])],
                  "input": [v.sentence_id for v in inputs].index(str(first["sentence_id"].iloc[0]))}
                 if len(first) and str(first["sentence_id"].iloc[0]) in [v.sentence_id for v in inputs] else None)
        data = viewer_data(inputs, model=str(model), window=scoring.window if scoring else 2,
                           count_special_queries=scoring.count_special_queries if scoring else True, stats=stats,
                           start=start, sums=False, stored=stored,
                           labels=[f"{dataset}: input #{v.sentence_id}" for v in inputs])
        out.append((str(model), str(dataset), viewer_fragment(data, element_id=re.sub(r"[^\w-]", "_", f"hs-viewer-{model}-{dataset}"))))
    return out
