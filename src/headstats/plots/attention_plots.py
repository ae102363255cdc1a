"""Pictures of one head's attention on one input: a heat map, a BertViz-style line view, and an offline
interactive view for the HTML report.

Inputs are plain arrays: ``weights`` (n, n) with ``weights[i, j]`` the weight of key j in query i's row, and
the n piece strings. The interactive view is a self-contained fragment of HTML, SVG and inline JavaScript (no
library, no network): choose a head and input, hover a token on the left to see where it attends, on the
right to see what attends to it. BertViz (Vig 2019) draws the same views but fetches d3 from the network.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import html  # noqa: E402
import json  # noqa: E402
from collections.abc import Sequence  # noqa: E402

import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from headstats.plots import style  # noqa: E402

#: Lines lighter than this are not drawn in the line view (they would be invisible anyway).
MIN_LINE_WEIGHT = 0.01
LINE_COLOUR = "#0072B2"


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize)
    return fig, fig.add_subplot()


def _check(weights: np.ndarray, tokens: Sequence[str]) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or w.shape[0] != len(tokens):
        raise ValueError(f"weights must be (n, n) with n = {len(tokens)} tokens, got {w.shape}")
    return w


@style.styled
def attention_heatmap(weights: np.ndarray, tokens: Sequence[str], *, title: str = "", ax: Axes | None = None
                      ) -> Figure:
    """Heat map of one head's map: queries down, keys across, the pieces as tick labels."""
    w = _check(weights, tokens)
    n = len(tokens)
    size = min(max(3.0, 0.12 * n + 1.2), 14.0)
    fig, ax = _axes(ax, (size + 0.8, size))
    image = ax.imshow(w, cmap=style.SEQUENTIAL_CMAP, vmin=0.0, vmax=max(float(w.max()), 1e-9),
                      interpolation="nearest")
    font = 7 if n <= 40 else (5 if n <= 80 else 3.5)
    ax.set_xticks(np.arange(n), list(tokens), rotation=90, fontsize=font)
    ax.set_yticks(np.arange(n), list(tokens), fontsize=font)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.spines[:].set_visible(False)
    fig.colorbar(image, ax=ax, fraction=0.04, label="attention weight")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


@style.styled
def line_view(weights: np.ndarray, tokens: Sequence[str], *, title: str = "", segment: Sequence[int] | None = None,
              ax: Axes | None = None) -> Figure:
    """BertViz-style lines from each query (left) to each key (right), opacity = weight.

    Lines under :data:`MIN_LINE_WEIGHT` are left out. ``segment`` (0/1 per piece) greys sentence B's labels,
    so that attention between the sentences of a pair is easy to see.
    """
    w = _check(weights, tokens)
    n = len(tokens)
    fig, ax = _axes(ax, (3.6, min(max(2.0, 0.14 * n + 0.8), 24.0)))
    font = 7 if n <= 40 else (5.5 if n <= 80 else 4.5)
    seg = np.zeros(n, int) if segment is None else np.asarray(segment, int)
    for i, j in zip(*np.nonzero(w >= MIN_LINE_WEIGHT)):
        ax.plot([0.0, 1.0], [-i, -j], color=LINE_COLOUR, alpha=float(min(w[i, j], 1.0)), lw=1.2,
                solid_capstyle="butt")
    for i, token in enumerate(tokens):
        colour = style.EDGE if seg[i] == 0 else style.OKABE_ITO["vermillion"]
        ax.text(-0.04, -i, token, ha="right", va="center", fontsize=font, color=colour)
        ax.text(1.04, -i, token, ha="left", va="center", fontsize=font, color=colour)
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(-n + 0.5, 0.5)
    ax.axis("off")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


_VIEW_JS = r"""
(function(){
const root=document.getElementById('%(id)s');const data=JSON.parse(root.querySelector('script[type="application/json"]').textContent);
const sel=root.querySelector('select');const svg=root.querySelector('svg');const NS='http://www.w3.org/2000/svg';
data.views.forEach((v,k)=>{const o=document.createElement('option');o.value=k;o.textContent=v.label;sel.appendChild(o);});
function el(t,a){const e=document.createElementNS(NS,t);for(const k in a)e.setAttribute(k,a[k]);return e;}
function draw(){const v=data.views[+sel.value];const n=v.tokens.length;const h=16,top=10,xl=150,xr=330;
 svg.innerHTML='';svg.setAttribute('height',top*2+n*h);root.querySelector('.hs-caption').textContent=v.caption||'';
 const lines=[];
 for(let i=0;i<n;i++)for(let j=0;j<n;j++){const w=v.weights[i][j];if(w<0.01)continue;
  const l=el('line',{x1:xl,y1:top+i*h+h/2,x2:xr,y2:top+j*h+h/2,stroke:'#0072B2','stroke-width':2,'stroke-opacity':w});
  l.dataset.q=i;l.dataset.k=j;l.dataset.w=w;svg.appendChild(l);lines.push(l);}
 function show(kind,idx){lines.forEach(l=>{const on=idx===null||l.dataset[kind]==idx;l.setAttribute('stroke-opacity',on?l.dataset.w:0);});}
 for(let i=0;i<n;i++){[[xl-6,'end','q'],[xr+6,'start','k']].forEach(([x,anchor,kind])=>{
  const t=el('text',{x:x,y:top+i*h+h/2+4,'text-anchor':anchor,'font-size':12,'font-family':'sans-serif',
   fill:v.segment[i]?'#D55E00':'#333',style:'cursor:pointer'});t.textContent=v.tokens[i];
  t.addEventListener('mouseenter',()=>show(kind,i));t.addEventListener('mouseleave',()=>show(kind,null));svg.appendChild(t);});}
}
sel.addEventListener('change',draw);draw();})();
"""


def interactive_view_html(views: Sequence[dict], *, element_id: str = "hs-attention-view") -> str:
    """A self-contained HTML fragment (inline SVG and JavaScript, no network) to browse attention line views.

    Parameters
    ----------
    views : sequence of dict
        Each with ``label`` (shown in the menu), ``tokens`` (n strings), ``weights`` ((n, n) array),
        optional ``segment`` (0/1 per piece) and ``caption``.
    element_id : str
        The id of the fragment's root element (unique within the page).
    """
    payload = []
    for v in views:
        w = _check(v["weights"], v["tokens"])
        payload.append({"label": str(v["label"]), "caption": str(v.get("caption", "")),
                        "tokens": [str(t) for t in v["tokens"]],
                        "segment": [int(s) for s in (v.get("segment") if v.get("segment") is not None
                                                     else np.zeros(len(v["tokens"]), int))],
                        "weights": np.round(w, 3).tolist()})
    data = json.dumps({"views": payload}, separators=(",", ":")).replace("</", "<\\/")
    safe_id = html.escape(element_id, quote=True)
    return (f"<div class='hs-attention-view' id='{safe_id}'>"
            "<label>head and input: <select></select></label>"
            "<p class='hs-caption caption'></p>"
            "<p class='caption'>Hover a piece on the left to see where it attends, on the right to see what "
            "attends to it; line opacity is the weight (weights under 0.01 not drawn). Sentence B in orange.</p>"
            "<div style='max-height:640px;overflow:auto'><svg xmlns='http://www.w3.org/2000/svg' width='480'>"
            "</svg></div>"
            f"<script type='application/json'>{data}</script>"
            f"<script>{_VIEW_JS % {'id': safe_id}}</script></div>")
