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

import base64  # noqa: E402
import html  # noqa: E402
import json  # noqa: E402
from collections.abc import Mapping, Sequence  # noqa: E402

import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
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


#: Line height of a tick label or token, in multiples of its font size (7 pt labels one every 8.4 pt).
LINE_SPACING = 1.2
#: The tallest line view, in inches (a printed page's text height): longer inputs label every k-th piece.
MAX_LINE_VIEW_HEIGHT = 9.0


def label_step(n: int, room: float, fontsize: float = style.MIN_FONT) -> int:
    """Label every k-th of ``n`` evenly spaced pieces so that labels of ``fontsize`` points, one line each,
    fit in ``room`` inches without overlapping: the smallest k with ``ceil(n / k) * fontsize * LINE_SPACING
    <= room * 72`` (1 when every label fits)."""
    per_label = fontsize * LINE_SPACING / 72
    fits = max(1, int(room // per_label))
    return max(1, -(-n // fits))


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _every(k: int) -> str:
    """``""`` for 1, else ``", every 3rd piece labelled"``."""
    return "" if k == 1 else f", every {_ordinal(k)} piece labelled"


@style.styled
def attention_heatmap(weights: np.ndarray, tokens: Sequence[str], *, title: str = "", ax: Axes | None = None
                      ) -> Figure:
    """Heat map of one head's map: queries down, keys across, the pieces as tick labels.

    The figure is the preset's printed width (:func:`headstats.plots.style.figure_width`) and every label is
    :data:`headstats.plots.style.MIN_FONT` points: when the pieces of a long input do not all fit at that
    size, every k-th piece is labelled (:func:`label_step`) and the axis labels say so.
    """
    w = _check(weights, tokens)
    n = len(tokens)
    shown = [style.drawable(t) for t in tokens]
    font = style.MIN_FONT
    width = style.figure_width()
    # margins (inches): the widest label beside the map and under it, the axis labels, the colour bar
    label_w = style.widest(shown, font) + style.tick_space()
    around = label_w + style.label_space(8) + 0.85  # the colour bar, its ticks and label: about 0.85 in
    side = max(1.0, min(width - around, 6.5, max(2.2, 0.12 * n + 0.5)))  # short inputs: a small map
    width = side + around
    k = label_step(n, side)
    height = side + label_w + style.label_space(8) + (style.title_space(8) if title else 0) + 0.1
    fig, ax = _axes(ax, (width, height))
    image = ax.imshow(w, cmap=style.SEQUENTIAL_CMAP, vmin=0.0, vmax=max(float(w.max()), 1e-9),
                      interpolation="none")  # PDF and SVG hold the n x n weights themselves, not a 300 dpi copy
    ticks = np.arange(0, n, k)
    ax.set_xticks(ticks, [shown[i] for i in ticks], rotation=90, fontsize=font)
    ax.set_yticks(ticks, [shown[i] for i in ticks], fontsize=font)
    ax.set_xlabel(f"key (attended to{_every(k)})")
    ax.set_ylabel(f"query (attending{_every(k)})")
    ax.spines[:].set_visible(False)
    fig.colorbar(image, ax=ax, fraction=0.04, label="attention weight")
    if title:
        ax.set_title(style.fitted_title(style.drawable(title), matplotlib.rcParams["axes.titlesize"], width - 0.2))
    fig.tight_layout(pad=0.3)
    return fig


@style.styled
def line_view(weights: np.ndarray, tokens: Sequence[str], *, title: str = "", segment: Sequence[int] | None = None,
              ax: Axes | None = None) -> Figure:
    """BertViz-style lines from each query (left) to each key (right), opacity = weight.

    Lines under :data:`MIN_LINE_WEIGHT` are left out. ``segment`` (0/1 per piece) greys sentence B's labels,
    so that attention between the sentences of a pair is easy to see. Labels are
    :data:`headstats.plots.style.MIN_FONT` points; an input too long for :data:`MAX_LINE_VIEW_HEIGHT` labels
    every k-th piece (every line is drawn).
    """
    w = _check(weights, tokens)
    n = len(tokens)
    font = style.MIN_FONT
    rows = min(n * font * LINE_SPACING / 72, MAX_LINE_VIEW_HEIGHT - 0.6)
    k = label_step(n, rows, font)
    fig, ax = _axes(ax, (min(3.6, style.figure_width()), max(2.0, rows + 0.6)))
    seg = np.zeros(n, int) if segment is None else np.asarray(segment, int)
    queries, keys = np.nonzero(w >= MIN_LINE_WEIGHT)
    colours = np.tile(matplotlib.colors.to_rgba(LINE_COLOUR), (len(queries), 1))
    colours[:, 3] = np.minimum(w[queries, keys], 1.0)  # one artist for all lines: drawn once, not n^2 times
    segments = np.stack([np.column_stack([np.zeros(len(queries)), -queries]),
                         np.column_stack([np.ones(len(keys)), -keys])], axis=1)
    ax.add_collection(LineCollection(segments, colors=colours, linewidths=1.2, capstyle="butt"))
    for i in range(0, n, k):
        colour = style.EDGE if seg[i] == 0 else style.OKABE_ITO["vermillion"]
        token = style.drawable(tokens[i])
        ax.text(-0.04, -i, token, ha="right", va="center", fontsize=font, color=colour)
        ax.text(1.04, -i, token, ha="left", va="center", fontsize=font, color=colour)
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(-n + 0.5, 0.5)
    ax.axis("off")
    if title or k > 1:
        text = style.drawable(title) + (f" ({_every(k)[2:]})" if k > 1 else "")
        ax.set_title(style.fitted_title(text.strip(), matplotlib.rcParams["axes.titlesize"],
                                        fig.get_size_inches()[0] - 0.2))
    fig.tight_layout(pad=0.3)
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


# ------------------------------------------------------------------------------------ the explorer (bertviz)

_EXPLORER_JS = r"""
(function(){
const root=document.getElementById('%(id)s');const D=JSON.parse(root.querySelector('script[type="application/json"]').textContent);
const q=s=>root.querySelector(s);const NS='http://www.w3.org/2000/svg';const svg=q('svg');
const C=['#0072B2','#D55E00','#009E73','#CC79A7','#E69F00','#56B4E9','#000000','#332288','#999933','#882255','#44AA99','#AA4499'];
function opt(sel,v,t){const o=document.createElement('option');o.value=v;o.textContent=t;sel.appendChild(o);}
D.inputs.forEach((v,k)=>opt(q('.hs-input'),k,v.label));
for(let l=0;l<D.n_layers;l++)opt(q('.hs-layer'),l,'layer '+l);
opt(q('.hs-head'),'all','all heads');for(let h=0;h<D.n_heads;h++)opt(q('.hs-head'),h,'head '+h);
D.presets.forEach((p,k)=>opt(q('.hs-preset'),k,p.label));
function el(t,a){const e=document.createElementNS(NS,t);for(const k in a)e.setAttribute(k,a[k]);return e;}
function words(v){// word of each piece: a piece starting with ## continues the word before it
 const of=[];const names=[];v.tokens.forEach((t,i)=>{if(i>0&&t.startsWith('##')&&!v.special[i]){of.push(names.length-1);names[names.length-1]+=t.slice(2);}else{of.push(names.length);names.push(t);}});
 const size=names.map(()=>0);of.forEach(w=>size[w]++);return {of,names,size};}
function b64(s){const b=atob(s);const u=new Uint8Array(b.length);for(let i=0;i<b.length;i++)u[i]=b.charCodeAt(i);return u;}
function unpack(v){// v.data: every head's bytes (pack_explorer_weights) -> v.heads[l][h] = [q,k,w255,...]
 const u=b64(v.data);const n=v.tokens.length;const wd=v.width;let p=0;
 const rd=()=>{const x=wd===1?u[p]:u[p]|(u[p+1]<<8);p+=wd;return x;};v.heads=[];
 for(let l=0;l<D.n_layers;l++){const row=[];for(let h=0;h<D.n_heads;h++){
  const cnt=[];let m=0;for(let i=0;i<n;i++){const c=rd();cnt.push(c);m+=c;}
  const ks=[];for(let r=0;r<m;r++)ks.push(rd());const e=[];let t=0;
  for(let i=0;i<n;i++)for(let c=0;c<cnt[i];c++,t++)e.push(i,ks[t],u[p+t]);p+=m;row.push(e);}v.heads.push(row);}}
D.inputs.forEach(unpack);
function matrix(v,l,h,wl){// sparse [q,k,w255,...] -> dense rows; word level: mean over query pieces, sum over key pieces
 const e=(v.heads[l]||[])[h]||[];const n=v.tokens.length;const W=words(v);const m=wl?W.names.length:n;
 const M=Array.from({length:m},()=>new Float32Array(m));
 for(let i=0;i<e.length;i+=3){const a=wl?W.of[e[i]]:e[i],b=wl?W.of[e[i+1]]:e[i+1];M[a][b]+=e[i+2]/255/(wl?W.size[a]:1);}
 return M;}
function draw(){const v=D.inputs[+q('.hs-input').value];const l=+q('.hs-layer').value;const hv=q('.hs-head').value;
 const wl=q('.hs-words').checked;const W=words(v);const labels=wl?W.names:v.tokens;
 const seg=wl?W.names.map((_,k)=>v.segment[W.of.indexOf(k)]):v.segment;const n=labels.length;
 const heads=hv==='all'?[...Array(D.n_heads).keys()]:[+hv];const h=16,top=24,xl=160,xr=360;
 svg.innerHTML='';svg.setAttribute('height',top+n*h+10);svg.setAttribute('width',520);
 const title=el('text',{x:4,y:14,'font-size':12,'font-family':'sans-serif'});
 title.textContent=v.label+': layer '+l+', '+(hv==='all'?'all heads':'head '+hv)+(wl?' (words)':' (pieces)');svg.appendChild(title);
 const lines=[];heads.forEach((hd,c)=>{const M=matrix(v,l,hd,wl);
  for(let i=0;i<n;i++)for(let j=0;j<n;j++){const w=M[i][j];if(w<0.01)continue;
   const x=el('line',{x1:xl,y1:top+i*h+h/2,x2:xr,y2:top+j*h+h/2,stroke:heads.length>1?C[hd%%C.length]:'#0072B2','stroke-width':2,'stroke-opacity':w});
   x.dataset.q=i;x.dataset.k=j;x.dataset.w=w;svg.appendChild(x);lines.push(x);}});
 function show(kind,idx){lines.forEach(x=>{x.setAttribute('stroke-opacity',idx===null||x.dataset[kind]==idx?x.dataset.w:0);});}
 for(let i=0;i<n;i++){[[xl-6,'end','q'],[xr+6,'start','k']].forEach(([x,anchor,kind])=>{
  const t=el('text',{x:x,y:top+i*h+h/2+4,'text-anchor':anchor,'font-size':12,'font-family':'sans-serif',fill:seg[i]?'#D55E00':'#333',style:'cursor:pointer'});
  t.textContent=labels[i];t.addEventListener('mouseenter',()=>show(kind,i));t.addEventListener('mouseleave',()=>show(kind,null));svg.appendChild(t);});}
 q('.hs-caption').textContent=(hv!=='all'&&v.captions&&v.captions[l+'-'+hv])||'';}
function save(kind){const text=new XMLSerializer().serializeToString(svg);const name='attention_'+q('.hs-input').value+'_'+q('.hs-layer').value+'_'+q('.hs-head').value;
 const go=(blob,ext)=>{const a=document.createElement('a');a.href=URL.createObjectURL(blob);a.download=name+'.'+ext;a.click();};
 const blob=new Blob([text],{type:'image/svg+xml'});if(kind==='svg')return go(blob,'svg');
 const img=new Image();img.onload=()=>{const c=document.createElement('canvas');c.width=svg.width.baseVal.value*2;c.height=svg.height.baseVal.value*2;
  const g=c.getContext('2d');g.fillStyle='#fff';g.fillRect(0,0,c.width,c.height);g.scale(2,2);g.drawImage(img,0,0);c.toBlob(b=>go(b,'png'));};
 img.src=URL.createObjectURL(blob);}
q('.hs-preset').addEventListener('change',()=>{const p=D.presets[+q('.hs-preset').value];if(!p)return;
 q('.hs-input').value=p.input;q('.hs-layer').value=p.layer;q('.hs-head').value=p.head;draw();});
['.hs-input','.hs-layer','.hs-head','.hs-words'].forEach(s=>q(s).addEventListener('change',draw));
q('.hs-svg').addEventListener('click',()=>save('svg'));q('.hs-png').addEventListener('click',()=>save('png'));
const p=D.presets[0];if(p){q('.hs-input').value=p.input;q('.hs-layer').value=p.layer;q('.hs-head').value=p.head;}draw();})();
"""


def attention_explorer_html(inputs: Sequence[dict], *, n_layers: int, n_heads: int, presets: Sequence[dict] = (),
                            element_id: str = "hs-attention-explorer") -> str:
    """A self-contained HTML fragment (inline SVG and JavaScript, one file, no network) with bertviz's reach:
    any input kept for pictures, any layer and head or all heads of a layer at once (one colour per head),
    pieces or words (a word's row is the mean of its pieces' rows, its column the sum of its pieces' columns,
    as in Clark et al.), and buttons that save the current view as SVG or PNG.

    Parameters
    ----------
    inputs : sequence of dict
        Each with ``label``, ``tokens`` (n strings), ``segment`` and ``special`` (n values), ``weights``: a
        mapping ``(layer, head) -> (query, key, weight)`` arrays of positions 0..n-1 (weights under 0.01 may be
        left out; the view draws none), and optional ``captions``: ``"layer-head" -> text``.
    n_layers, n_heads : int
        The model's shape (the menus).
    presets : sequence of dict
        Shortcuts in a menu, each ``label, input, layer, head`` (e.g. the gallery's heads); the first is shown.
    element_id : str
        The id of the fragment's root element (unique within the page).

    Notes
    -----
    Each input's weights are one base64 string of bytes (:func:`pack_explorer_weights`), decoded by the page's
    script: a weight is stored as ``round(255 w)``, so the view draws it within half a step, 1/510, of its value;
    weights that round below 3 (``w < 2.5/255``, about 0.0098) are left out, as the view draws no line under
    0.01. 3 WikiText pairs of 128 pieces on the default model (6 x 12 heads) take 1.2 MB of page (0.91 MB of
    bytes; 3.7 MB as the earlier JSON of ``[query, key, round(255 w)]`` numbers).
    """
    payload = []
    for v in inputs:
        data, width = pack_explorer_weights(v["weights"], len(v["tokens"]), n_layers=n_layers, n_heads=n_heads)
        n = len(v["tokens"])
        payload.append({"label": str(v["label"]), "tokens": [str(t) for t in v["tokens"]],
                        "segment": [int(s) for s in (v.get("segment") if v.get("segment") is not None else [0] * n)],
                        "special": [bool(s) for s in (v.get("special") if v.get("special") is not None else [0] * n)],
                        "captions": {str(k): str(c) for k, c in (v.get("captions") or {}).items()},
                        "width": width, "data": base64.b64encode(data).decode("ascii")})
    data = json.dumps({"inputs": payload, "n_layers": int(n_layers), "n_heads": int(n_heads),
                       "presets": [{"label": str(p["label"]), "input": int(p["input"]), "layer": int(p["layer"]),
                                    "head": str(p["head"])} for p in presets]},
                      separators=(",", ":")).replace("</", "<\\/")
    safe_id = html.escape(element_id, quote=True)
    return (f"<div class='hs-attention-view' id='{safe_id}'>"
            "<p><label>input <select class='hs-input'></select></label> "
            "<label>layer <select class='hs-layer'></select></label> "
            "<label>head <select class='hs-head'></select></label> "
            "<label><input type='checkbox' class='hs-words'> words</label> "
            "<label>shortcut <select class='hs-preset'></select></label> "
            "<button type='button' class='hs-svg'>save SVG</button> "
            "<button type='button' class='hs-png'>save PNG</button></p>"
            "<p class='hs-caption caption'></p>"
            "<p class='caption'>Hover a piece on the left to see where it attends, on the right to see what "
            "attends to it; line opacity is the weight (weights under 0.01 not drawn); with all heads, one colour "
            "per head. Sentence B in orange.</p>"
            "<div style='max-height:640px;overflow:auto'><svg xmlns='http://www.w3.org/2000/svg' width='520'>"
            "</svg></div>"
            f"<script type='application/json'>{data}</script>"
            f"<script>{_EXPLORER_JS % {'id': safe_id}}</script></div>")


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
