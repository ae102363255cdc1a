"""Loading a model prints nothing but headstats' own lines: transformers' and huggingface_hub's progress bars
(``Loading weights: 100%|...| 103/103``), log lines and warnings are off while a model or tokenizer loads.

``headstats <command> --verbose`` (which sets ``HEADSTATS_VERBOSE=1``), or ``verbose=True``, shows them.
"""

from __future__ import annotations

import os
import sys
import warnings
from contextlib import contextmanager
from typing import Iterator

#: Environment variable that shows the libraries' own output while loading (set by ``--verbose``).
VERBOSE_ENV = "HEADSTATS_VERBOSE"


def verbose_loading() -> bool:
    """Whether ``$HEADSTATS_VERBOSE`` asks for the libraries' own output while loading."""
    return os.environ.get(VERBOSE_ENV, "").lower() in ("1", "true", "yes")


@contextmanager
def quiet_loading(verbose: bool | None = None) -> Iterator[None]:
    """While the block runs, transformers and huggingface_hub log only errors, draw no progress bar and raise
    no warning that reaches the user; their settings are restored afterwards. Nothing changes when
    ``verbose`` (default: :func:`verbose_loading`)."""
    if verbose if verbose is not None else verbose_loading():
        yield
        return
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hub = sys.modules.get("huggingface_hub.utils")
    hub_bars_off = hub.are_progress_bars_disabled() if hub is not None else None
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    if hub is not None:
        hub.disable_progress_bars()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
        if hub is not None and not hub_bars_off:
            hub.enable_progress_bars()
