"""A report as a list of blocks, rendered to Markdown (figures linked) and self-contained HTML (inlined).

The study runner (:mod:`headstats.study`) fills a :class:`Report` with headings, paragraphs, tables and
figures; this module only renders. Figures are saved under ``figures/`` of the output folder.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd


@dataclass
class Block:
    kind: str  # "heading", "text", "table", "figure"
    content: object
    caption: str = ""
    level: int = 2


@dataclass
class Report:
    """Ordered blocks of a report."""

    title: str
    blocks: list[Block] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        self.blocks.append(Block("heading", text, level=level))

    def text(self, text: str) -> None:
        self.blocks.append(Block("text", text))

    def table(self, frame: pd.DataFrame, caption: str = "", max_rows: int = 40) -> None:
        shown = frame.head(max_rows).copy()
        shown.columns.name = None  # a leftover pivot name would render as an extra header row
        self.blocks.append(Block("table", shown, caption=_rows_caption(caption, frame, max_rows)))

    def figure(self, path: str, caption: str = "") -> None:
        self.blocks.append(Block("figure", path, caption=caption))


def _rows_caption(caption: str, frame: pd.DataFrame, max_rows: int) -> str:
    if len(frame) > max_rows:
        return f"{caption} (first {max_rows} of {len(frame)} rows; all rows in the CSV files)".strip()
    return caption


def _cell(value) -> str:
    if isinstance(value, (float, np.floating)):
        if np.isnan(value):
            return ""
        if np.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
            return f"{value:.2e}"
        if float(value).is_integer() and abs(value) >= 10:
            return f"{value:.0f}"
        return f"{value:.3f}"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    return str(value)


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (numbers to 3 decimals, tiny p-values in e-notation)."""
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(_cell(v).replace("|", "\\|") for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def render_markdown(report: Report) -> str:
    parts = [f"# {report.title}"]
    for block in report.blocks:
        if block.kind == "heading":
            parts.append("#" * block.level + " " + str(block.content))
        elif block.kind == "text":
            parts.append(str(block.content))
        elif block.kind == "table":
            if block.caption:
                parts.append(f"*{block.caption}*")
            parts.append(markdown_table(block.content))
        elif block.kind == "figure":
            parts.append(f"![{block.caption}]({block.content})")
            if block.caption:
                parts.append(f"*{block.caption}*")
    return "\n\n".join(parts) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 1.5em}th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}img{max-width:100%}
.caption{color:#555;font-style:italic;font-size:0.9em}code{background:#f5f5f5;padding:0 3px}
"""


def _inline_markdown(text: str) -> str:
    """Escape text and turn `code` and **bold** spans into HTML (the subset the report uses)."""
    import re

    escaped = html.escape(text)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    escaped = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", escaped)
    paragraphs = escaped.split("\n\n")
    out = []
    for para in paragraphs:
        lines = para.splitlines()
        if lines and all(line.startswith("- ") for line in lines):
            out.append("<ul>" + "".join(f"<li>{line[2:]}</li>" for line in lines) + "</ul>")
        else:
            out.append(f"<p>{'<br>'.join(lines)}</p>")
    return "\n".join(out)


def render_html(report: Report, root: Path) -> str:
    """Self-contained HTML: figures are inlined as base64 PNG, so the file can be sent alone."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(report.title)}</title>",
             f"<style>{_CSS}</style></head><body><h1>{html.escape(report.title)}</h1>"]
    for block in report.blocks:
        if block.kind == "heading":
            parts.append(f"<h{block.level}>{html.escape(str(block.content))}</h{block.level}>")
        elif block.kind == "text":
            parts.append(_inline_markdown(str(block.content)))
        elif block.kind == "table":
            if block.caption:
                parts.append(f"<p class='caption'>{html.escape(block.caption)}</p>")
            shown = block.content.map(_cell) if hasattr(block.content, "map") else block.content
            parts.append(shown.to_html(index=False, border=0, escape=True))
        elif block.kind == "figure":
            data = base64.b64encode((root / str(block.content)).read_bytes()).decode()
            parts.append(f"<figure><img alt='{html.escape(block.caption)}' src='data:image/png;base64,{data}'>"
                         f"<figcaption class='caption'>{html.escape(block.caption)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


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


def save_figure(fig, root: Path, name: str) -> str:
    """Save a Figure as ``figures/<name>.png`` under ``root``; return the relative path.

    Raises
    ------
    RuntimeError
        If that figure file was already written in this report (two figures must never share a file).
    """
    folder = root / "figures"
    folder.mkdir(exist_ok=True)
    rel = f"figures/{name}.png"
    if (root / rel).exists():
        raise RuntimeError(f"figure {rel} written twice; figure names must be unique (use figure_tag)")
    fig.savefig(root / rel, dpi=110, bbox_inches="tight")
    return rel


def write_report(report: Report, root: Path, *, html_too: bool = True) -> None:
    """Write ``report.md`` and, if asked, ``report.html`` into ``root``."""
    (root / "report.md").write_text(render_markdown(report), encoding="utf-8")
    if html_too:
        (root / "report.html").write_text(render_html(report, root), encoding="utf-8")
