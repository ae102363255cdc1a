"""Names of the surface measures and the default hypotheses about them, importable without torch (the protocol
checks names against them before any model loads). The measures are defined in :mod:`headstats.analyses.surface`.
"""

from __future__ import annotations

from headstats.model.tokenizers import PUNCTUATION  # noqa: F401  the pieces counted by ``punct``

#: Per-input measures, in the order of the MeasureArray's last axis.
SURFACE_MEASURES: tuple[str, ...] = (
    "prev", "self", "next", "cls", "sep", "punct", "sep_to_sep", "other_to_sep", "entropy", "entropy_cls",
    "entropy_uniform", "entropy_ratio", "same_token", "same_token_other",
)
#: Columns of ``surface.csv`` (the issue's, in its order).
SURFACE_COLUMNS: tuple[str, ...] = (
    "model", "dataset", "layer", "head", "prev", "self", "next", "cls", "sep", "punct", "sep_to_sep",
    "other_to_sep", "entropy", "entropy_cls", "entropy_uniform",
)

#: Default hypotheses (``analysis_options.surface.hypotheses`` of a protocol): name, measure, threshold,
#: layers (None = all).
DEFAULT_HYPOTHESES: tuple[dict, ...] = (
    {"name": "previous_token", "measure": "prev", "threshold": 0.5, "layers": None},
    {"name": "next_token", "measure": "next", "threshold": 0.5, "layers": None},
    {"name": "same_token", "measure": "self", "threshold": 0.5, "layers": None},
    {"name": "to_cls", "measure": "cls", "threshold": 0.5, "layers": None},
    {"name": "to_sep", "measure": "sep", "threshold": 0.5, "layers": None},
    {"name": "to_punct", "measure": "punct", "threshold": 0.5, "layers": None},
    {"name": "broad", "measure": "entropy_ratio", "threshold": 0.75, "layers": None},
)
