"""headstats: statistics, not averages, for what each attention head of a BERT-family model does.

``import headstats as hs`` gives the public API, loaded lazily so that importing headstats imports no torch:

- models and data: :func:`load_model`, :func:`read_records`
- scores: :func:`score` (a :class:`MeasureArray` per model and data set)
- statistics and roles: :func:`test_roles`, :func:`role_table`, :func:`compare`
- a whole protocol: :func:`run`, and :func:`open_run` to reopen a run folder
- look at any sentence: :func:`view` (model view, head view, heat map, sieve grid; one offline page)
- registries: ``list_roles``/``register_role``, ``list_tests``/``register_test``,
  ``list_corrections``/``register_correction``, ``list_paired_tests``/``register_paired_test``,
  ``list_seed_tests``/``register_seed_test``,
  ``list_analyses``/``register_analysis``, ``list_formats``/``register_format``
- errors: :class:`HeadstatsError` and its kinds (``ProtocolError``, ``DataError``, ``ModelError``,
  ``UnknownNameError``, ``IncompatibleResultsError``, ``OutputError``)
"""

from __future__ import annotations

import importlib
from typing import Any


#: Public name -> "module:attribute", imported on first use.
_LAZY = {
    "load_model": "headstats.model.loading:load_model",
    "read_records": "headstats.api:read_records",
    "score": "headstats.api:score",
    "test_roles": "headstats.api:test_roles",
    "role_table": "headstats.api:role_table",
    "compare": "headstats.api:compare",
    "view": "headstats.api:view",
    "run": "headstats.api:run",
    "open_run": "headstats.api:open_run",
    "MeasureArray": "headstats.measures:MeasureArray",
    "load_protocol": "headstats.config.protocol:load_protocol",
    "list_roles": "headstats.analyses.roles:list_roles",
    "register_role": "headstats.analyses.roles:register_role",
    "list_tests": "headstats.stats.onesample:list_tests",
    "register_test": "headstats.stats.onesample:register_test",
    "list_corrections": "headstats.stats.corrections:list_corrections",
    "register_correction": "headstats.stats.corrections:register_correction",
    "list_paired_tests": "headstats.stats.paired:list_paired_tests",
    "register_paired_test": "headstats.stats.paired:register_paired_test",
    "list_seed_tests": "headstats.stats.seeds:list_seed_tests",
    "register_seed_test": "headstats.stats.seeds:register_seed_test",
    "list_analyses": "headstats.analyses:list_analyses",
    "register_analysis": "headstats.analyses:register_analysis",
    "list_formats": "headstats.inputs.readers:list_formats",
    "register_format": "headstats.inputs.readers:register_format",
    **{name: f"headstats.errors:{name}" for name in (
        "HeadstatsError", "ProtocolError", "DataError", "ModelError", "UnknownNameError",
        "IncompatibleResultsError", "OutputError")},
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the installed metadata, the one source of every version headstats records
        from headstats.provenance import headstats_version

        value = globals()["__version__"] = headstats_version()
        return value
    try:
        module, attribute = _LAZY[name].split(":")
    except KeyError:
        raise AttributeError(f"module 'headstats' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
