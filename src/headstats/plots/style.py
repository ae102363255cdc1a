"""One look for every headstats figure: colour-blind-safe palettes, a fixed colour and order per role, font
sizes, and saving as PNG (for the report) with SVG beside it (for papers).

Palettes
--------
- Roles: Paul Tol's *muted* qualitative scheme (nine colours that stay distinct under the common forms of
  colour blindness, https://personal.sron.nl/~pault/) plus a dark grey, assigned to the built-in roles by name so
  that ``delimiter_cls`` has the same colour in every figure of every run. Other roles take the colours left over.
- Series that are not roles (before/after, [CLS]/[SEP], assigned/not assigned): Okabe & Ito (2008).
- Heat maps: ``viridis`` (sequential) and ``coolwarm`` (diverging blue-red, safe for red-green colour
  blindness; its ends are mid-tones, so black outlines stay visible).

Every plotting function of :mod:`headstats.plots` draws inside :func:`context` (or is wrapped by
:func:`styled`), so that these settings never leak into the user's own matplotlib state.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from dataclasses import dataclass
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import BinaryIO, TypeVar

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.font_manager import FontProperties  # noqa: E402
from matplotlib.layout_engine import PlaceHolderLayoutEngine  # noqa: E402

from headstats.analyses.roles import role_family  # noqa: E402,F401 - the paper's kind of a role

#: Okabe & Ito (2008), "Color Universal Design": the safe default for series.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}
#: Okabe-Ito without black and yellow (too dark / too light for lines and bars on white), in drawing order.
SERIES = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]

#: Paul Tol's muted scheme (indigo, cyan, teal, green, olive, sand, rose, wine, purple) and a dark grey.
TOL_MUTED = ["#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499"]
DARK_GREY = "#555555"

#: The built-in roles in the order figures and tables show them, with their fixed colours.
ROLE_ORDER = [
    "local", "block", "delimiter", "delimiter_cls", "delimiter_sep",
    "syntactic", "syntactic:nsubj", "syntactic:dobj", "syntactic:amod", "syntactic:advmod",
]
ROLE_COLOURS = {
    "local": "#332288",            # indigo
    "block": "#999933",            # olive
    "delimiter": "#CC6677",        # rose
    "delimiter_cls": "#882255",    # wine
    "delimiter_sep": "#DDCC77",    # sand
    "syntactic": "#117733",        # green
    "syntactic:nsubj": "#88CCEE",  # cyan
    "syntactic:dobj": "#44AA99",   # teal
    "syntactic:amod": "#E69F00",   # orange (Okabe-Ito): apart from rose and wine, in colour and in grey
    "syntactic:advmod": DARK_GREY,
}
#: Colours for roles that are not built in (registered by the user, other relations), in turn.
EXTRA_COLOURS = [*OKABE_ITO.values()][1:] + TOL_MUTED

#: Fill of a slot whose role was tested but not held, and edge of drawn marks.
EMPTY = "#EBEBEB"
EDGE = "#333333"
GRID = "#9A9A9A"
#: Outline of assigned heads on heat maps.
ASSIGNED_EDGE = "#000000"

SEQUENTIAL_CMAP = "viridis"
#: Diverging map whose ends are mid-tones, so that a black outline shows on every cell.
DIVERGING_CMAP = "coolwarm"
#: Diverging map with a white centre (ColorBrewer RdBu, safe for red-green colour blindness): the mean-score
#: maps centre it at tau, so white is tau and the depth of colour the distance from it.
DIVERGING_CMAP_CENTRED = "RdBu_r"

#: Resolution at which figures are laid out (text measured); the files are written at the preset's ``dpi``.
PNG_DPI = 120
#: Formats written when no preset says otherwise (PNG for the report, PDF and SVG for papers).
FORMATS = ("png", "pdf", "svg")
#: The smallest font size any figure uses, in points: figures are drawn at their printed width, so this is
#: also the smallest text in print (``headstats.report.options.MIN_FONT_PT``).
MIN_FONT = 7


@dataclass(frozen=True)
class Preset:
    """How figures are drawn for print: the printed ``width`` in inches (every figure is drawn that wide, or
    narrower), the PNG's ``dpi``, the ``formats`` written, and the colour ``scale`` of the mean-score maps
    (``family``, ``shared`` or ``role``). Made from ``report.figures`` (:class:`headstats.report.options.FigureOptions`)
    by :func:`preset_of`."""

    width: float = 7.0
    dpi: int = 300
    formats: tuple[str, ...] = FORMATS
    scale: str = "family"


_PRESET = [Preset()]


def preset_of(options=None) -> Preset:
    """The :class:`Preset` of a ``FigureOptions`` (anything with ``inches``, ``dpi``, ``formats``, ``scale``);
    the default preset for None."""
    if options is None:
        return Preset()
    if isinstance(options, Preset):
        return options
    return Preset(width=float(options.inches), dpi=int(options.dpi), formats=tuple(options.formats),
                  scale=str(options.scale))


def preset() -> Preset:
    """The preset figures are drawn with now (see :func:`using`)."""
    return _PRESET[-1]


@contextmanager
def using(new: Preset | None):
    """Draw and save figures with ``new`` inside the block (None: keep the current preset)."""
    _PRESET.append(new or preset())
    try:
        yield _PRESET[-1]
    finally:
        _PRESET.pop()


def figure_width() -> float:
    """The printed width figures are drawn at, in inches (the preset's)."""
    return preset().width


def columns_for(panel_inches: float, n: int, *, width: float | None = None, most: int = 6) -> int:
    """Panels per row that each get at least ``panel_inches`` of a figure ``width`` wide (default: the
    preset's), at least 1, at most ``most`` and ``n``."""
    width = figure_width() if width is None else width
    return max(1, min(n, most, int(width // panel_inches)))

#: Fonts tried after DejaVu Sans for glyphs it lacks (CJK input text in attention pictures), where installed.
FALLBACK_FONTS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "Source Han Sans", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei",
                  "Droid Sans Fallback", "Arial Unicode MS")


def _font_family() -> list[str]:
    """DejaVu Sans, then the :data:`FALLBACK_FONTS` installed here (matplotlib takes a missing glyph from the
    next font of the list; a font that is not installed would only add a warning)."""
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    return ["DejaVu Sans", *(f for f in FALLBACK_FONTS if f in installed)]


#: What a character no font of the family can draw is shown as (DejaVu Sans has it).
PLACEHOLDER = "\u25a1"


@functools.lru_cache(maxsize=None)
def _charmap(path: str) -> frozenset[int]:
    from matplotlib.ft2font import FT2Font

    return frozenset(FT2Font(path).get_charmap())


@functools.lru_cache(maxsize=8)
def _drawable_codes(family: tuple[str, ...]) -> tuple[frozenset[int], ...]:
    from matplotlib import font_manager

    out = []
    for name in family:
        try:
            path = font_manager.findfont(FontProperties(family=name), fallback_to_default=False)
        except ValueError:  # not installed
            continue
        out.append(_charmap(path))
    return tuple(out)


def drawable(text: str) -> str:
    """``text`` with every character that no font of the figures' family (DejaVu Sans, then the installed
    :data:`FALLBACK_FONTS`) can draw replaced by :data:`PLACEHOLDER`, so that drawing it never warns about a
    missing glyph: CJK input text is drawn with a CJK font where one is installed, as boxes otherwise.
    Whitespace is kept."""
    text = str(text)
    if text.isascii():
        return text
    fonts = _drawable_codes(tuple(RC["font.family"]))
    return "".join(c if c.isspace() or any(ord(c) in f for f in fonts) else PLACEHOLDER for c in text)


RC = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
    "figure.titlesize": 9,
    "font.family": _font_family(),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": matplotlib.cycler(color=SERIES),
    "image.cmap": SEQUENTIAL_CMAP,
    "legend.frameon": False,
    "savefig.dpi": PNG_DPI,
    "savefig.pad_inches": 0.05,
    "svg.fonttype": "none",  # text stays text in the SVG: editable and searchable in a paper's figure
    "svg.hashsalt": "headstats",  # stable element ids: an unchanged figure gives an unchanged file
    "pdf.fonttype": 42,
}

F = TypeVar("F", bound=Callable)


def context() -> AbstractContextManager:
    """A matplotlib ``rc_context`` with the headstats style (restores the user's settings on exit)."""
    return matplotlib.rc_context(RC)


def axes_for(ax, figsize: tuple[float, float], *, layout: str | None = None):
    """``(figure, axes)`` to draw on: ``ax`` and its figure, or a new figure of ``figsize`` inches (with matplotlib's
    ``layout``, e.g. ``"constrained"``) and its one axes. The plot functions' ``ax=`` convention (STYLE.md)."""
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize, layout=layout)
    return fig, fig.add_subplot()


def styled(func: F) -> F:
    """Decorator: run a plotting function inside :func:`context`."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with context():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _role_rank(role: str) -> tuple[int, str]:
    if role in ROLE_ORDER:
        return ROLE_ORDER.index(role), ""
    if role.startswith("syntactic:"):
        return len(ROLE_ORDER), role
    return len(ROLE_ORDER) + 1, role


def order_roles(roles: Iterable[str]) -> list[str]:
    """Roles in the order every figure shows them: built-in roles first (local, block, delimiter and its
    parts, syntactic and its relations), then other relations and other roles alphabetically. Duplicates
    are dropped."""
    return sorted(dict.fromkeys(str(r) for r in roles), key=_role_rank)


def role_slots(roles: Iterable[str]) -> dict[str, int]:
    """The slot of each role in a role grid's cell (the roles' role grid), the same in
    every run: a built-in role keeps its place in :data:`ROLE_ORDER` (a built-in role absent from the run leaves
    its slot empty, up to the last built-in role present), the other roles follow in :func:`order_roles` order.
    A run without ``block`` draws ``syntactic`` where a run with it does."""
    ordered = order_roles(roles)
    builtin = [r for r in ordered if r in ROLE_ORDER]
    first_other = max((ROLE_ORDER.index(r) for r in builtin), default=-1) + 1
    others = [r for r in ordered if r not in ROLE_ORDER]
    return {**{r: ROLE_ORDER.index(r) for r in builtin}, **{r: first_other + k for k, r in enumerate(others)}}


def role_colours(roles: Sequence[str]) -> dict[str, str]:
    """A colour per role: fixed for built-in roles, the unused palette colours in turn for the others."""
    used = {ROLE_COLOURS[r] for r in roles if r in ROLE_COLOURS}
    spare = [c for c in EXTRA_COLOURS if c not in used] or EXTRA_COLOURS
    out, k = {}, 0
    for role in roles:
        if role in ROLE_COLOURS:
            out[role] = ROLE_COLOURS[role]
        else:
            out[role] = spare[k % len(spare)]
            k += 1
    return out


def save(fig: Figure, folder: Path, name: str, *, formats: Sequence[str] | None = None,
         screen: BinaryIO | None = None, screen_dpi: float | None = None) -> list[Path]:
    """Save ``fig`` as ``folder/name.<fmt>`` for each format (default: the preset's; PNG at the preset's
    ``dpi``, PDF with TrueType text, SVG with text as text); return the paths.

    The figure's layout engine (e.g. ``layout="constrained"``) runs once, as the first file's format measures
    text (:func:`_lay_out`), and every file keeps that layout, so every format shows the same figure and each of
    them costs one draw instead of two (matplotlib draws once more before saving a figure with a layout engine
    or ``bbox_inches="tight"``).
    A figure without a layout engine is cropped to its tight bounding box, measured once here without that
    draw. A figure marked with :func:`laid_out` (its axes placed by
    :func:`panel_rects`) or laid out by ``fig.tight_layout()`` is saved as it is: one draw per file. ``screen``: a file object that also gets the
    same figure's RGBA pixels at ``screen_dpi`` (``savefig(format="rgba")``; the report's screen copy, drawn
    by matplotlib at that resolution rather than resampled from the print file).
    """
    from headstats.plots.fonts import quick_subsets

    paths = []
    formats = preset().formats if formats is None else formats
    with context(), quick_subsets():  # PDF fonts subset from a kept base: the same bytes, faster
        engine = fig.get_layout_engine()
        bbox = None if engine is not None or is_laid_out(fig) else "tight"
        if bbox == "tight":  # measured here, without the whole draw matplotlib makes before saving to find it
            bbox = fig.get_tightbbox().padded(matplotlib.rcParams["savefig.pad_inches"])
        if isinstance(engine, PlaceHolderLayoutEngine):  # laid out by fig.tight_layout(): nothing to run at draw,
            _drop_layout_engine(fig)  # so no draw before the first file's either
        elif engine is not None and formats:  # the layout alone, as the first file's pre-draw would run it
            _lay_out(fig, engine, formats[0])
        for k, fmt in enumerate(formats):
            path = Path(folder) / f"{name}.{fmt}"
            fig.savefig(path, format=fmt, dpi=preset().dpi, metadata=_metadata(fmt), bbox_inches=bbox)
            paths.append(path)
            if k == 0 and (len(formats) > 1 or screen is not None):
                _drop_layout_engine(fig)  # laid out: keep the positions
        if screen is not None:
            fig.savefig(screen, format="rgba", dpi=screen_dpi, bbox_inches=bbox)
    return paths


def _lay_out(fig: Figure, engine, fmt: str) -> None:
    """Run ``fig``'s layout ``engine`` once, measuring text as saving it as ``fmt`` would, and keep its positions
    (no layout engine left).

    matplotlib saves a figure with a layout engine by drawing it twice: once with drawing switched off, so that
    the engine runs inside the draw (``print_figure``'s pre-draw), then once for the file, without the engine.
    The engine measures the figure's text with the canvas' renderer at the saving dpi whatever the pre-draw's
    renderer is (``Figure._get_renderer``); running it here, with the figure at that dpi on the canvas that
    format is saved with, gives the same positions without the pre-draw's pass over every artist (tested: the
    same files). It uses matplotlib's internal canvas switch (tested with matplotlib 3.11); where a version lacks
    it, the engine is left on the figure and matplotlib's own pre-draw lays it out."""
    from matplotlib import cbook

    canvas = fig.canvas
    if not (hasattr(canvas, "_switch_canvas_and_return_print_method") and hasattr(cbook, "_setattr_cm")):
        return  # another matplotlib: its own way (the pre-draw), the same files
    with cbook._setattr_cm(canvas, manager=None), canvas._switch_canvas_and_return_print_method(fmt), \
            cbook._setattr_cm(fig, dpi=preset().dpi), cbook._setattr_cm(fig.canvas, _device_pixel_ratio=1), \
            cbook._setattr_cm(fig.canvas, _is_saving=True):
        if fig.axes:  # as Figure.draw runs it
            try:
                engine.execute(fig)
            except ValueError:  # matplotlib's draw lets a layout that cannot be made pass too
                pass
    _drop_layout_engine(fig)


def _drop_layout_engine(fig: Figure) -> None:
    """Keep ``fig``'s axes where they are: no layout engine (not even a placeholder), whatever the rc says."""
    with matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)


# ------------------------------------------------------------------------------------------ fixed layouts
#
# Constrained layout finds the margins of a figure by measuring every tick label of every axes, twice, and
# matplotlib then draws the figure once more before saving it; for small multiples (9 maps and 9 colour bars)
# that is most of the time a figure costs. The report's figures know what text sits around their panels (tick
# labels of small integers, a title, an axis label), so they compute their margins from the sizes of those few
# strings instead (:func:`text_size`) and place their axes with :func:`panel_rects`.

#: Space around a figure and between neighbouring panels, in inches (constrained layout's default pad, 3 pt).
PAD = 3 / 72


@functools.lru_cache(maxsize=1)
def _measuring_text():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(dpi=PNG_DPI)
    return fig.text(0, 0, ""), FigureCanvasAgg(fig).get_renderer()


@functools.lru_cache(maxsize=4096)
def _text_size(text: str, fontsize: float, weight: str, family: tuple[str, ...]) -> tuple[float, float]:
    measure, renderer = _measuring_text()
    measure.set_text(text)
    measure.set_fontproperties(FontProperties(family=list(family), size=fontsize, weight=weight))
    box = measure.get_window_extent(renderer)
    return box.width / PNG_DPI, box.height / PNG_DPI


def text_size(text: str, fontsize: float, *, weight: str = "normal") -> tuple[float, float]:
    """Width and height in inches of one line of ``text`` as the PNG shows it (matplotlib's text box: the
    height is at least that of ``"lp"``, ascent and descent), in the current font family."""
    family = tuple(matplotlib.rcParams["font.family"])
    return _text_size(str(text), float(fontsize), weight, family)


def widest(texts: Iterable[str], fontsize: float) -> float:
    """Width in inches of the widest of ``texts`` (0 for none)."""
    return max((text_size(t, fontsize)[0] for t in texts), default=0.0)


def tick_space(axis: str = "x") -> float:
    """Inches from an axes' edge to its tick labels: the major tick's length and pad (rcParams)."""
    rc = matplotlib.rcParams
    return (rc[f"{axis}tick.major.size"] + rc[f"{axis}tick.major.pad"]) / 72


def label_space(fontsize: float) -> float:
    """Inches an axis label takes beside its tick labels: the label pad and the label's line."""
    return matplotlib.rcParams["axes.labelpad"] / 72 + text_size("lp", fontsize)[1]


def title_space(fontsize: float) -> float:
    """Inches an axes title takes above its axes: the title pad and the title's line."""
    return matplotlib.rcParams["axes.titlepad"] / 72 + text_size("lp", fontsize)[1]


def fitted_title(text: str, fontsize: float, width: float) -> str:
    """``text`` as one line when it fits in ``width`` inches, else broken before its parenthesis (or at the
    last space that fits): a figure title that is never cut at the figure's edge."""
    if text_size(text, fontsize)[0] <= width or "\n" in text:
        return text
    head, sep, tail = text.partition(" (")
    if sep and text_size(head, fontsize)[0] <= width:
        return f"{head}\n({tail}"
    words, lines = text.split(" "), [""]
    for word in words:
        joined = f"{lines[-1]} {word}".strip()
        if lines[-1] and text_size(joined, fontsize)[0] > width:
            lines.append(word)
        else:
            lines[-1] = joined
    return "\n".join(lines)


def title_height(text: str, fontsize: float) -> float:
    """Inches a (possibly multi-line) figure title takes."""
    lines = text.split("\n")
    return text_size("lp", fontsize)[1] * (1 + 1.2 * (len(lines) - 1))


_LAID_OUT = "_headstats_laid_out"


def laid_out(fig: Figure) -> Figure:
    """Mark ``fig`` as laid out by hand (fixed axes positions that hold all its text): :func:`save` then
    saves the whole canvas, without a layout engine or a tight box, and so without an extra draw."""
    setattr(fig, _LAID_OUT, True)
    return fig


def is_laid_out(fig: Figure) -> bool:
    """Whether :func:`laid_out` marked ``fig``."""
    return bool(getattr(fig, _LAID_OUT, False))


def fit(fig: Figure, ax=None, *, below=None) -> Figure:
    """Lay out a figure of one axes once: measure what sits around the axes (tick labels, labels, title, a
    legend beside it) at the PNG's resolution and shrink the axes so that all of it fits inside the figure
    with :data:`PAD` to spare; mark the figure :func:`laid_out`.

    ``below`` is an artist anchored at the bottom of the figure (a figure legend at ``loc="lower center"``):
    the axes go above it, and a figure narrower than it is widened to hold it. One measurement instead of constrained layout's two and matplotlib's extra draw
    before saving. Text added afterwards is not laid out: call ``fig.set_layout_engine("constrained")`` to lay
    the figure out again.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    ax = ax if ax is not None else fig.axes[0]
    canvas = fig.canvas
    dpi = fig.dpi
    try:
        FigureCanvasAgg(fig)
        fig.set_dpi(PNG_DPI)
        renderer = fig.canvas.get_renderer()
        legends = [a for a in (ax.get_legend(),) if a is not None]  # the marks inside the axes stay inside
        tight = ax.get_tightbbox(renderer, bbox_extra_artists=legends)
        box = ax.get_window_extent(renderer).frozen()  # in pixels at PNG_DPI (not a view of the figure)
        under = below.get_window_extent(renderer).frozen() if below is not None else None
    finally:
        fig.set_dpi(dpi)
        fig.set_canvas(canvas)
    width, height = fig.get_size_inches()
    floor = under.y1 if under is not None else 0.0
    if under is not None and under.width > (width - 2 * PAD) * PNG_DPI:
        width = under.width / PNG_DPI + 2 * PAD
        fig.set_size_inches(width, height)  # the margins around the axes do not depend on its width
    pad = PAD * PNG_DPI
    left, right = box.x0 - tight.x0 + pad, tight.x1 - box.x1 + pad
    bottom, top = floor + box.y0 - tight.y0 + pad, tight.y1 - box.y1 + pad
    w_px, h_px = width * PNG_DPI, height * PNG_DPI
    if w_px - left - right > 0.2 * w_px and h_px - bottom - top > 0.2 * h_px:  # else leave it as it is
        ax.set_position((left / w_px, bottom / h_px, 1 - (left + right) / w_px, 1 - (bottom + top) / h_px))
    return laid_out(fig)


#: Where :func:`place_labels` tries a point's label, in order: (dx, dy) in points and the text's alignment.
LABEL_SPOTS = ((3, 2, "left", "bottom"), (3, -2, "left", "top"), (-3, 2, "right", "bottom"), (-3, -2, "right", "top"),
               (0, 4, "center", "bottom"), (0, -4, "center", "top"), (5, 0, "left", "center"),
               (-5, 0, "right", "center"))


def place_labels(ax, xs: Sequence[float], ys: Sequence[float], labels: Sequence[str], *,
                 fontsize: float = MIN_FONT, marker_points: float = 3.0, colour: str = DARK_GREY) -> list:
    """Label points without overlap, greedily: each point, the least crowded first, gets its label at the
    first of :data:`LABEL_SPOTS` where the label's box overlaps no label placed before, no point's marker
    (a square ``marker_points`` around each point) and stays inside the axes; a point with no such spot is
    left unlabelled. Call it once the axes are laid out (their size final). Returns the labels placed
    (``matplotlib.text.Annotation``), in the order of the points.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.transforms import Bbox

    fig = ax.figure
    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    ax.apply_aspect()
    xy = ax.transData.transform(np.column_stack([np.asarray(xs, float), np.asarray(ys, float)]))
    r = marker_points * fig.dpi / 72
    markers = [Bbox([[x - r, y - r], [x + r, y + r]]) for x, y in xy]
    frame = ax.get_window_extent(renderer)
    crowd = np.array([(np.hypot(*(xy - p).T) < 24 * fig.dpi / 72).sum() for p in xy])
    placed: dict[int, object] = {}
    boxes: list = []
    for k in np.argsort(crowd, kind="stable"):
        for dx, dy, ha, va in LABEL_SPOTS:
            text = ax.annotate(str(labels[k]), xy=(xs[k], ys[k]), xytext=(dx, dy), textcoords="offset points",
                               ha=ha, va=va, fontsize=fontsize, color=colour)
            box = text.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.overlaps(b) for b in boxes) and not any(box.overlaps(m) for m in markers):
                placed[int(k)] = text
                boxes.append(box)
                break
            text.remove()
    return [placed[k] for k in sorted(placed)]


def panel_rects(size: tuple[float, float], n: int, ncols: int, *, left: float, right: float, top: float,
                bottom: float, col_gap: float, row_gaps: Sequence[float] = ()) -> list[tuple[float, float, float, float]]:
    """Rectangles ``(x0, y0, width, height)`` in figure fractions of ``n`` equal panels, row by row.

    All lengths are in inches: the figure's ``size`` (width, height), its margins, the gap between columns
    and the gap under each row but the last (``row_gaps``, default ``col_gap``). The panels share what is
    left equally, as constrained layout would share it, but without measuring the figure.
    """
    width, height = size
    nrows = max(1, -(-n // max(ncols, 1)))
    gaps = list(row_gaps) if row_gaps else [col_gap] * (nrows - 1)
    panel_w = (width - left - right - (ncols - 1) * col_gap) / ncols
    panel_h = (height - top - bottom - sum(gaps[: nrows - 1])) / nrows
    if panel_w <= 0 or panel_h <= 0:
        raise ValueError(f"a {width:.2f} x {height:.2f} in figure has no room for {nrows} x {ncols} panels "
                         "with these margins; make the figure larger")
    rects = []
    for k in range(n):
        r, c = divmod(k, ncols)
        x = left + c * (panel_w + col_gap)
        y = height - top - r * panel_h - sum(gaps[:r]) - panel_h
        rects.append((x / width, y / height, panel_w / width, panel_h / height))
    return rects


def _metadata(fmt: str) -> dict | None:
    # no creation date in the files, so that rebuilding a report does not change unchanged figures
    if fmt == "svg":
        return {"Date": None}
    if fmt == "png":
        return {"Software": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return None
