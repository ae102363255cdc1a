"""Fixtures of the command-line tests."""

from __future__ import annotations

import pytest


@pytest.fixture()
def no_model_loading(monkeypatch):
    import headstats.model.loading

    def forbidden(*args, **kwargs):
        raise AssertionError("a model was loaded before the checks")

    monkeypatch.setattr(headstats.model.loading, "load_model", forbidden)
