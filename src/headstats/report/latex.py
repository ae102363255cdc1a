"""The report's tables as LaTeX a paper can ``\\input``: booktabs rules, readable headers, numbers as a paper prints
them, and a layout that fits ``\\textwidth``.

Each table that asks for a LaTeX file names it with a :class:`LatexTable`: the file, the paper's columns (with their
headers) and its own caption, whose first sentence says how its numbers were tested. :func:`latex_table` then

- formats numbers as a paper prints them: counts as integers, p-values with two significant digits
  (``0.0047``; ``$2.3\\times10^{-5}$`` below 0.001; ``$<10^{-300}$`` below what a double holds), other numbers with
  the decimals their column needs, a true minus sign, never ``e``-notation;
- escapes every character LaTeX treats specially (``\\ % _ & $ # { } ~ ^``, ``< > |`` that OT1 fonts print as other
  glyphs, and brackets, so that a row beginning ``[CLS]`` after ``\\\\`` is not read as the optional argument of
  ``\\\\``), and writes Greek letters and maths symbols in maths mode;
- lays the table out for the text width of a one-column ``article`` (:data:`TEXTWIDTH_PT`, which fits ``table*``
  in two-column styles): a long header breaks over two lines, the table steps down from ``\\small`` to
  ``\\footnotesize`` and ``\\scriptsize`` and narrows its column gaps, long text columns wrap (ragged right), and only
  a table still too wide after all that (many data sets side by side) is scaled with ``\\resizebox`` (package
  ``graphicx``).

The file needs ``\\usepackage{booktabs}`` (and ``graphicx`` for a scaled table; its first line says so).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: ``\textwidth`` of the standard ``article`` class at 10 pt, in TeX points.
TEXTWIDTH_PT = 345.0
#: Type sizes tried in turn: (command, width of the estimate's em in pt). Computer Modern's smaller design sizes
#: are wider for their size (digits 0.514 em in cmr9, 0.531 in cmr8, 0.569 in cmr7 against 0.5 in cmr10), so
#: the em of 9, 8 and 7 pt type is counted 1.03, 1.06 and 1.14 times wider (a clark2019 probes table laid out at
#: 7 pt without it was 348.8 pt against the 345 estimated to fit).
SIZES = (("\\small", 9.0 * 1.03), ("\\footnotesize", 8.0 * 1.06), ("\\scriptsize", 7.0 * 1.14))
#: Column gaps tried in turn (``\tabcolsep``, pt; LaTeX's default is 6).
GAPS = (6.0, 4.0, 3.0)
#: Narrowest width of a wrapped text column, in em.
_MIN_WRAP_EM = 6.0


#: Columns that hold p-values (the report's tables and the LaTeX ones format them as p-values).
P_VALUE_COLUMN = re.compile(r"^(p|p_.*|.*_p|pvalue|p_value)$")


def is_p_value_column(name: object) -> bool:
    """Whether a column holds p-values (``p``, ``p_unc``, ``p_corr``, ``min_p``, ...)."""
    return bool(P_VALUE_COLUMN.match(str(name)))


@dataclass(frozen=True)
class LatexTable:
    """How a report table is written as LaTeX.

    Attributes
    ----------
    file : str
        The ``.tex`` file, relative to the report's folder; the label is ``tab:<stem>``.
    caption : str
        The caption; its first sentence says what was tested and how (the Markdown subset: `code`).
    columns : mapping, optional
        Column of the table -> its header in the paper, in the paper's order (default: every column, headers
        from :func:`header_text`).
    frame : DataFrame, optional
        The rows to write, when the paper's table is not the report's (e.g. an interval in one column).
    """

    file: str
    caption: str
    columns: Mapping[str, str] | None = None
    frame: pd.DataFrame | None = None


# ------------------------------------------------------------------------------------------------- text

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
            "[": "{[}", "]": "{]}", "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}
_SYMBOLS = {"≤": r"$\leq$", "≥": r"$\geq$", "×": r"$\times$", "−": r"$-$", "±": r"$\pm$", "≈": r"$\approx$",
            "≠": r"$\neq$", "→": r"$\rightarrow$", "←": r"$\leftarrow$", "∞": r"$\infty$", "·": r"$\cdot$",
            "…": r"\ldots{}", "α": r"$\alpha$", "β": r"$\beta$", "τ": r"$\tau$", "μ": r"$\mu$", "σ": r"$\sigma$",
            "ρ": r"$\rho$", "χ": r"$\chi$", "ε": r"$\varepsilon$", "δ": r"$\delta$", "η": r"$\eta$",
            "²": r"$^2$", "√": r"$\surd$", "\u00a0": "~"}


def latex_escape(text: object) -> str:
    """``text`` safe in LaTeX text mode: special characters escaped (``a_b & 5%`` -> ``a\\_b \\& 5\\%``),
    brackets braced (``[CLS]`` -> ``{[}CLS{]}``), maths symbols in maths mode; characters beyond Latin-1 that
    have no such form become ``?`` (pdflatex would stop on them)."""
    out = []
    for c in str(text):
        if c in _SPECIAL:
            out.append(_SPECIAL[c])
        elif c in _SYMBOLS:
            out.append(_SYMBOLS[c])
        elif ord(c) < 0x250 or c in "–—‘’“”":
            out.append(c)
        else:
            out.append("?")
    return "".join(out)


_E_NOTATION = re.compile(r"(?<![\w.])(-?\d(?:\.\d+)?)e([+-]?\d+)\b")


def latex_text_cell(text: object) -> str:
    """A text cell: escaped (:func:`latex_escape`), a number in e-notation within it (``p = 1.4e-17``) written as
    a power of ten (``$1.4\\times10^{-17}$``)."""
    return _E_NOTATION.sub(lambda m: f"${m.group(1)}\\times10^{{{int(m.group(2))}}}$", latex_escape(text))


_CODE = re.compile(r"`([^`]+)`")


def latex_caption(text: str) -> str:
    """A caption in the report's Markdown subset as LaTeX: `code` as ``\\texttt``, ``**bold**`` and ``*italic*``
    marks dropped, the rest escaped."""
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", str(text))
    parts = _CODE.split(text)
    return "".join(latex_escape(p) if k % 2 == 0 else f"\\texttt{{{latex_escape(p)}}}" for k, p in enumerate(parts))


#: Words of column names as a paper writes them in a header.
_HEADER_WORDS = {"p": "$p$", "n": "$n$", "ci": "CI", "uas": "UAS", "corr": "corr.", "unc": "unc.", "vs": "vs.",
                 "cls": "{[}CLS{]}", "sep": "{[}SEP{]}", "n_heads": "heads", "n_words": "words", "dataset": "data set",
                 "accuracy": "acc.", "tau": r"$\tau$", "sd": "SD", "id": "ID"}


def header_text(name: object) -> str:
    """A column name as a paper's header: ``p_corr_vs_right_branching`` -> ``$p$ corr. vs. right branching``,
    ``n_words`` -> ``words``, the first letter upper case (LaTeX)."""
    name = str(name)
    if name in _HEADER_WORDS:
        words = [_HEADER_WORDS[name]]
    else:
        words = [_HEADER_WORDS.get(w, latex_escape(w)) for w in name.split("_") if w]
    text = " ".join(words) or latex_escape(name)
    return text[0].upper() + text[1:] if text[:1].isalpha() else text


# ---------------------------------------------------------------------------------------------- numbers

def _power_of_ten(value: float, digits: int = 2) -> str:
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"${mantissa}\\times10^{{{int(exponent)}}}$"


def latex_p_value(value: object) -> str:
    """A p-value as a paper prints it: two significant digits (``0.047``, ``0.0047``), ``$2.3\\times10^{-5}$``
    below 0.001, ``$<10^{-300}$`` at or below what a double can tell from 0; empty when missing."""
    if value is None or pd.isna(value):
        return ""
    p = float(value)
    if p <= 1e-300:
        return "$<10^{-300}$"
    if p < 1e-3:
        return _power_of_ten(p)
    return f"{p:.2g}" if p < 1 else "1"


def _decimals(values: np.ndarray) -> int:
    """Decimals for a column of numbers: 3 below 10, then fewer as the numbers grow (3 significant digits)."""
    finite = np.abs(values[np.isfinite(values)])
    top = float(finite.max()) if finite.size else 0.0
    return 3 if top < 10 else 2 if top < 100 else 1 if top < 1000 else 0


def _number(value: float, decimals: int) -> str:
    if not np.isfinite(value):
        return "" if np.isnan(value) else ("$\\infty$" if value > 0 else "$-\\infty$")
    if value != 0 and abs(value) < 0.5 * 10.0 ** -decimals:
        return _power_of_ten(value)
    if abs(value) >= 1e6:
        return _power_of_ten(value)
    text = f"{value:,.{decimals}f}"
    return "$-$" + text[1:] if text.startswith("-") else text


def latex_column(series: pd.Series) -> list[str]:
    """A column's cells as a paper prints them (see the module's docstring); text escaped."""
    if pd.api.types.is_bool_dtype(series.dtype):
        return ["" if pd.isna(v) else ("yes" if v else "no") for v in series]
    if not pd.api.types.is_numeric_dtype(series.dtype):
        return ["" if (v is None or (not isinstance(v, str) and pd.isna(v))) else latex_text_cell(v) for v in series]
    values = series.astype(float).to_numpy()
    if is_p_value_column(series.name):
        return [latex_p_value(v) for v in values]
    finite = values[np.isfinite(values)]
    if pd.api.types.is_integer_dtype(series.dtype) or (finite.size and np.all(finite == np.round(finite))
                                                       and np.all(np.abs(finite) < 1e15)):
        return [_number(v, 0) for v in values]
    decimals = _decimals(values)
    return [_number(v, decimals) for v in values]


# ----------------------------------------------------------------------------------------------- layout

#: Width of characters in em of the font, by kind (Computer Modern: capitals 0.68-1.0, lower case 0.28-0.83,
#: most near 0.5, digits 0.5), taken at or above the mean so that an estimate never falls short.
_CHAR_EM = {"upper": 0.75, "lower": 0.5, "digit": 0.5, "space": 0.34, "other": 0.5}
#: Share of the text width a table is laid out for (the estimate's margin).
_FILL = 0.97


def _visible_text(cell: str) -> str:
    """What a LaTeX cell prints, roughly: commands and braces dropped, a maths power counted short."""
    text = re.sub(r"\\times10\^\{(-?\d+)\}", r"xx10\1", cell)  # the times sign and its spaces: about 1.2 em
    text = re.sub(r"\\text(backslash|asciitilde|asciicircum|less|greater|bar)\{\}", "x", text)
    text = re.sub(r"\\let\\\\\\tabularnewline|\\[a-zA-Z]+", "", text)
    return re.sub(r"[{}$\\^]", "", text)


def _visible_chars(cell: str) -> int:
    """Characters a LaTeX cell prints, roughly (:func:`_visible_text`)."""
    return len(_visible_text(cell))


def _width_em(cell: str) -> float:
    """Width of a cell in em of its font (:data:`_CHAR_EM`)."""
    def kind(c: str) -> str:
        return ("upper" if c.isupper() else "lower" if c.isalpha() else "digit" if c.isdigit()
                else "space" if c.isspace() else "other")

    return sum(_CHAR_EM[kind(c)] for c in _visible_text(cell))


def _header_lines(header: str, width_chars: int) -> list[str]:
    """A header on one line, or on two (broken at the space or colon nearest its middle) when it is longer than
    the column's cells."""
    if _visible_chars(header) <= max(width_chars, 6):
        return [header]
    cuts = [m.end() for m in re.finditer(r" |:|\\_", header) if header[:m.start()].count("$") % 2 == 0]
    if not cuts:
        return [header]
    middle = len(header) / 2
    cut = min(cuts, key=lambda k: abs(k - middle))
    return [header[:cut].rstrip(), header[cut:].lstrip()]


@dataclass
class _Column:
    header: list[str]
    cells: list[str]
    numeric: bool

    def em(self) -> float:
        """The natural width, in em."""
        return max([_width_em(c) for c in self.cells] + [_width_em(h) for h in self.header] + [0.5])

    def longest_word(self) -> float:
        """The widest word, in em (a wrapped column is never narrower)."""
        words = [w for c in self.cells for w in re.split(r"\s+", c) if w]
        return max([_width_em(w) for w in words] + [_width_em(h) for h in self.header] + [0.5])


def _wrap(columns: list[_Column], natural: list[float], room: float, pt: float) -> dict[int, float] | None:
    """Widths (pt) of the text columns that wrap so that every column fits ``room``, or None when even their
    narrowest (their longest word) does not: one cap for all text columns, found by bisection (water-filling),
    so that the longest texts share the room and short ones keep their natural width."""
    text = [k for k, c in enumerate(columns) if not c.numeric]
    floor = {k: min(natural[k], max(columns[k].longest_word(), _MIN_WRAP_EM) * pt) for k in text}
    fixed = room - sum(natural[k] for k in range(len(columns)) if k not in floor)

    def width(cap: float) -> float:
        return sum(max(floor[k], min(natural[k], cap)) for k in text)

    if not text or width(0.0) > fixed:
        return None
    low, high = 0.0, max(natural[k] for k in text)
    for _ in range(50):
        low, high = ((low + high) / 2, high) if width((low + high) / 2) <= fixed else (low, (low + high) / 2)
    return {k: math.floor(max(floor[k], low) * 10) / 10 for k in text if natural[k] > low}


def _layout(columns: list[_Column]) -> tuple[str, float, dict[int, float], bool]:
    """The size, column gap, wrapped columns (index -> width in pt) and whether to scale, for the table to fit
    :data:`TEXTWIDTH_PT`."""
    for size, pt in SIZES:
        for gap in GAPS:
            natural = [c.em() * pt for c in columns]
            spare = _FILL * TEXTWIDTH_PT - 2 * gap * len(columns) - sum(natural)
            if spare >= 0:
                return size, gap, {}, False
            wrap = _wrap(columns, natural, spare + sum(natural), pt)
            if wrap is not None:
                return size, gap, wrap, False
    size, pt = SIZES[-1]
    return size, GAPS[-1], {}, True


def _header_cell(lines: list[str], align: str) -> str:
    if len(lines) == 1:
        return lines[0]
    return f"\\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}" + " \\\\ ".join(lines) + "\\end{tabular}"


def _wrapped(cell: str) -> str:
    """A cell of a wrapped column, ragged right; ``\\\\`` still ends the row (``\\arraybackslash`` of package
    array, written out)."""
    return f"\\raggedright\\let\\\\\\tabularnewline {cell}" if cell else ""


def latex_table(frame: pd.DataFrame, caption: str, label: str, columns: Mapping[str, str] | None = None) -> str:
    """A table as LaTeX that fits :data:`TEXTWIDTH_PT`: booktabs rules, cells as a paper prints them
    (:func:`latex_column`), headers from ``columns`` or :func:`header_text`, the caption (:func:`latex_caption`)
    above the table.

    Parameters
    ----------
    frame : DataFrame
        Every row to write.
    caption : str
        The caption, in the report's Markdown subset.
    label : str
        The ``\\label``.
    columns : mapping, optional
        Column -> header (already LaTeX), in order; default every column of ``frame``.
    """
    names = list(columns) if columns is not None else list(frame.columns)
    built = []
    for name in names:
        series = frame[name]
        numeric = pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)
        cells = latex_column(series)
        header = columns[name] if columns is not None else header_text(name)
        width = max([_visible_chars(c) for c in cells] + [1])
        built.append(_Column(_header_lines(header, width), cells, numeric))
    size, gap, wrap, scale = _layout(built)
    spec = "".join(f"p{{{wrap[k]:g}pt}}" if k in wrap else ("r" if c.numeric else "l") for k, c in enumerate(built))
    head = " & ".join(_header_cell(c.header, "r" if c.numeric else "l") for c in built) + " \\\\"
    rows = [" & ".join(_wrapped(c.cells[i]) if k in wrap else c.cells[i] for k, c in enumerate(built)) + " \\\\"
            for i in range(len(frame))]
    body = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule", head, "\\midrule", *rows, "\\bottomrule", "\\end{tabular}"]
    if scale:
        body = ["\\resizebox{\\textwidth}{!}{%", *body, "}"]
    needs = "booktabs, graphicx" if scale else "booktabs"
    return "\n".join([f"% headstats table; needs \\usepackage{{{needs}}}", "\\begin{table}", "\\centering",
                      f"\\caption{{{latex_caption(caption)}}}", f"\\label{{{label}}}", size,
                      f"\\setlength{{\\tabcolsep}}{{{gap:g}pt}}", *body, "\\end{table}", ""])


def write_latex(spec: LatexTable, frame: pd.DataFrame, caption_prefix: str = "") -> str:
    """The LaTeX of a report table from its :class:`LatexTable` (``frame``: the table's rows, unless the spec
    brings its own)."""
    from pathlib import Path

    rows = spec.frame if spec.frame is not None else frame
    caption = f"{caption_prefix}{spec.caption}".strip()
    return latex_table(rows.reset_index(drop=True), caption, f"tab:{Path(spec.file).stem}", spec.columns)
