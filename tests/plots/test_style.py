"""The figure style: fixed colour-blind-safe role colours, role order, saving PNG + SVG, no leaked rcParams."""

from __future__ import annotations

import matplotlib
import matplotlib.colors as mcolors
from matplotlib.figure import Figure

from headstats.plots import style


def test_builtin_roles_have_fixed_distinct_palette_colours():
    colours = style.role_colours(style.ROLE_ORDER)
    assert len(set(colours.values())) == len(style.ROLE_ORDER) == 10
    palette = set(style.TOL_MUTED) | {style.DARK_GREY}
    assert set(colours.values()) <= palette
    # the same role has the same colour whatever else is drawn
    assert style.role_colours(["syntactic:amod"])["syntactic:amod"] == colours["syntactic:amod"]
    assert style.role_colours(["delimiter_cls", "local"])["delimiter_cls"] == colours["delimiter_cls"]


def test_other_roles_take_unused_colours():
    colours = style.role_colours(["local", "previous", "syntactic:det"])
    assert colours["previous"] != colours["syntactic:det"]
    assert colours["local"] not in (colours["previous"], colours["syntactic:det"])


def test_order_roles_and_families():
    assert style.order_roles(["syntactic:det", "block", "zeta", "syntactic:nsubj", "local", "local"]) == [
        "local", "block", "syntactic:nsubj", "syntactic:det", "zeta"]
    assert [style.role_family(r) for r in ["delimiter_cls", "delimiter", "syntactic:amod", "block"]] == [
        "delimiter", "delimiter", "syntactic", "block"]


def test_series_colours_are_okabe_ito():
    assert set(style.SERIES) <= set(style.OKABE_ITO.values())


def test_save_writes_png_and_svg_with_text_as_text(tmp_path):
    fig = Figure(figsize=(2, 1.5), layout="constrained")
    fig.add_subplot().set_title("a title")
    paths = style.save(fig, tmp_path, "f")
    assert [p.name for p in paths] == ["f.png", "f.svg"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = paths[1].read_text()
    assert "a title" in svg  # svg.fonttype none: text stays searchable and editable
    width = int.from_bytes(paths[0].read_bytes()[16:20], "big")
    assert abs(width - 2 * style.PNG_DPI) <= 2


def test_styled_leaves_the_users_settings_alone():
    before = matplotlib.rcParams["font.size"]

    @style.styled
    def draw():
        return matplotlib.rcParams["font.size"]

    assert draw() == style.RC["font.size"]
    assert matplotlib.rcParams["font.size"] == before
    assert mcolors.to_hex(style.RC["axes.prop_cycle"].by_key()["color"][0]) == style.SERIES[0].lower()
