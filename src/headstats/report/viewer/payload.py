r"""The data of the attention viewer's page: every input's pieces, its heads' maps for drawing, and the sums its
sieve grid needs, exactly.

Per input (:func:`input_payload`):

- ``tokens``, ``segment``, ``special``, ``cls``, ``sep``, ``word`` (the word of each piece), ``is_pair``;
- ``data``: every head's map for drawing, the bytes (zlib, base64: :func:`packed`) of
  :func:`pack_explorer_weights` in base64 (a weight as ``round(255 w)``, those
  under 0.0098 left out: the views draw no lighter line), ``width`` bytes per position;
- ``sieve_data``: float32 (little-endian; zlib, base64), per layer, head and kind of ``sieve_kinds`` a row of n
  values, with :math:`m_i = \frac1n \sum_{j<n} A_{ij}` the row mean of query i (METHODS 1.2):

  - ``loc``: :math:`\sum_{|i-j| \le w} A_{ij} / m_i` for every query i (the local window, w = ``window``);
  - ``col``: :math:`\sum_{i \in Q} A_{ij} / m_i` for every key j, Q the counted queries (all real pieces, or
    the non-special ones when ``count_special_queries`` is false);
  - ``blk`` (pairs only): :math:`\sum_{j \in B(i)} A_{ij} / m_i`, B(i) the non-special pieces of i's sentence.

  From these the page's script computes every head's sieve bias score exactly as
  :func:`headstats.analyses.sieves.score_and_ceilings` does: ``local`` is the mean over Q of
  ``loc[i] / |S(i)|``; a sieve of the same keys K for every query (``delimiter``, ``delimiter_cls``,
  ``delimiter_sep``, or the pieces the reader selects) is ``sum_{j in K} col[j] / (|K| |Q|)``; ``block`` the
  mean over Q of ``blk[i] / |B(i)|``.

Size: the drawing bytes grow with the weights of at least 0.0098 (2 bytes each, ``n <= 255``; 3 beyond, plus a
count per row: ``L H n (1 + 2k)`` for k such weights per row), the sieve sums with ``4 L H n (2 + pair)`` bytes;
zlib takes the drawing bytes to about half and the sums to about 0.9, base64 adds a third. :data:`SIZE_NOTE`
gives measured figures.
"""

from __future__ import annotations

import base64
import zlib
from typing import Mapping, Sequence

import numpy as np

from headstats.study.viewing import ViewInput

__all__ = ["SIZE_NOTE", "input_payload", "pack_explorer_weights", "packed", "sieve_sums", "viewer_data"]

#: Measured (tests/report/test_viewer.py prints it): see docs/guide.md, "Look at any sentence".
SIZE_NOTE = ("3 inputs of 128 pieces on the default model (6 x 12 heads): about 1.0 MB of page; each input of 128 "
             "pieces adds about 0.23 MB of drawing bytes and 0.09 MB of sieve sums (0.13 MB for a pair); the drawing "
             "bytes grow with the weights of at least 0.01 per row (at most n, so at most as n^2), the sieve sums as n.")


def sieve_sums(maps: np.ndarray, segment: np.ndarray, special: np.ndarray, *, window: int,
               count_special_queries: bool = True, is_pair: bool = False) -> tuple[list[str], np.ndarray]:
    """The sums of the module docstring: (kinds, float32 array (L, H, kinds, n)).

    ``maps`` (L, H, n, n) over the n real pieces of one input (rows of the model's softmax).
    """
    a = np.asarray(maps, dtype=np.float64)
    n = a.shape[-1]
    ratio = a / a.mean(-1, keepdims=True)  # A[i, j] / m_i
    idx = np.arange(n)
    local = np.abs(idx[:, None] - idx[None, :]) <= window
    queries = np.ones(n, bool) if count_special_queries else ~np.asarray(special, bool)
    kinds = ["loc", "col"]
    rows = [(ratio * local).sum(-1), (ratio * queries[:, None]).sum(-2)]
    if is_pair:
        seg = np.asarray(segment)
        block = (seg[:, None] == seg[None, :]) & ~np.asarray(special, bool)[None, :]
        kinds.append("blk")
        rows.append((ratio * block).sum(-1))
    return kinds, np.stack(rows, axis=2).astype(np.float32)


def input_payload(item: ViewInput, *, label: str, window: int, count_special_queries: bool = True,
                  sums: bool = True, stored: dict | None = None) -> dict:
    """One input's entry of the page's data (module docstring). ``sums=False`` for maps that lack weights (a
    report's kept inputs: weights under 0.01 left out), whose sieves the page then computes from the drawn weights
    and calls approximate; ``stored``: role -> the run's per-input scores of the L x H heads (layer-major), which the
    page's grid shows for that role."""
    L, H, n, _ = item.maps.shape
    layer, head, q, k = np.nonzero(np.rint(np.clip(item.maps, 0, 1) * 255) >= EXPLORER_MIN_STEP)
    weights = {}
    if layer.size:
        cut = np.flatnonzero(np.diff(layer * H + head)) + 1
        for part in np.split(np.arange(layer.size), cut):
            first = part[0]
            weights[(int(layer[first]), int(head[first]))] = (q[part], k[part], item.maps[layer[part], head[part],
                                                                                            q[part], k[part]])
    data, width = pack_explorer_weights(weights, n, n_layers=L, n_heads=H)
    kinds, values = sieve_sums(item.maps, item.segment, item.special, window=window,
                               count_special_queries=count_special_queries, is_pair=item.is_pair) if sums \
        else ([], np.zeros(0, np.float32))
    return {
        "label": label, "sentence_id": item.sentence_id, "text": item.text, "truncated": item.truncated,
        "tokens": [str(t) for t in item.tokens], "segment": [int(s) for s in item.segment],
        "special": [bool(s) for s in item.special], "cls": [bool(s) for s in item.cls],
        "sep": [bool(s) for s in item.sep], "word": [int(w) for w in item.word], "is_pair": bool(item.is_pair),
        "width": width, "data": packed(data), "sieve_kinds": kinds,
        "sieve_data": packed(values.astype("<f4").tobytes()),
        "stored": {role: [None if not np.isfinite(x) else float(x) for x in np.asarray(v, float).ravel()]
                   for role, v in (stored or {}).items()},
    }


def packed(data: bytes) -> str:
    """Bytes as the page holds them: zlib-compressed (the browser's ``DecompressionStream("deflate")`` unpacks
    them), then base64."""
    return base64.b64encode(zlib.compress(data, 9)).decode("ascii")


def short_label(index: int, item: ViewInput, most: int = 60) -> str:
    """The input's name in the page's menu: its number and the start of its text."""
    text = " ".join(item.text.split()) or " ".join(item.tokens)
    text = text if len(text) <= most else text[: most - 1] + "…"
    return f"{index + 1}: {text}" + (" (truncated)" if item.truncated else "")


def viewer_data(inputs: Sequence[ViewInput], *, model: str, measure: str = "weights", window: int = 2,
                count_special_queries: bool = True, stats: dict | None = None, start: dict | None = None,
                sums: bool = True, stored: Sequence[dict] | None = None, labels: Sequence[str] | None = None) -> dict:
    """The whole page's data: the inputs (:func:`input_payload`, with ``sums``, each its ``stored`` scores and
    ``labels``), the model's shape, the scoring settings the sieve grid uses, the run's statistics
    (:mod:`headstats.report.viewer.stats`) and the view to open (``start``: e.g. ``{"mode": "head", "layer": 0,
    "heads": [2]}``)."""
    if not inputs:
        raise ValueError("the viewer needs at least one input")
    L, H = inputs[0].maps.shape[:2]
    return {
        "model": str(model), "measure": str(measure), "n_layers": int(L), "n_heads": int(H), "window": int(window),
        "count_special_queries": bool(count_special_queries),
        "inputs": [input_payload(item, label=labels[k] if labels else short_label(k, item), window=window,
                                 count_special_queries=count_special_queries, sums=sums,
                                 stored=stored[k] if stored else None) for k, item in enumerate(inputs)],
        "stats": stats, "start": start or {},
    }


#: The smallest weight the explorer stores, in steps of 1/255: weights with round(255 w) < 3 (w < 0.0098) are left
#: out, since the view draws no line under 0.01.
EXPLORER_MIN_STEP = 3


def pack_explorer_weights(weights: Mapping[tuple[int, int], tuple], n: int, *, n_layers: int,
                          n_heads: int) -> tuple[bytes, int]:
    """Every head's attention on one input of ``n`` pieces as compact bytes for the interactive view.

    Parameters
    ----------
    weights : mapping
        ``(layer, head) -> (query, key, weight)`` arrays of positions 0..n-1; a head left out has no weight.
    n : int
        The input's number of pieces.
    n_layers, n_heads : int
        The model's shape: heads are stored in the order layer 0 head 0, layer 0 head 1, ...

    Returns
    -------
    data : bytes
        Per head: ``n`` counts (the stored weights of each query row), then the keys of those weights row by
        row in key order, then their weights as bytes ``round(255 w)`` (step 1/255, so within 1/510 of the
        weight); weights with ``round(255 w) < 3`` are left out.
    width : int
        Bytes per count and key: 1 when ``n <= 255``, else 2 (little-endian).
    """
    width = 1 if n <= 255 else 2
    dtype = np.dtype("u1") if width == 1 else np.dtype("<u2")
    parts = []
    for layer in range(n_layers):
        for head in range(n_heads):
            qs, ks, ws = weights.get((layer, head), ((), (), ()))
            w = np.rint(np.clip(np.asarray(ws, float), 0, 1) * 255).astype(int)
            keep = w >= EXPLORER_MIN_STEP
            q, k, w = np.asarray(qs, int)[keep], np.asarray(ks, int)[keep], w[keep]
            order = np.lexsort((k, q))
            parts += [np.bincount(q, minlength=n).astype(dtype).tobytes(), k[order].astype(dtype).tobytes(),
                      w[order].astype(np.uint8).tobytes()]
    return b"".join(parts), width
