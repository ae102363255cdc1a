"""Loading prints nothing but headstats' own lines; --verbose (HEADSTATS_VERBOSE=1) shows the libraries' own."""

from __future__ import annotations

import warnings

from transformers.utils import logging as hf_logging

from headstats.model.quiet import VERBOSE_ENV, quiet_loading


def test_quiet_loading_silences_and_restores(monkeypatch):
    monkeypatch.delenv(VERBOSE_ENV, raising=False)
    hf_logging.set_verbosity_warning()
    hf_logging.enable_progress_bar()
    with quiet_loading():
        assert hf_logging.get_verbosity() == hf_logging.ERROR
        assert not hf_logging.is_progress_bar_enabled()
        with warnings.catch_warnings(record=True) as seen:
            warnings.warn("from inside a library", FutureWarning)
        assert seen == []
    assert hf_logging.get_verbosity() == hf_logging.WARNING and hf_logging.is_progress_bar_enabled()


def test_verbose_leaves_the_libraries_alone(monkeypatch):
    hf_logging.set_verbosity_warning()
    monkeypatch.setenv(VERBOSE_ENV, "1")
    with quiet_loading():
        assert hf_logging.get_verbosity() == hf_logging.WARNING
    monkeypatch.delenv(VERBOSE_ENV)
    with quiet_loading(verbose=True):
        assert hf_logging.get_verbosity() == hf_logging.WARNING
