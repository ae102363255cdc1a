"""The report layer's options: what a protocol's ``report:`` key holds (``top_k``, ``html``, ``figures``).

A leaf module: it imports only pydantic and :mod:`headstats.fields`, so that the protocol
(:mod:`headstats.config.protocol`) can compose it without pulling in matplotlib or the report builder.

``report.figures`` sets the figures for print::

    report:
      figures:
        width: column      # column (3.5 in), text (7.0 in), or a width in inches
        dpi: 300           # of the PNG files
        formats: [png, pdf, svg]
        scale: family      # mean-score maps: one colour scale per role family (or: shared, role)

Every figure is drawn at the printed width, so that every text is at least :data:`MIN_FONT_PT` points when
the figure is printed at that width (tested on the quickstart's figures); PDF and SVG keep their text as
text (TrueType in the PDF, ``svg.fonttype: none``), editable in a paper's figure.
"""

from __future__ import annotations

from typing import Literal, Union

from pydantic import Field, field_validator

from headstats.fields import Float, Int, StrictModel

#: Printed widths of the named presets, in inches (a journal's single column and full text width).
WIDTHS = {"column": 3.5, "text": 7.0}
#: The smallest text a figure may hold at its printed width, in points.
MIN_FONT_PT = 7.0
#: Figure formats headstats writes (PNG is the one the report shows and is always written).
FIGURE_FORMATS = ("png", "pdf", "svg")


class FigureOptions(StrictModel):
    """Figures for print: their printed width, the PNG's resolution, the formats written, and the colour scale
    of the mean-score maps.

    Parameters
    ----------
    width : {"column", "text"} or float
        Printed width: ``column`` = 3.5 in, ``text`` = 7.0 in, or inches (2 to 20).
    dpi : int
        Resolution of the PNG files (72 to 1200); 300 is what journals ask of line art with text.
    formats : list of {"png", "pdf", "svg"}
        Files written per figure; PNG is always among them (the report shows it).
    scale : {"family", "shared", "role"}
        Colour scale of the mean-score maps: one per role family (local, block, delimiter, syntactic), one
        shared by every role, or one per role; every scale is centred at tau.
    """

    width: Union[Literal["column", "text"], Float] = "text"
    dpi: Int = Field(300, ge=72, le=1200)
    formats: list[Literal["png", "pdf", "svg"]] = Field(default_factory=lambda: list(FIGURE_FORMATS))
    scale: Literal["family", "shared", "role"] = "family"

    @field_validator("width")
    @classmethod
    def _width(cls, value):
        if isinstance(value, str):
            return value
        if not 2.0 <= float(value) <= 20.0:
            raise ValueError(f"width {value:g} in is not a printed width; give column (3.5 in), text (7.0 in) "
                             "or inches from 2 to 20")
        return float(value)

    @field_validator("formats")
    @classmethod
    def _formats(cls, value):
        return list(dict.fromkeys(["png", *value]))

    @property
    def inches(self) -> float:
        """The printed width in inches."""
        return WIDTHS[self.width] if isinstance(self.width, str) else float(self.width)


class ReportOptions(StrictModel):
    """The report: heads listed per role (``top_k``), whether to write ``report.html``, and the figures."""

    top_k: Int = Field(10, ge=1, le=100_000)
    html: bool = True
    figures: FigureOptions = Field(default_factory=FigureOptions)
