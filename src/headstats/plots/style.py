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
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

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
    "syntactic:amod": "#AA4499",   # purple
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

#: Resolution of the PNG files shown in the report (the SVG beside each is resolution-free, for papers).
PNG_DPI = 120
FORMATS = ("png", "svg")

RC = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "figure.titlesize": 11,
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


def role_family(role: str) -> str:
    """The paper's kind of a role: ``delimiter_cls`` -> ``delimiter``, ``syntactic:nsubj`` -> ``syntactic``."""
    if role.startswith("delimiter"):
        return "delimiter"
    if role.startswith("syntactic"):
        return "syntactic"
    return role


def save(fig: Figure, folder: Path, name: str, *, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Save ``fig`` as ``folder/name.<fmt>`` for each format (PNG at :data:`PNG_DPI`); return the paths.

    The first file's drawing lays the figure out (its layout engine, e.g. ``layout="constrained"``) or finds
    its tight bounding box; the other files keep that layout and box, so every format shows the same figure
    and each of them costs one draw instead of two (matplotlib draws once more before saving a figure with a
    layout engine or a tight box).
    """
    paths = []
    with context():
        bbox = None if fig.get_layout_engine() is not None else "tight"
        for k, fmt in enumerate(formats):
            path = Path(folder) / f"{name}.{fmt}"
            fig.savefig(path, format=fmt, dpi=PNG_DPI, metadata=_metadata(fmt), bbox_inches=bbox)
            paths.append(path)
            if k == 0 and len(formats) > 1:
                if bbox == "tight":
                    bbox = fig.get_tightbbox().padded(matplotlib.rcParams["savefig.pad_inches"])
                with matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
                    fig.set_layout_engine(None)  # laid out: keep the positions (no engine, not a placeholder)
    return paths


def _metadata(fmt: str) -> dict | None:
    # no creation date in the files, so that rebuilding a report does not change unchanged figures
    if fmt == "svg":
        return {"Date": None}
    if fmt == "png":
        return {"Software": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return None
