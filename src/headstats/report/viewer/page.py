"""The attention viewer as HTML: a fragment for a report or a notebook, or a whole page for ``headstats view``.

One file, nothing fetched: the script (``viewer.js``) and style (``viewer.css``) of this package are written
inline, the data (:mod:`headstats.report.viewer.payload`) as JSON in a ``<script type="application/json">``
with ``<``, ``>`` and ``&`` written as ``\\u003c``, ``\\u003e``, ``\\u0026`` (so that an input holding
``</script>`` or ``<!--`` cannot end the script or open a comment: :func:`safe_json`). Every text from the data
reaches the page through ``textContent``, never as markup.
"""

from __future__ import annotations

import html
import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

__all__ = ["AttentionView", "safe_json", "viewer_fragment", "viewer_page"]


def safe_json(data: object) -> str:
    """JSON that can sit inside a ``<script>`` element of HTML: ``<``, ``>`` and ``&`` as JSON escapes (still
    the same JSON to a parser), no NaN (written as null)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_plain)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _plain(value: object) -> object:
    import numpy as np

    if isinstance(value, np.generic):
        value = value.item()
        return None if isinstance(value, float) and value != value else value
    raise TypeError(f"{type(value).__name__} is not JSON")


@lru_cache(maxsize=None)
def _asset(name: str) -> str:
    return resources.files("headstats.report.viewer").joinpath(name).read_text(encoding="utf-8")


NOTE = ("Model view: every layer x head, lines from each query (left) to the keys it attends to (right), opacity = "
        "weight; click one for its head view. Head view: the colour key toggles heads (shift-click: only one); "
        "hover a piece to follow its lines. Matrix: the first chosen head as a heat map. Sieve: every head's sieve "
        "bias score on this input (mean over queries of the mean attention inside the sieve over the row's mean; "
        "1 = uniform; METHODS 1.2), for a role's sieve or for the pieces you click. Words: a word's row is the mean "
        "of its pieces' rows, its column the sum of their columns. The view is saved in the address (#...): copy it "
        "to reopen this view.")


def viewer_fragment(data: dict, *, element_id: str = "hs-viewer") -> str:
    """The viewer as an HTML fragment (a ``<div>`` with its style, data and script), for a page or a report."""
    safe_id = html.escape(element_id, quote=True)
    return (
        f"<div class='hs-viewer' id='{safe_id}'><style>{_asset('viewer.css')}</style>"
        "<div class='hs-bar'><label>input <select class='hs-input'></select></label>"
        "<button type='button' class='hs-mode' data-mode='model'>model view</button>"
        "<button type='button' class='hs-mode' data-mode='head'>head view</button>"
        "<button type='button' class='hs-mode' data-mode='matrix'>matrix</button>"
        "<button type='button' class='hs-mode' data-mode='sieve'>sieve</button>"
        "<label><input type='checkbox' class='hs-words'> words</label>"
        "<label class='hs-for-head'>layer <select class='hs-layer'></select></label>"
        "<span class='hs-for-head'>rows from <input type='number' min='0' class='hs-row0' value='0'> show "
        "<input type='number' min='0' class='hs-rows' value='0'> (0: all)</span>"
        "<label class='hs-for-sieve'>sieve <select class='hs-sieve'></select></label>"
        "<label class='hs-for-sieve'>scale <select class='hs-scale'><option value='bias'>bias score</option>"
        "<option value='share'>share of attention</option></select></label>"
        "<button type='button' class='hs-svg'>save SVG</button><button type='button' class='hs-png'>save PNG</button>"
        "</div><div class='hs-bar hs-key'></div>"
        "<div class='hs-main'><div class='hs-scroll'><svg class='hs-view' xmlns='http://www.w3.org/2000/svg'></svg>"
        "</div><div class='hs-info'></div></div>"
        f"<p class='hs-note'>{html.escape(NOTE)}</p>"
        f"<script type='application/json' class='hs-data'>{safe_json(data)}</script>"
        f"<script>{{const HS_ROOT_ID={safe_json(element_id)};\n{_asset('viewer.js')}}}</script></div>"
    )


def viewer_page(data: dict, *, title: str = "headstats view") -> str:
    """A whole HTML page holding the viewer (offline: nothing is fetched)."""
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title></head><body style='margin:12px'>"
            f"<h2 style='font-family:sans-serif;font-size:16px'>{html.escape(title)}</h2>"
            f"{viewer_fragment(data)}</body></html>")


class AttentionView:
    """The viewer of a few inputs, as ``hs.view`` returns it: ``.html`` (the page), ``.save(path)``, and shown
    inline in Jupyter (the page in an ``<iframe srcdoc>``, so that its script runs apart from the notebook's)."""

    def __init__(self, data: dict, *, title: str = "headstats view") -> None:
        self.data = data
        self.title = title
        self.html = viewer_page(data, title=title)

    def save(self, path: str | Path) -> Path:
        """Write the page (one offline HTML file) and return its path."""
        path = Path(path)
        path.write_text(self.html, encoding="utf-8")
        return path

    def _repr_html_(self) -> str:
        return (f"<iframe srcdoc='{html.escape(self.html, quote=True)}' style='width:100%;height:820px;border:0'"
                " sandbox='allow-scripts allow-downloads'></iframe>")

    def __repr__(self) -> str:
        d = self.data
        lengths = ", ".join(str(len(v["tokens"])) for v in d["inputs"])
        stats = "; with the statistics of " + d["stats"]["where"] if d.get("stats") else ""
        return (f"AttentionView: {len(d['inputs'])} input(s) of {lengths} pieces, {d['model']} "
                f"({d['n_layers']} layers x {d['n_heads']} heads), measure {d['measure']}{stats}; "
                f"{len(self.html) / 1e6:.2f} MB of HTML (.save(path) writes it)")
