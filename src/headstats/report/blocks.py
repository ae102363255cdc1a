"""A report as a list of blocks, rendered to Markdown (figures linked) and self-contained HTML (inlined).

The report builder (:mod:`headstats.report.builder`) fills a :class:`Report` with headings, paragraphs,
tables and figures; this module only lays them out and formats numbers:

- every heading gets an anchor (the slug GitHub would give it, so that the links of the table of contents
  work in ``report.md`` on GitHub and in ``report.html``), and :meth:`Report.contents` places a table of
  contents built from them;
- long tables are folded (``<details>``) and link the CSV file that holds all their rows;
- numbers are formatted per column: counts as integers (also in a column that holds a missing value),
  p-values with two significant digits (scientific below 0.001, as the claims table), other numbers to 3
  decimals;
- every figure and table has one caption, printed once.

Figures are saved under ``figures/`` of the output folder as PNG with PDF and SVG beside it, at the preset's
resolution for print (300 dpi); the HTML inlines a screen copy of each PNG (:func:`screen_copy`, at most
:data:`SCREEN_DPI`, 256 colours), so that a report of many large pictures stays small enough to open and send.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from headstats.report.latex import (  # noqa: F401 (re-exported)
    P_VALUE_COLUMN, LatexTable, is_p_value_column, latex_escape, latex_table, write_latex)

#: Tables longer than this are folded (``<details>``) unless told otherwise.
FOLD_ROWS = 12


@dataclass
class Block:
    """One element of a report: ``heading``, ``text``, ``table``, ``figure``, ``html`` or ``contents``."""

    kind: str
    content: object
    caption: str = ""
    level: int = 2
    anchor: str = ""
    csv: str | None = None
    fold: bool = False
    n_rows: int = 0
    alt: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class Report:
    """Ordered blocks of a report."""

    title: str
    blocks: list[Block] = field(default_factory=list)
    #: Words put before every LaTeX table's caption (the protocol's name, from the builder).
    latex_caption: str = ""
    _anchors: set[str] = field(default_factory=set, repr=False)

    def heading(self, text: str, level: int = 2) -> str:
        """Add a heading; return its anchor (unique within the report)."""
        anchor = unique_slug(text, self._anchors)
        self.blocks.append(Block("heading", text, level=level, anchor=anchor))
        return anchor

    def text(self, text: str) -> None:
        """Add a paragraph (the Markdown subset of :func:`inline_markdown`)."""
        self.blocks.append(Block("text", text))

    def table(self, frame: pd.DataFrame, caption: str = "", max_rows: int = 40, *, csv: str | None = None,
              fold: bool | None = None, latex: str | LatexTable | None = None) -> None:
        """Add a table with one caption.

        Parameters
        ----------
        frame : DataFrame
            The rows to show (at most ``max_rows`` of them).
        caption : str
            What the table holds and what to look at.
        max_rows : int
            Rows shown; the caption says how many there are in all.
        csv : str, optional
            Relative path of the CSV file with all rows (linked under the table).
        fold : bool, optional
            Fold the table (``<details>``); default: when it has more than :data:`FOLD_ROWS` rows.
        latex : LatexTable or str, optional
            Also write every row as a LaTeX table (:mod:`headstats.report.latex`): its file, the paper's columns
            and its own caption (a file name alone: every column, this caption), prefixed by
            :attr:`latex_caption`, with the label ``tab:<file stem>``.
        """
        shown = frame.head(max_rows).copy()
        shown.columns.name = None  # a leftover pivot name would render as an extra header row
        fold = len(frame) > FOLD_ROWS if fold is None else fold
        block = Block("table", shown, caption=caption, csv=csv, fold=fold, n_rows=len(frame))
        if latex:
            whole = frame.copy()
            whole.columns.name = None
            spec = latex if isinstance(latex, LatexTable) else LatexTable(latex, caption)
            block.extra["latex"] = (spec, whole)
        self.blocks.append(block)

    def figure(self, path: str, caption: str = "", *, alt: str = "") -> None:
        """Add a figure (``path`` relative to the report, PNG; an SVG beside it is linked)."""
        self.blocks.append(Block("figure", path, caption=caption, alt=alt or Path(path).stem.replace("_", " ")))

    def html(self, fragment: str, note: str = "") -> None:
        """Add a raw, self-contained HTML fragment (an interactive view) to ``report.html``; ``report.md``
        shows ``note`` in its place."""
        self.blocks.append(Block("html", fragment, caption=note))

    def contents(self, levels: Sequence[int] = (2, 3)) -> None:
        """Place a table of contents here, listing the report's headings of ``levels``."""
        self.blocks.append(Block("contents", tuple(levels)))


# ------------------------------------------------------------------------------------------------ anchors

def slug(text: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation other than ``-`` and ``_`` dropped, spaces
    to hyphens."""
    text = re.sub(r"[^\w\- ]", "", str(text).strip().lower())
    return text.replace(" ", "-") or "section"


def unique_slug(text: str, taken: set[str]) -> str:
    """:func:`slug`, with ``-1``, ``-2``, ... appended (as GitHub does) when already taken."""
    base = candidate = slug(text)
    k = 0
    while candidate in taken:
        k += 1
        candidate = f"{base}-{k}"
    taken.add(candidate)
    return candidate


# --------------------------------------------------------------------------------------------- formatting

def _float_cell(value: float) -> str:
    if np.isnan(value):
        return ""
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        return f"{value:.2e}"
    return f"{value:.3f}"


def _cell(value) -> str:
    """One value on its own (see :func:`format_column` for whole columns)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return _float_cell(float(value))
    return str(value)


def format_p_value(value) -> str:
    """A p-value as the claims table prints it: two significant digits (``0.31``, ``0.0023``, ``1``), below 0.001 in
    scientific notation with two (``2.3e-05``); empty when missing; below 1e-300 (an underflow included) the
    bound ``< 1e-300``, never a number a double cannot hold (METHODS 5.4)."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return ""
    p = float(value)
    if 0 <= p < 1e-300:
        return "< 1e-300"
    return f"{p:.2g}" if p >= 1e-3 else f"{p:.1e}"


def _integral(series: pd.Series) -> bool:
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    finite = values[np.isfinite(values)]
    return finite.size > 0 and bool(np.all(finite == np.round(finite))) and bool(np.all(np.abs(finite) < 1e15))


def format_column(series: pd.Series) -> list[str]:
    """Format a column for display.

    - booleans as ``yes``/``no``;
    - p-value columns (:func:`is_p_value_column`) as :func:`format_p_value` writes them;
    - integer columns, and float columns whose values are all whole numbers (counts that became floats
      because the column holds a missing value), as integers;
    - other numbers to 3 decimals, very small or large ones in scientific notation;
    - missing values as empty cells.
    """
    if pd.api.types.is_bool_dtype(series.dtype):
        return [_cell(v) if not pd.isna(v) else "" for v in series]
    numeric = pd.api.types.is_numeric_dtype(series.dtype)
    if numeric and is_p_value_column(series.name):
        return [format_p_value(v) for v in series.astype(float)]
    if numeric and (pd.api.types.is_integer_dtype(series.dtype) or _integral(series)):
        return ["" if pd.isna(v) else ("inf" if np.isinf(v) else f"{int(v)}") for v in series.astype(float)]
    return [_cell(v) for v in series]


def format_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Every cell of ``frame`` as display text (:func:`format_column` per column)."""
    out = pd.DataFrame({i: format_column(frame.iloc[:, i]) for i in range(frame.shape[1])}, index=frame.index)
    out.columns = [str(c) for c in frame.columns]
    return out


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (values formatted by :func:`format_column`)."""
    shown = format_frame(frame)
    cell = lambda v: markdown_text(v, one_line=True).replace("|", "\\|")  # noqa: E731
    header = "| " + " | ".join(cell(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in shown.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def _rows_note(block: Block, *, code: bool = True) -> str:
    shown = len(block.content)
    where = (f"`{block.csv}`" if code else block.csv) if block.csv else "the CSV files"
    if block.n_rows > shown:
        return f"first {shown} of {block.n_rows} rows; all rows in {where}"
    return f"{block.n_rows} rows" + (f"; also in {where}" if block.csv else "")


# --------------------------------------------------------------------------------------------- Markdown

def _svg_of(path: str) -> str:
    return str(Path(path).with_suffix(".svg").as_posix())


def render_markdown(report: Report, root: Path | None = None) -> str:
    """The report as Markdown: figures linked (PNG, with a link to the SVG when ``root`` holds it)."""
    parts = [f"# {markdown_text(report.title, one_line=True)}"]
    for block in report.blocks:
        if block.kind == "heading":
            parts.append("#" * block.level + " " + markdown_text(block.content, one_line=True))
        elif block.kind == "text":
            parts.append(markdown_text(block.content))
        elif block.kind == "contents":
            lines = []
            for head, subs in _contents_tree(report, block.content):
                lines.append(f"- [{_link_text(head.content)}](#{head.anchor})")
                lines += [f"  - [{_link_text(b.content)}](#{b.anchor})" for b in subs]
            if lines:
                parts.append("**Contents**\n\n" + "\n".join(lines))
        elif block.kind == "table":
            parts.append(block.extra.get("markdown") or _markdown_table_block(block))
        elif block.kind == "html":
            if block.caption:
                parts.append(f"*{markdown_text(block.caption, one_line=True)}*")
        elif block.kind == "figure":
            svg = _svg_of(str(block.content))
            link = f" ([SVG]({svg}))" if root is not None and (Path(root) / svg).exists() else ""
            parts.append(f"![{_link_text(block.alt)}]({block.content})")
            if block.caption or link:
                parts.append(f"*{markdown_text(block.caption, one_line=True)}*{link}")
    return "\n\n".join(parts) + "\n"


def _link_text(text: object) -> str:
    """Text inside ``[...]`` of a link the writer makes: :func:`markdown_text` with brackets escaped."""
    return markdown_text(text, one_line=True).replace("[", "\\[").replace("]", "\\]")


def _markdown_table_block(block: Block) -> str:
    table = markdown_table(block.content)
    note = _rows_note(block)
    if block.fold:
        plain = _rows_note(block, code=False)
        summary = html.escape(f"{block.caption} ({plain})" if block.caption else plain)
        link = f"\n\nAll rows: [{block.csv}]({block.csv})" if block.csv else ""
        return f"<details><summary>{summary}</summary>\n\n{table}{link}\n\n</details>"
    caption = block.caption
    if block.n_rows > len(block.content) or block.csv:
        caption = f"{caption} ({note})" if caption else note
    caption = re.sub(r"`([^`]+\.csv)`", r"[\1](\1)", markdown_text(caption, one_line=True))
    return (f"*{caption}*\n\n" if caption else "") + table


# ------------------------------------------------------------------------------------------------- HTML

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1180px;margin:1.2em auto;padding:0 1em;
color:#222;line-height:1.4}
h1{margin:0 0 .3em}h2{border-bottom:1px solid #ddd;padding-bottom:.15em;margin-top:1.6em}h3{margin-top:1.3em}
table{border-collapse:collapse;font-size:0.85em;margin:0.3em 0 1em}th,td{border:1px solid #ccc;padding:2px 6px;
text-align:right}th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}
img{max-width:100%;height:auto}figure{margin:0.6em 0 1.2em}
.caption{color:#444;font-size:0.9em;margin:0.2em 0 0.4em}code{background:#f5f5f5;padding:0 3px}
details{margin:0.4em 0 1em}details>summary{cursor:pointer;color:#444;font-size:0.9em}
nav.toc{background:#f7f7f7;border:1px solid #e3e3e3;padding:.3em 1em;font-size:0.9em}
nav.toc ul{columns:3;margin:.2em 0;padding-left:1.1em}nav.toc ul ul{columns:1}nav.toc li{break-inside:avoid}
.verdict-yes{color:#006d2c;font-weight:600}.verdict-no{color:#b2182b;font-weight:600}
.verdict-cannot{color:#666;font-weight:600}
.scroll{overflow-x:auto;max-width:100%}.scroll table{margin-top:0}
td.text,th.text{text-align:left}td.text{min-width:6em;max-width:32em;overflow-wrap:anywhere}
.notice{background:#fff8e5;border-left:4px solid #e69f00;padding:.3em .8em;margin:.6em 0}
"""


#: Link targets the report may point to: a file of the run folder, an anchor, or a web page. Text can come from a
#: run folder made elsewhere (issue 21): any other scheme (``javascript:``, ``data:``, ``file:``) is shown as text.
_SAFE_TARGET = re.compile(r"(https?://[^\s<>'\"]+$|#[\w-]*$|(?![/.])(?!.*\.\.)[\w./-]+$)", re.IGNORECASE)
_MD_LINK = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")
_MD_CODE = re.compile(r"(`[^`]*`)")
#: A ``<`` that could open a tag, a comment, a declaration or an autolink (``p <= 0.05`` stays as it is).
_MD_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def _safe_link(match: re.Match) -> str:
    """``[text](target)`` as a link when the target is a run file, an anchor or http(s); else the text alone."""
    text, target = match.group(1), match.group(2)
    return f"<a href='{target}'>{text}</a>" if _SAFE_TARGET.match(target) else text


def markdown_text(text: object, *, one_line: bool = False) -> str:
    """Text for ``report.md`` (where text from data, ids and names lands among the builder's Markdown): a ``<``
    that could open a tag, comment or autolink, outside `code` spans, written as ``&lt;`` (no raw HTML, comment
    or autolink reaches the reader's renderer), links kept only to run files, anchors and http(s) (any other target shows its text
    alone), and, with ``one_line`` (a heading, a table cell), line breaks as spaces."""
    text = str(text)
    if one_line:
        text = " ".join(text.splitlines())
    parts = _MD_CODE.split(text)
    for k in range(0, len(parts), 2):
        part = _MD_TAG_START.sub("&lt;", parts[k])
        parts[k] = _MD_LINK.sub(lambda m: m.group(0) if _SAFE_TARGET.match(m.group(2)) else m.group(1), part)
    return "".join(parts)


def inline_markdown(text: str) -> str:
    """Escape text and turn the Markdown subset the report uses into HTML: `code`, **bold**, *italic*,
    [links](target), bullet lists and paragraphs."""
    escaped = html.escape(text)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    escaped = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", escaped)
    escaped = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"<i>\1</i>", escaped)
    escaped = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", _safe_link, escaped)
    out = []
    for para in escaped.split("\n\n"):
        lines = para.splitlines()
        if lines and all(line.startswith("- ") for line in lines):
            out.append("<ul>" + "".join(f"<li>{line[2:]}</li>" for line in lines) + "</ul>")
        elif lines:
            out.append(f"<p>{'<br>'.join(lines)}</p>")
    return "\n".join(out)


_inline_markdown = inline_markdown  # the name before it was public


def _inline(text: str) -> str:
    """Markdown of one line (a caption, a summary) as HTML without the paragraph around it."""
    return inline_markdown(text).removeprefix("<p>").removesuffix("</p>") if text else ""


def _table_html(frame: pd.DataFrame) -> str:
    """A table as HTML: numbers right-aligned, text left-aligned and wrapping (class ``text``), cells formatted
    by :func:`format_column` and escaped."""
    shown = format_frame(frame)
    text = [not pd.api.types.is_numeric_dtype(frame.iloc[:, k].dtype) or pd.api.types.is_bool_dtype(
        frame.iloc[:, k].dtype) for k in range(frame.shape[1])]
    cls = [" class='text'" if t else "" for t in text]
    head = "".join(f"<th{c}>{html.escape(str(name))}</th>" for name, c in zip(frame.columns, cls))
    rows = "".join("<tr>" + "".join(f"<td{c}>{html.escape(v)}</td>" for v, c in zip(row, cls)) + "</tr>\n"
                   for row in shown.itertuples(index=False))
    return f"<table class='dataframe'>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}</tbody>\n</table>"


def _html_table(block: Block) -> str:
    # a wide table scrolls sideways in its own box instead of running past the page
    table = "<div class='scroll'>" + _table_html(block.content) + "</div>"
    note = html.escape(_rows_note(block, code=False))
    link = f" <a href='{html.escape(block.csv)}'>{html.escape(block.csv)}</a>" if block.csv else ""
    caption = _inline(block.caption)
    if block.fold:
        summary = f"{caption} ({note})" if caption else note
        return f"<details><summary>{summary}</summary>\n{table}\n<p class='caption'>All rows:{link}</p></details>"
    if block.n_rows > len(block.content) or block.csv:
        caption = f"{caption} ({note})" if caption else note
    return (f"<p class='caption'>{caption}</p>\n" if caption else "") + table


def _contents_tree(report: Report, levels: Sequence[int]) -> list[tuple[Block, list[Block]]]:
    """Headings of ``levels`` as (top-level heading, its sub-headings)."""
    entries = [b for b in report.blocks if b.kind == "heading" and b.level in levels]
    top = min((b.level for b in entries), default=2)
    tree: list[tuple[Block, list[Block]]] = []
    for b in entries:
        if b.level == top or not tree:
            tree.append((b, []))
        else:
            tree[-1][1].append(b)
    return tree


def _html_contents(report: Report, levels: Sequence[int]) -> str:
    def link(b: Block) -> str:
        return f"<a href='#{b.anchor}'>{html.escape(str(b.content))}</a>"

    items = []
    for head, subs in _contents_tree(report, levels):
        inner = "<ul>" + "".join(f"<li>{link(b)}</li>" for b in subs) + "</ul>" if subs else ""
        items.append(f"<li>{link(head)}{inner}</li>")
    return f"<nav class='toc'><b>Contents</b><ul>{''.join(items)}</ul></nav>" if items else ""


def render_html(report: Report, root: Path) -> str:
    """Self-contained HTML: figures are inlined as base64 PNG (their :func:`screen_copy`), so the file can be sent
    alone and opens offline.

    Links to the CSV and SVG files are relative: they work while the file sits in its run folder.
    """
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
             f"<title>{html.escape(report.title)}</title>",
             f"<style>{_CSS}</style></head><body><h1>{html.escape(report.title)}</h1>"]
    for block in report.blocks:
        if block.kind == "heading":
            parts.append(f"<h{block.level} id='{block.anchor}'>{html.escape(str(block.content))}</h{block.level}>")
        elif block.kind == "text":
            parts.append(_verdicts(inline_markdown(str(block.content))))
        elif block.kind == "contents":
            parts.append(_html_contents(report, block.content))
        elif block.kind == "table":
            parts.append(block.extra.get("html") or _html_table(block))
        elif block.kind == "html":
            parts.append(str(block.content))
        elif block.kind == "figure":
            png = (root / str(block.content)).read_bytes()
            data = base64.b64encode(screen_copy_of(root / str(block.content), png)).decode()
            svg = _svg_of(str(block.content))
            link = f" <a href='{html.escape(svg)}'>SVG</a>" if (root / svg).exists() else ""
            caption = _inline(block.caption)
            parts.append(f"<figure><img alt='{html.escape(block.alt)}'{_css_width(png)} "
                         f"src='data:image/png;base64,{data}'>"
                         f"<figcaption class='caption'>{caption}{link}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


#: Resolution of the figures the HTML shows, in pixels per inch of the printed figure: two screen pixels per CSS
#: pixel (1/96 in), sharp on a high-density screen; the files in ``figures/`` keep the preset's dpi for print.
SCREEN_DPI = 192


def needs_screen_copy(dpi: float, screen_dpi: float = SCREEN_DPI) -> bool:
    """Whether a PNG written at ``dpi`` is finer than the screen copy the HTML shows."""
    return dpi > screen_dpi * 1.01


def _on_white(image):
    """A PIL image as RGB on white (its transparency composited)."""
    from PIL import Image

    rgba = image.convert("RGBA")
    return Image.alpha_composite(Image.new("RGBA", rgba.size, "white"), rgba).convert("RGB")


def _palette(rgb, dpi: float) -> bytes:
    """An RGB PIL image in 256 colours (a palette PNG: figures hold few colours, and a heat map's colour map
    has 256), its resolution recorded as ``dpi``."""
    from PIL import Image

    few = rgb.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    out = io.BytesIO()
    few.save(out, format="PNG", dpi=(dpi, dpi))
    return out.getvalue()


#: Screen copies drawn by matplotlib with their figure (:func:`remember_screen_copy`): absolute PNG path ->
#: (SHA-256 of the print PNG they were drawn with, the copy's bytes).
_SCREEN_COPIES: dict[str, tuple[str, bytes]] = {}


def remember_screen_copy(path: Path, copy: bytes) -> None:
    """Keep ``copy`` as the screen copy of the PNG file ``path`` (as it is now), for :func:`render_html`."""
    png = Path(path).read_bytes()
    _SCREEN_COPIES[str(Path(path).resolve())] = (hashlib.sha256(png).hexdigest(), copy)


def screen_copy_of(path: Path, png: bytes) -> bytes:
    """The screen copy of the PNG file ``path`` (bytes ``png``): the one matplotlib drew with the figure when
    that file has not changed since, else :func:`screen_copy` of its bytes."""
    kept = _SCREEN_COPIES.get(str(Path(path).resolve()))
    if kept is not None and kept[0] == hashlib.sha256(png).hexdigest():
        return kept[1]
    return screen_copy(png)


def forget_screen_copies(root: Path) -> None:
    """Drop the kept screen copies of the figures under ``root`` (its report is written)."""
    top = str(Path(root).resolve()) + os.sep
    for key in [k for k in _SCREEN_COPIES if k.startswith(top)]:
        del _SCREEN_COPIES[key]


def screen_copy(png: bytes, dpi: float = SCREEN_DPI) -> bytes:
    """A PNG for the screen from a print PNG's bytes alone: resampled to ``dpi`` pixels per printed inch when
    it is finer (Lanczos), then in 256 colours on white (:func:`_palette`). Shown at the same size (:func:`_css_width` reads the
    original); a PNG at ``dpi`` or coarser, or bytes that are not a PNG, are returned as they are. The same
    bytes give the same copy. The report's own figures do not need it: their copy is drawn by matplotlib at
    ``dpi`` when the figure is saved (:func:`save_figure`, :mod:`headstats.report.figures`); this is for a
    PNG written otherwise.
    """
    own = png_dpi(png, default=0.0)
    if png[:8] != b"\x89PNG\r\n\x1a\n" or not needs_screen_copy(own, dpi):
        return png
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        scale = dpi / own
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        return _palette(_on_white(image).resize(size, Image.Resampling.LANCZOS, reducing_gap=2.0), dpi)


class _Pixels:
    """A file object for ``savefig(format="rgba")`` that keeps what the figure's canvas writes, its pixels as
    an (height, width, 4) array (matplotlib writes the renderer's buffer, which has that shape)."""

    def __init__(self) -> None:
        self.array: np.ndarray | None = None

    def seek(self, *args) -> int:
        return 0

    def write(self, data) -> int:
        array = np.asarray(data)
        if array.ndim != 3 or array.shape[-1] != 4:
            raise TypeError(f"expected the canvas' (height, width, 4) buffer, got an array of shape {array.shape}")
        self.array = array.copy()
        return array.nbytes


def draw_screen_copy(save: Callable[..., object], dpi: float) -> bytes | None:
    """``save(screen=file, screen_dpi=SCREEN_DPI)`` (a figure's save, which writes the figure's RGBA pixels at
    that dpi into ``file``: :func:`headstats.plots.style.save`) and the palette copy of those pixels; None when
    the print PNG at ``dpi`` is not finer than the screen (it is shown as it is). The pixels go straight to the
    palette copy, with no PNG written and read back between."""
    if not needs_screen_copy(dpi):
        save(screen=None, screen_dpi=None)
        return None
    from PIL import Image

    pixels = _Pixels()
    save(screen=pixels, screen_dpi=SCREEN_DPI)
    return _palette(_on_white(Image.fromarray(pixels.array, "RGBA")), SCREEN_DPI)


def _css_width(png: bytes) -> str:
    """`` width='...'`` that shows a PNG at its printed size (96 CSS px per inch), so that text has the same
    size in every figure; empty when the bytes are not a PNG."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 24:
        return ""
    width = int.from_bytes(png[16:20], "big")
    return f" width='{round(width * 96 / png_dpi(png))}'"


def png_dpi(png: bytes, default: float = 96.0) -> float:
    """The horizontal resolution a PNG records (its ``pHYs`` chunk, pixels per metre), in dots per inch;
    ``default`` when it records none."""
    k = 8
    while k + 8 <= len(png):
        size, kind = int.from_bytes(png[k:k + 4], "big"), png[k + 4:k + 8]
        if kind == b"pHYs" and size >= 9 and png[k + 16] == 1:  # unit: metre
            return int.from_bytes(png[k + 8:k + 12], "big") * 0.0254
        if kind in (b"IDAT", b"IEND"):
            break
        k += 12 + size
    return default


def _verdicts(fragment: str) -> str:
    """Colour the verdict words of the claims (``<b>supported</b>``, ``<b>contradicted</b>``, ...)."""
    for word, kind in (("supported", "yes"), ("contradicted", "no"), ("not shown", "cannot"),
                       ("cannot tell", "cannot"), ("holds", "yes"), ("does not hold", "no")):
        fragment = fragment.replace(f"<b>{word}</b>", f"<b class='verdict-{kind}'>{word}</b>")
    return fragment


# ---------------------------------------------------------------------------------------------- figures

def figure_tag(*names: str) -> str:
    """A file-name part for figures of ``names`` (model, data set, role), unique for distinct names.

    Characters other than letters, digits, ``.``, ``-`` and ``_`` become ``_`` and letters are lower-cased;
    when anything was changed (or the result is long) a short hash of the original names is appended, so
    that ``a/b``, ``a_b`` and ``A_b`` never share a figure file, even on a file system that ignores case.
    """
    raw = "__".join(str(n) for n in names)
    slug = re.sub(r"[^A-Za-z0-9._-]", "_", raw).lower()[:80]
    if slug != raw:
        slug += "-" + hashlib.sha1(raw.encode("utf-8")).hexdigest()[:8]
    return slug


def save_figure(fig, root: Path, name: str, *, formats: Sequence[str] | None = None) -> str:
    """Save a Figure as ``figures/<name>.png`` under ``root``, with ``figures/<name>.svg`` beside it.

    Parameters
    ----------
    fig : Figure
    root : Path
        The report's folder.
    name : str
        File name without extension (see :func:`figure_tag`).
    formats : sequence of str, optional
        Formats to write; PNG (which the report shows) is always among them. Default PNG and SVG.

    Returns
    -------
    str
        The PNG's path relative to ``root``.

    Raises
    ------
    RuntimeError
        If that figure file was already written in this report (two figures must never share a file).
    """
    from headstats.plots import style

    formats = list(dict.fromkeys(["png", *(formats if formats is not None else style.preset().formats)]))
    folder = Path(root) / "figures"
    folder.mkdir(exist_ok=True)
    rel = f"figures/{name}.png"
    if (Path(root) / rel).exists():
        raise RuntimeError(f"figure {rel} written twice; figure names must be unique (use figure_tag)")
    copy = draw_screen_copy(lambda **screen: style.save(fig, folder, name, formats=formats, **screen),
                            style.preset().dpi)
    if copy is not None:
        remember_screen_copy(Path(root) / rel, copy)
    return rel


def render_tables(report: Report, *, html_too: bool = True) -> None:
    """Format every table of the report now (Markdown, and HTML if asked), for :func:`write_report` to use.

    Tables need no figure file: the report builder formats them while worker processes still draw the
    figures (:mod:`headstats.report.figures`), so that writing the report afterwards only places the figures.
    A table changed after this is formatted again only if its block's ``extra`` is cleared.
    """
    for block in report.blocks:
        if block.kind == "table":
            block.extra["markdown"] = _markdown_table_block(block)
            if html_too:
                block.extra["html"] = _html_table(block)


def write_report(report: Report, root: Path, *, html_too: bool = True) -> None:
    """Write ``report.md``, ``report.html`` if asked, and the LaTeX file of every table that asks for one, into
    ``root``."""
    root = Path(root)
    for block in report.blocks:
        if block.kind == "table" and "latex" in block.extra:
            spec, whole = block.extra["latex"]
            (root / spec.file).write_text(write_latex(spec, whole, report.latex_caption), encoding="utf-8")
    (root / "report.md").write_text(render_markdown(report, root), encoding="utf-8")
    if html_too:
        (root / "report.html").write_text(render_html(report, root), encoding="utf-8")
    forget_screen_copies(root)
