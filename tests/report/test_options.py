"""The report layer's options: presets resolve to inches, bad values are refused with the fix, the protocol
composes them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from headstats.report.options import FigureOptions, ReportOptions


def test_named_widths_and_defaults():
    assert FigureOptions(width="column").inches == 3.5
    assert FigureOptions(width="text").inches == 7.0
    assert FigureOptions(width=5).inches == 5.0
    options = ReportOptions()
    assert options.figures.dpi == 300 and options.figures.formats == ["png", "pdf", "svg"]
    assert options.figures.scale == "family"


def test_png_is_always_written_and_bad_values_say_what_is_allowed():
    assert FigureOptions(formats=["pdf"]).formats == ["png", "pdf"]
    with pytest.raises(ValidationError, match="column .3.5 in., text .7.0 in. or inches from 2 to 20"):
        FigureOptions(width=30)
    with pytest.raises(ValidationError, match="'png', 'pdf' or 'svg'"):
        FigureOptions(formats=["tiff"])
    with pytest.raises(ValidationError):
        FigureOptions(dpi=True)  # YAML true is not a number
    with pytest.raises(ValidationError, match="family"):
        FigureOptions(scale="global")


def test_the_protocol_composes_the_report_options():
    from headstats.config.protocol import Protocol

    protocol = Protocol.model_validate({"datasets": [{"name": "d", "path": "x.txt"}],
                                        "report": {"figures": {"width": "column", "formats": ["png", "svg"]}}})
    assert isinstance(protocol.report, ReportOptions)
    assert protocol.report.figures.inches == 3.5 and protocol.report.figures.formats == ["png", "svg"]
    from headstats.plots.style import preset_of

    preset = preset_of(protocol.report.figures)
    assert (preset.width, preset.dpi, preset.formats) == (3.5, 300, ("png", "svg"))
