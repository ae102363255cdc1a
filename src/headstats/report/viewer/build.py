"""``headstats view`` and ``hs.view``: from a text (or a data file's first inputs) and a model to the viewer's page.

Every check that needs no model comes first (the inputs, the measure, the run folder), so that bad input is
refused in one line before the model loads; then one forward pass through the engine
(:func:`headstats.study.viewing.view_inputs`) and the page (:mod:`headstats.report.viewer.page`). No run folder
is written; with ``run``, the page shows that run's statistics (:mod:`headstats.report.viewer.stats`) and its
sieve grid uses the run's ``window`` and ``count_special_queries``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from headstats.errors import DataError, HeadstatsError
from headstats.report.viewer.page import AttentionView
from headstats.report.viewer.payload import viewer_data

__all__ = ["build_view", "view_records"]


def view_records(text: str | None = None, *, pair: str | None = None, data: str | Path | None = None,
                 limit: int = 3, format: str | None = None) -> list:
    """The records to view: ``text`` (with ``pair`` as its sentence B), or the first ``limit`` of ``data``."""
    from headstats.inputs.readers import read_records
    from headstats.inputs.records import Record
    from headstats.study.viewing import MOST_INPUTS

    if (text is None) == (data is None):
        raise DataError("give either a text or --data FILE (not both, not neither)")
    if pair is not None and text is None:
        raise DataError("--pair is sentence B of the text; with --data, pairs come from the file")
    if not 1 <= int(limit) <= MOST_INPUTS:
        raise DataError(f"--limit must be between 1 and {MOST_INPUTS}, not {limit}")
    if text is not None:
        if not text.strip() or (pair is not None and not pair.strip()):
            raise DataError("the text to view is empty; give a sentence, e.g. headstats view \"The cat sat.\"")
        return [Record("1", text, pair)]
    return read_records(data, format=format, limit=int(limit))


def build_view(model: Any = "default", text: str | None = None, *, pair: str | None = None,
               data: str | Path | None = None, limit: int = 3, format: str | None = None, measure: str = "weights",
               run: str | Path | None = None, dataset: str | None = None, window: int | None = None,
               max_length: int | None = None) -> AttentionView:
    """The viewer of ``text`` (or of ``data``'s first ``limit`` inputs) on ``model``; see the module docstring.

    Parameters
    ----------
    model : LoadedModel or str
        A loaded model, or what :func:`headstats.load_model` takes (``"default"``, a folder, a hub id).
    text, pair : str, optional
        One input (``pair``: its sentence B).
    data, limit, format
        A data file (any format headstats reads) and how many of its first inputs to view.
    measure : str
        What is drawn (:data:`headstats.study.viewing.VIEW_MEASURES`: ``weights``).
    run : path, optional
        A finished run folder: its roles, tau, claims and stored scores beside the attention.
    dataset : str, optional
        The run's data set whose statistics are shown (default: its first).
    window : int, optional
        w of the ``local`` sieve (default: the run's, else 2).
    max_length : int, optional
        Longer inputs are truncated (default and most: the model's maximum).
    """
    from headstats.analyses.sieves import ScoreSettings
    from headstats.model.loading import LoadedModel, load_model
    from headstats.study.viewing import VIEW_MEASURES, view_inputs

    VIEW_MEASURES.get(measure)
    records = view_records(text, pair=pair, data=data, limit=limit, format=format)
    settings = ScoreSettings()
    stats = None
    if run is not None:
        from headstats.report.viewer.stats import run_stats

        name = model.name if isinstance(model, LoadedModel) else str(model)
        stats, protocol = run_stats(run, model=name, dataset=dataset)
        settings = protocol.scoring
    if window is not None and window < 0:
        raise HeadstatsError(f"window must be 0 or more, not {window} (headstats view --window; hs.view(window=...))")
    loaded = model if isinstance(model, LoadedModel) else load_model(str(model))
    inputs = view_inputs(loaded, records, max_length=max_length, measure=measure)
    data_ = viewer_data(inputs, model=loaded.name, measure=measure,
                        window=settings.window if window is None else int(window),
                        count_special_queries=settings.count_special_queries, stats=stats)
    what = text if text is not None else str(data)
    return AttentionView(data_, title=f"headstats view: {loaded.name}, {what[:80]}")
