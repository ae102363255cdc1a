"""``build_view``: the inputs of ``headstats view`` and ``hs.view``, checked before any model loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from headstats.errors import DataError, HeadstatsError
from headstats.report.viewer.build import build_view, view_records

DEMO = Path(__file__).resolve().parents[3] / "data" / "demo"


def test_the_records_of_a_text_a_pair_or_a_data_file():
    (one,) = view_records("The cat sat.")
    assert (one.text_a, one.text_b) == ("The cat sat.", None)
    (pair,) = view_records("A man plays.", pair="Someone plays.")
    assert pair.is_pair and pair.text_b == "Someone plays."
    first = view_records(data=DEMO / "sentences.txt", limit=2)
    lines = (DEMO / "sentences.txt").read_text(encoding="utf-8").splitlines()[:2]
    assert [r.text_a for r in first] == lines


@pytest.mark.parametrize("kwargs, words", [
    ({}, "give either a text or --data FILE"),
    ({"text": "a", "data": "x.txt"}, "give either a text or --data FILE"),
    ({"data": DEMO / "sentences.txt", "pair": "b"}, "--pair is sentence B of the text"),
    ({"text": "a", "limit": 0}, "--limit must be between 1 and 50"),
    ({"text": " \t"}, "the text to view is empty"),
])
def test_bad_inputs_are_refused_before_the_model_loads(kwargs, words, no_model_loading):
    with pytest.raises(DataError, match=words):
        build_view("default", **kwargs)


def test_the_window_of_the_local_sieve_and_a_wrong_run_folder(tiny_model, tmp_path):
    view = build_view(tiny_model, "The cat sat on the mat.", window=1)
    assert view.data["window"] == 1 and view.data["stats"] is None
    assert view.data["inputs"][0]["label"] == "1: The cat sat on the mat."
    with pytest.raises(HeadstatsError, match="does not exist"):
        build_view(tiny_model, "a", run=tmp_path / "nowhere")
    with pytest.raises(HeadstatsError,
                       match=r"window must be 0 or more, not -1 \(headstats view --window; hs.view\(window=...\)\)"):
        build_view(tiny_model, "a", window=-1)
