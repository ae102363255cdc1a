"""PDF font subsets cut from a kept base (headstats.plots.fonts): the same bytes as matplotlib's own subsets."""

from __future__ import annotations

import random

import pytest
from matplotlib import font_manager
from matplotlib.figure import Figure

from headstats.plots import fonts, style

backend = pytest.importorskip("matplotlib.backends._backend_pdf_ps")
needs_api = pytest.mark.skipif(fonts._module() is None, reason="this matplotlib's subset function has another API")


def dejavu(weight: str = "normal", slant: str = "normal") -> str:
    return font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans", weight=weight, style=slant))


def subset_bytes(path: str, glyphs) -> tuple[bytes, dict]:
    with backend.get_glyphs_subset(fonts._font_path(path, 0), glyphs) as result:
        return backend.font_as_file(result.font).getvalue(), dict(result.glyph_index_map)


@needs_api
@pytest.mark.parametrize("weight,slant", [("normal", "normal"), ("bold", "normal"), ("normal", "italic")])
def test_same_subset_as_matplotlib(weight, slant):
    """Glyph sets of figure text (a ligature, Greek, signs) and random sets of the base's glyphs: the font
    bytes and the glyph map are matplotlib's, and the quick path served most of them."""
    from matplotlib.ft2font import FT2Font

    path = dejavu(weight, slant)
    charmap = FT2Font(path).get_charmap()
    texts = ["Effect size d (95% CI), τ = 3", "p ≤ α/m — heads per layer", "attention weight", "0123456789.-−"]
    sets = [{charmap[ord(c)] for c in text if ord(c) in charmap} for text in texts]
    sets.append({FT2Font(path).get_name_index("uniFB00"), charmap[ord("e")]})  # "ff", as text is shaped
    _, to_base, safe = fonts._base(path, 0)
    rng = random.Random(0)
    sets += [set(rng.sample(sorted(to_base), rng.randint(1, 40))) for _ in range(6)]
    sets += [set(rng.sample(sorted(safe), rng.randint(1, 40))) for _ in range(6)]
    served = 0
    for glyphs in sets:
        expected = subset_bytes(path, glyphs)
        with fonts.quick_subsets():
            assert backend.get_glyphs_subset is fonts._subset
            got = subset_bytes(path, glyphs)
        assert got == expected
        served += glyphs <= safe
    assert backend.get_glyphs_subset is not fonts._subset  # put back
    assert served >= len(texts) + 6


@needs_api
def test_glyph_outside_the_base_is_subset_from_the_whole_font():
    """A CJK-range glyph (not in the base): matplotlib's own function makes it, same bytes."""
    from matplotlib.ft2font import FT2Font

    path = dejavu()
    charmap = FT2Font(path).get_charmap()
    outside = next(g for c, g in sorted(charmap.items()) if c > 0x2E80)
    _, _, safe = fonts._base(path, 0)
    assert outside not in safe
    glyphs = {outside, charmap[ord("a")]}
    expected = subset_bytes(path, glyphs)
    with fonts.quick_subsets():
        assert subset_bytes(path, glyphs) == expected


def figure() -> Figure:
    with style.context():
        fig = Figure(figsize=(3, 2))
        ax = fig.add_subplot()
        ax.plot([0, 1], [0, 1])
        ax.set_title("Effect sizes: τ ≤ 3, different offsets")
        ax.set_xlabel("layer")
    return fig


def test_figure_pdf_unchanged(tmp_path, monkeypatch):
    """A figure saved by style.save (quick subsets) gives the PDF that matplotlib's own subsets give."""
    style.save(figure(), tmp_path, "quick", formats=["pdf"])
    monkeypatch.setattr(fonts, "_module", lambda: None)  # as with a matplotlib of another API: no quick path
    style.save(figure(), tmp_path, "plain", formats=["pdf"])
    quick, plain = (tmp_path / "quick.pdf").read_bytes(), (tmp_path / "plain.pdf").read_bytes()
    assert b"/FontFile2" in quick and quick == plain
