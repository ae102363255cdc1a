"""The attention viewer (``headstats view``, ``hs.view``): offline, the model view of every head, and a sieve grid
that equals ``hs.score``'s per-input scores (METHODS 1.2)."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

import headstats as hs
from headstats.inputs.records import Record
from headstats.report.viewer.page import AttentionView, safe_json, viewer_page
from headstats.report.viewer.payload import sieve_sums, viewer_data
from headstats.study.viewing import view_inputs, word_of_pieces

SENTENCE = "The cat sat on the mat."
SIEVE_ROLES = ["local", "delimiter", "delimiter_cls", "delimiter_sep"]
SVG_NS = "http://www.w3.org/2000/svg"


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def dump_dom(page: Path, fragment: str = "") -> str:
    """The page's DOM after its script ran, in headless Chromium."""
    result = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                             "--dump-dom", page.resolve().as_uri() + fragment],
                            capture_output=True, text=True, timeout=120)
    assert "data-ready=\"1\"" in result.stdout, result.stderr[-2000:]
    return result.stdout


@pytest.fixture(scope="module")
def default_model():
    return hs.load_model("default")


@pytest.fixture(scope="module")
def cli_page(default_model, tmp_path_factory) -> Path:
    """``headstats view "The cat sat on the mat." --out v.html``, the model loaded once for the module."""
    from typer.testing import CliRunner

    from headstats.cli.main import app

    out = tmp_path_factory.mktemp("view") / "v.html"

    def load(spec, **kwargs):
        assert spec == "default"
        return default_model
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("headstats.model.loading.load_model", load)
        result = CliRunner().invoke(app, ["view", SENTENCE, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output
    return out


def page_data(html: str) -> dict:
    found = re.search(r"<script type='application/json' class='hs-data'>(.*?)</script>", html, re.S)
    return json.loads(found.group(1))


def js_grid(item: dict, data: dict, sieve: str, scale: str = "bias") -> np.ndarray:
    """The sieve grid as the page's script computes it (viewer.js, sieveScore), from the page's own data."""
    L, H, n = data["n_layers"], data["n_heads"], len(item["tokens"])
    kinds = item["sieve_kinds"]
    sums = np.frombuffer(zlib.decompress(base64.b64decode(item["sieve_data"])), "<f4").reshape(L, H, len(kinds), n).astype(float)
    special = np.array(item["special"])
    queries = np.flatnonzero(np.ones(n, bool) if data["count_special_queries"] else ~special)
    keys = {"delimiter": special, "delimiter_cls": np.array(item["cls"]), "delimiter_sep": np.array(item["sep"])}
    if sieve in keys:
        k = np.flatnonzero(keys[sieve])
        return sums[:, :, kinds.index("col"), k].sum(-1) / len(k) / len(queries)
    if sieve == "local":
        w = data["window"]
        size = np.minimum(n - 1, queries + w) - np.maximum(0, queries - w) + 1
        return (sums[:, :, kinds.index("loc"), queries] / size).mean(-1)
    seg = np.array(item["segment"])
    size = np.array([(~special & (seg == s)).sum() for s in seg[queries]])
    return (sums[:, :, kinds.index("blk"), queries] / size).mean(-1)


# ---------------------------------------------------------------------------------------------- done means

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


def test_the_sieve_grid_equals_the_per_input_scores_of_hs_score(cli_page, default_model):
    data = page_data(cli_page.read_text(encoding="utf-8"))
    scores = hs.score(default_model, [Record("1", SENTENCE)], roles=SIEVE_ROLES)
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


def test_the_block_sieve_of_a_pair_equals_hs_score(tiny_model):
    record = Record("p", "The dog barked at the mailman.", "A cat slept on the warm mat.")
    inputs = view_inputs(tiny_model, [record])
    data = viewer_data(inputs, model="tiny", window=1)
    scores = hs.score(tiny_model, [record], roles=["block", "local", "delimiter"], window=1)
    for r, role in enumerate(["block", "local", "delimiter"]):
        np.testing.assert_allclose(js_grid(data["inputs"][0], data, role), scores.values[0, :, :, r], atol=1e-5,
                                   rtol=0, err_msg=role)
    data = viewer_data(inputs, model="tiny", window=1, count_special_queries=False)
    scores = hs.score(tiny_model, [record], roles=["local", "delimiter_sep"], window=1, count_special_queries=False)
    for r, role in enumerate(["local", "delimiter_sep"]):
        np.testing.assert_allclose(js_grid(data["inputs"][0], data, role), scores.values[0, :, :, r], atol=1e-5,
                                   rtol=0, err_msg=role)


# ---------------------------------------------------------------------------------------------- the parts

def test_sieve_sums_of_a_planted_map():
    # one head, 3 pieces; rows sum to 1, so m_i = 1/3 and A/m = 3A
    a = np.array([[0.5, 0.5, 0.0], [0.2, 0.2, 0.6], [0.0, 0.1, 0.9]])[None, None]
    kinds, sums = sieve_sums(a, np.array([0, 0, 1]), np.array([True, False, False]), window=0, is_pair=True)
    assert kinds == ["loc", "col", "blk"]
    np.testing.assert_allclose(sums[0, 0, 0], [1.5, 0.6, 2.7], rtol=1e-6)  # 3 A[i, i]
    np.testing.assert_allclose(sums[0, 0, 1], [2.1, 2.4, 4.5], rtol=1e-6)  # 3 sum_i A[i, j]
    # block: non-special keys of i's sentence (piece 0 special; pieces 0, 1 in A, piece 2 in B)
    np.testing.assert_allclose(sums[0, 0, 2], [1.5, 0.6, 2.7], rtol=1e-6)
    _, without = sieve_sums(a, np.array([0, 0, 1]), np.array([True, False, False]), window=0,
                            count_special_queries=False)
    np.testing.assert_allclose(without[0, 0, 1], [0.6, 0.9, 4.5], rtol=1e-6)  # the special query 0 left out


def test_words_of_pieces_follow_each_tokenizer_family():
    assert word_of_pieces(["[CLS]", "token", "##ization", "is", "[SEP]"], [1, 0, 0, 0, 1]).tolist() == [0, 1, 1, 2, 3]
    assert word_of_pieces(["<s>", "Token", "ization", "\u0120is", "</s>"], [1, 0, 0, 0, 1]).tolist() == [0, 1, 1, 2, 3]
    assert word_of_pieces(["[CLS]", "a", "b", "c", "[SEP]"], [1, 0, 0, 0, 1], [(1, 2), (3,)]).tolist() == \
        [0, 1, 1, 2, 3]


def test_text_from_the_data_cannot_break_out_of_the_page(tiny_model, tmp_path):
    evil = "</script><script>alert(1)</script><!-- & -->"
    inputs = view_inputs(tiny_model, [Record("x", f"Look: {evil}")])
    inputs[0].tokens[1] = evil  # a piece holding the worst text, as a tokenizer could write it
    html = viewer_page(viewer_data(inputs, model="tiny"), title=f"view of {evil}")
    assert html.count("</script>") == 2 and html.count("<script") == 2  # the data's and the viewer's own
    assert "<!--" not in html
    assert page_data(html)["inputs"][0]["tokens"][1] == evil
    assert safe_json({"a": "<&>"}) == '{"a":"\\u003c\\u0026\\u003e"}'
    if chromium() is not None:
        page = tmp_path / "evil.html"
        page.write_text(html, encoding="utf-8")
        dom = dump_dom(page, "#mode=head&layer=0&heads=0,1")
        assert dom.count("<script") == 2  # the browser made no element of the text: it stays text
        assert "&lt;/script&gt;&lt;script&gt;alert(1)" in dom  # drawn as text in the head view


def test_hs_view_in_a_notebook_and_its_size_for_three_inputs_of_128_pieces(default_model, capsys):
    words = (Path(__file__).resolve().parents[2] / "data" / "demo" / "sentences.txt").read_text().split()
    texts = [" ".join(words[k * 120:(k + 1) * 120]) for k in range(3)]
    view = hs.view(default_model, texts[0])
    assert isinstance(view, AttentionView) and "1 input(s)" in repr(view)
    shown = view._repr_html_()
    assert shown.startswith("<iframe srcdoc='") and "<script" not in shown  # the page is an escaped attribute
    inputs = view_inputs(default_model, [Record(str(k), t) for k, t in enumerate(texts)], max_length=128)
    assert [v.length for v in inputs] == [128, 128, 128]
    size = len(viewer_page(viewer_data(inputs, model="default")).encode())
    with capsys.disabled():
        print(f"\nviewer page, 3 inputs of 128 pieces, default model: {size / 1e6:.2f} MB")
    assert size < 1.1e6


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


@pytest.fixture(scope="module")
def tiny_run(tiny_model_dir, tmp_path_factory) -> Path:
    """A finished run of the tiny model on 12 demo sentences (local and the delimiters, tau 1)."""
    import yaml

    folder = tmp_path_factory.mktemp("tiny_run")
    protocol = {"name": "tiny", "models": [{"name": "tiny", "path": str(tiny_model_dir)}],
                "datasets": [{"name": "single", "path": str(Path(__file__).resolve().parents[2] / "data" / "demo"
                                                            / "sentences.txt"), "limit": 12}],
                "scoring": {"roles": ["local", "delimiter", "delimiter_cls", "delimiter_sep"], "window": 1},
                "statistics": {"test": "t", "tau": 1.0, "sensitivity": False},
                "report": {"html": False, "figures": {"formats": ["png"], "dpi": 72}}}
    (folder / "p.yaml").write_text(yaml.safe_dump(protocol))
    hs.run(folder / "p.yaml", folder / "run")
    return folder / "run"


def test_beside_a_run_the_page_shows_roles_tau_claims_and_where_each_head_scores_highest(tiny_run, tiny_model,
                                                                                           tmp_path):
    import pandas as pd

    view = hs.view(tiny_model, SENTENCE, run=tiny_run)
    stats, data = view.data["stats"], view.data
    assert stats["where"] == "tiny on single" and stats["tau"] == {r: 1.0 for r in SIEVE_ROLES}
    assert data["window"] == 1  # the run's scoring, so that the grid is the run's score
    roles = pd.read_csv(tiny_run / "roles.csv").fillna({"roles": ""})
    assert stats["roles"] == {f"{r.layer}-{r.head}": [x for x in r.roles.split("+") if x] for r in roles.itertuples()}
    # the ranking is the stored per-input scores, highest first (no model)
    scores = pd.read_parquet(tiny_run / "scores.parquet").astype({"sentence_id": str, "role": str})
    for role in SIEVE_ROLES:
        mine = scores[(scores["role"] == role) & (scores["layer"] == 1) & (scores["head"] == 0)]
        top = mine.sort_values("score", ascending=False, kind="stable").head(5)
        assert [e[0] for e in stats["rank"][role]["1-0"]] == top["sentence_id"].tolist()
        np.testing.assert_allclose([e[1] for e in stats["rank"][role]["1-0"]], top["score"], atol=5e-5)
        assert all(e[2] for e in stats["rank"][role]["1-0"])  # the sentence's text, read from the run's data set
    claims = pd.read_csv(tiny_run / "claims.csv")
    assert {c["claim"] for c in stats["claims"]} <= set(claims["claim"])
    assert next(c for c in stats["claims"] if c["claim"] == "cls_early")["roles"] == ["delimiter_cls"]
    if chromium() is not None:  # the head view's panel in a browser
        page = view.save(tmp_path / "run.html")
        held = next(k for k, v in stats["roles"].items() if v)
        layer, head = held.split("-")
        dom = dump_dom(page, f"#mode=head&layer={layer}&heads={head}")
        panel = dom[dom.index('class="hs-info"'):]
        assert f"Roles held in the run (tiny on single): {', '.join(stats['roles'][held])}" in panel
        assert "tau = 1" in panel and "Where this head does it most" in panel
