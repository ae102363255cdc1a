"""``headstats view``: the page of "The cat sat on the mat." works offline, shows every head of the default model,
and its sieve grid equals ``hs.score``'s per-input scores; bad input is one line."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import headstats as hs
from headstats.inputs.records import Record
from report.viewer.helpers import SENTENCE, SIEVE_ROLES, chromium, default_model, dump_dom, js_grid, page_data

SVG_NS = "http://www.w3.org/2000/svg"


@pytest.fixture(scope="module")
def cli_page(tmp_path_factory) -> Path:
    """``headstats view "The cat sat on the mat." --out v.html``, the model loaded once per test process."""
    from typer.testing import CliRunner

    from headstats.cli.main import app

    out = tmp_path_factory.mktemp("view") / "v.html"
    model = default_model()  # loaded before the loader is replaced: the stand-in must not call itself

    def load(spec, **kwargs):
        assert spec == "default"
        return model
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("headstats.model.loading.load_model", load)
        result = CliRunner().invoke(app, ["view", SENTENCE, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output
    return out


def test_the_page_holds_no_external_url(cli_page):
    html = cli_page.read_text(encoding="utf-8")
    urls = re.findall(r"(?:https?:|ftp:)?//[\w.-]+\.[a-z]{2,}[^\s'\"<>)]*", html)
    assert set(urls) == {SVG_NS}  # the SVG namespace: a name, never fetched
    assert not re.search(r"<(?:link|img|iframe)\b|<script[^>]*\bsrc=|@import", html, re.I)
    assert not re.search(r"(?<![A-Za-z.])url\(|\bfetch\(|XMLHttpRequest|\bimport\(", html)  # nothing loaded
    data = page_data(html)
    assert data["inputs"][0]["tokens"] == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]


def test_the_model_view_shows_every_head_of_the_default_model(cli_page):
    data = page_data(cli_page.read_text(encoding="utf-8"))
    assert (data["n_layers"], data["n_heads"]) == (6, 12)
    if chromium() is None:
        pytest.skip("needs Chromium for the DOM (apt-get install chromium); the embedded data is checked above")
    dom = dump_dom(cli_page)
    thumbs = re.findall(r'<g class="hs-thumb" data-layer="(\d+)" data-head="(\d+)"', dom)
    assert sorted((int(a), int(b)) for a, b in thumbs) == [(a, b) for a in range(6) for b in range(12)]


def test_the_sieve_grid_equals_the_per_input_scores_of_hs_score(cli_page):
    data = page_data(cli_page.read_text(encoding="utf-8"))
    scores = hs.score(default_model(), [Record("1", SENTENCE)], roles=SIEVE_ROLES)
    assert data["window"] == 2 and data["count_special_queries"] is True  # hs.score's defaults
    for r, role in enumerate(SIEVE_ROLES):
        np.testing.assert_allclose(js_grid(data["inputs"][0], data, role), scores.values[0, :, :, r], atol=1e-5,
                                   rtol=0, err_msg=role)
    if chromium() is None:
        pytest.skip("needs Chromium to run the page's script; its formula is checked above in Python")
    for role in ("local", "delimiter_sep"):  # the script itself, in a browser
        dom = dump_dom(cli_page, f"#mode=sieve&sieve={role}")
        cells = re.findall(r'class="hs-cell" data-layer="(\d+)" data-head="(\d+)" data-v="([^"]+)"', dom)
        grid = np.full((6, 12), np.nan)
        for layer, head, value in cells:
            grid[int(layer), int(head)] = float(value)
        np.testing.assert_allclose(grid, scores.values[0, :, :, SIEVE_ROLES.index(role)], atol=1e-5, rtol=0)


def test_the_view_command_refuses_bad_input_in_one_line(tmp_path, no_model_loading):
    from typer.testing import CliRunner

    from headstats.cli.main import app

    (tmp_path / "taken.html").write_text("mine")
    cases = [
        (["view", "--out", str(tmp_path / "a.html")], "give either a text or --data FILE"),
        (["view", "x", "--measure", "norm", "--out", str(tmp_path / "a.html")], "unknown view measure 'norm'"),
        (["view", "x", "--out", str(tmp_path / "taken.html")], "exists; give --overwrite"),
        (["view", "x", "--out", str(tmp_path / "a.txt")], "is not an .html file"),
        (["view", "--data", str(tmp_path / "none.txt"), "--out", str(tmp_path / "a.html")], "not found"),
        (["view", "--data", str(tmp_path / "taken.html"), "--limit", "0", "--out", str(tmp_path / "a.html")],
         "--limit must be between 1 and 50"),
        (["view", "  ", "--out", str(tmp_path / "a.html")], "the text to view is empty"),
    ]
    for args, words in cases:
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], (args, result.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.html"]
    assert (tmp_path / "taken.html").read_text() == "mine"
