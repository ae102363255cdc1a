"""Faster font subsets for PDF figures: the same bytes, a fraction of the time.

A PDF figure embeds its font as TrueType (``pdf.fonttype: 42``, :data:`headstats.plots.style.RC`), reduced to
the glyphs the figure uses. matplotlib makes that subset with fontTools from the whole font file for every PDF
(``matplotlib.backends._backend_pdf_ps.get_glyphs_subset``); for DejaVu Sans (about 6,000 glyphs, large
GSUB/GPOS tables) that is about 0.1 s per font per figure, most of a PDF's time.

:func:`quick_subsets` makes the same subset in two steps: once per font and process, the font reduced to the
glyphs of a fixed set of characters (:data:`BASE_TEXT`: Latin, Greek, the punctuation and symbols figures use)
with matplotlib's own subsetting, kept as bytes; then each figure's subset cut from that small font. fontTools'
subsetting keeps the glyphs, in their original order, that the requested ones reach (layout closure, composite
glyphs), and prunes every table to them, so the two steps give the bytes of one step (tested against
matplotlib's function on the figures' glyph sets). A figure that uses a glyph outside the fixed set (an input's
CJK text in a picture) is subset from the whole font, as matplotlib does. The fixed set does not depend on what
was drawn before, so a figure's PDF is the same in every process and order.

Only matplotlib versions whose subset function takes glyph indices and returns ``SubsetResults`` (3.11) are
served this way; with another, PDFs are written by matplotlib's own function.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from io import BytesIO

#: The characters every process's base subset of a font holds (those of the font that has them): printable
#: ASCII, Latin-1, Greek, and the dashes, quotes, arrows and mathematical signs that titles and labels use.
BASE_TEXT = ("".join(chr(c) for c in range(0x20, 0x7F)) + "".join(chr(c) for c in range(0xA0, 0x100))
             + "".join(chr(c) for c in range(0x370, 0x400)) + "‐‑‒–—―‘’‚“”„•…′″‹›⁄−∓∗∘√∝∞∼≈≠≡≤≥⊂⊃⊆⊇⋅"
             + "←↑→↓↔⇐⇒⇔∀∂∃∅∇∈∉∏∑∧∨∩∪∫□■▪▫▲△▶▷▼▽◀◁○●◦★☆✓✗" + "ﬀﬁﬂﬃﬄ"  # the ligatures text is set with
             + "".join(chr(c) for c in range(0x300, 0x370)))  # combining marks (keep the mark positioning)


def _module():
    """matplotlib's PDF/PS helper module where it has the glyph-index API this module serves, else None."""
    try:
        from matplotlib.backends import _backend_pdf_ps as module
    except ImportError:  # pragma: no cover - matplotlib without its PDF backend
        return None
    if not hasattr(module, "SubsetResults") or not hasattr(module, "get_glyphs_subset"):
        return None
    return module


@functools.lru_cache(maxsize=16)
def _base(path: str, face_index: int) -> tuple[bytes, dict[int, int], frozenset[int]] | None:
    """The font at ``path`` (face ``face_index``) reduced to the glyphs of :data:`BASE_TEXT` by matplotlib's
    function: its bytes, the map from the whole font's glyph indices to the base's, and the glyphs a subset can
    be cut from the base for. None if it cannot be made (the caller then subsets from the whole font).

    A subset keeps the characters of the glyphs asked for. So a glyph is served from the base when every
    character the whole font maps to it is in the base's character map: a glyph that the base holds only
    because another one reaches it (the ligature "ff" from "f") would otherwise lose its characters."""
    module = _module()
    try:
        from matplotlib.ft2font import FT2Font

        if face_index != 0:  # a face of a collection: matplotlib's way
            return None
        charmap = FT2Font(path).get_charmap()
        glyphs = {charmap[ord(c)] for c in BASE_TEXT if ord(c) in charmap}
        with _matplotlib_subset()(_font_path(path, face_index), glyphs) as result:
            data = module.font_as_file(result.font).getvalue()
            kept = {c for table in result.font["cmap"].tables for c in table.cmap}
            to_base = dict(result.glyph_index_map)
        characters: dict[int, set[int]] = {}
        for c, g in charmap.items():
            characters.setdefault(g, set()).add(c)
        return data, to_base, frozenset(g for g in to_base if characters.get(g, set()) <= kept)
    except Exception:  # noqa: BLE001 - any trouble: no base, matplotlib's way
        return None


def _matplotlib_subset():
    """matplotlib's own subset function (also while :func:`quick_subsets` has replaced it)."""
    return _ORIGINAL[0] if _ORIGINAL else _module().get_glyphs_subset


def warm(path: str | None = None) -> None:
    """Make the base subset of the font at ``path`` (default: the figures' first font, DejaVu Sans) now, e.g.
    in a process before it forks the workers that draw PDF figures, so that they share it."""
    if _module() is None:
        return
    if path is None:
        from matplotlib import font_manager
        from matplotlib.font_manager import FontProperties

        path = font_manager.findfont(FontProperties(family="DejaVu Sans"))
    _base(str(path), 0)


def _font_path(path: str, face_index: int):
    from matplotlib import font_manager

    maker = getattr(font_manager, "FontPath", None)
    return maker(path, face_index) if maker is not None else path


def _subset(fontfile, glyphs: Iterable[int]):
    """Drop-in for matplotlib's ``get_glyphs_subset(fontfile, glyphs)``: from the font's base when every glyph
    is in it, else matplotlib's own."""
    module = _module()
    glyphs = {int(g) for g in glyphs}
    path, face = str(getattr(fontfile, "path", fontfile)), int(getattr(fontfile, "face_index", 0) or 0)
    base = _base(path, face)
    if base is None or not glyphs <= base[2]:
        return _matplotlib_subset()(fontfile, glyphs)
    from fontTools import subset

    data, to_base, _ = base
    options = _options(face)
    font = subset.load_font(BytesIO(data), options)
    subsetter = subset.Subsetter(options=options)
    subsetter.populate(gids={to_base[g] for g in glyphs})
    subsetter.subset(font)
    final = subsetter.glyph_index_map
    mapping = {g: final[b] for g, b in to_base.items() if b in final}
    return module.SubsetResults(font, mapping)._as_cm()


def _options(face_index: int):
    """matplotlib's subsetting options (``get_glyphs_subset``): glyph names kept, recommended glyphs, the same
    tables dropped."""
    from fontTools import subset

    options = subset.Options(glyph_names=True, recommended_glyphs=True)
    options.drop_tables += ["FFTM", "PfEd", "BDF", "meta", "MERG", "TSIV", "Zapf", "bdat", "bloc", "cidg", "fdsc",
                            "feat", "fmtx", "fond", "just", "kerx", "ltag", "morx", "trak", "xref"]
    options.font_number = 0  # the base holds one face
    return options


#: matplotlib's own subset function, kept while :func:`quick_subsets` has put :func:`_subset` in its place.
_ORIGINAL: list = []


@contextmanager
def quick_subsets() -> Iterator[None]:
    """Inside the block, PDF (and PS) figures take their font subsets from :func:`_subset` (the same bytes,
    see the module's notes); matplotlib's function is put back after it. Nested blocks are fine; where
    matplotlib has another API, nothing changes."""
    module = _module()
    if module is None or _ORIGINAL:
        yield
        return
    _ORIGINAL.append(module.get_glyphs_subset)
    module.get_glyphs_subset = _subset
    try:
        yield
    finally:
        module.get_glyphs_subset = _ORIGINAL.pop()
