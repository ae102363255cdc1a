"""Pictures of one head: heat map, line view, and the offline interactive view."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

from headstats.analyses.pictures.figures import attention_heatmap, interactive_view_html, line_view

TOKENS = ["[CLS]", "the", "cat", "[SEP]"]
W = np.array([[1, 0, 0, 0], [0.5, 0.5, 0, 0], [0, 0.995, 0.005, 0], [0.25, 0.25, 0.25, 0.25]])


def test_heatmap_shows_the_map():
    fig = attention_heatmap(W, TOKENS, title="h")
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), W)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == TOKENS


def test_line_view_draws_one_line_per_weight_above_the_floor():
    fig = line_view(W, TOKENS, segment=[0, 0, 0, 1])
    (lines,) = fig.axes[0].collections  # one collection of lines, each query (left, x = 0) to a key (x = 1)
    segments = lines.get_segments()
    assert len(segments) == int((W >= 0.01).sum()) == 8  # 1 + 2 + 1 (0.005 left out) + 4
    drawn = {(int(-s[0, 1]), int(-s[1, 1])): round(float(c[3]), 3) for s, c in zip(segments, lines.get_colors())}
    assert drawn == {(i, j): round(float(W[i, j]), 3) for i, j in zip(*np.nonzero(W >= 0.01))}  # opacity = weight


def test_shape_is_checked():
    with pytest.raises(ValueError, match="n = 4 tokens"):
        line_view(np.ones((3, 3)) / 3, TOKENS)


def test_interactive_view_is_self_contained():
    html = interactive_view_html([{"label": "a </script> b", "tokens": TOKENS, "weights": W, "caption": "c"}],
                                 element_id="v1")
    assert "http" not in html.replace("http://www.w3.org/2000/svg", "")  # no network
    assert "<script src" not in html and "id='v1'" in html
    payload = re.search(r"<script type='application/json'>(.*?)</script>", html, re.S).group(1)
    data = json.loads(payload.replace("<\\/", "</"))
    assert data["views"][0]["tokens"] == TOKENS and data["views"][0]["weights"][2] == [0.0, 0.995, 0.005, 0.0]
    assert data["views"][0]["label"] == "a </script> b"


def _unpack(data: dict, n_layers: int, n_heads: int) -> dict:
    """The layout of :func:`pack_explorer_weights`, decoded independently: per head n counts, keys, weights."""
    raw, n = base64.b64decode(data["data"]), len(data["tokens"])
    dtype = np.dtype("u1") if data["width"] == 1 else np.dtype("<u2")
    out, at = {}, 0
    for layer in range(n_layers):
        for head in range(n_heads):
            counts = np.frombuffer(raw, dtype, n, at)
            at += n * dtype.itemsize
            m = int(counts.sum())
            keys = np.frombuffer(raw, dtype, m, at)
            at += m * dtype.itemsize
            w = np.frombuffer(raw, np.uint8, m, at) / 255
            at += m
            dense = np.zeros((n, n))
            dense[np.repeat(np.arange(n), counts), keys] = w
            out[layer, head] = dense
    assert at == len(raw)
    return out


def test_attention_explorer_holds_every_head_as_bytes_and_works_offline():
    from headstats.analyses.pictures.figures import attention_explorer_html

    weights = {(0, 0): ([0, 1, 2], [1, 1, 3], [0.5, 1.0, 0.004]), (1, 2): ([3], [0], [0.25])}
    page = attention_explorer_html([{"label": "x", "tokens": TOKENS, "segment": [0, 0, 1, 1],
                                     "special": [1, 0, 0, 1], "weights": weights, "captions": {"0-0": "c"}}],
                                   n_layers=2, n_heads=3, presets=[{"label": "p", "input": 0, "layer": 1, "head": 2}],
                                   element_id="e1")
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "") and "<script src" not in page
    data = json.loads(re.search(r"<script type='application/json'>(.*?)</script>", page, re.S).group(1))
    heads = _unpack(data["inputs"][0], 2, 3)
    # round(255 w) / 255: 0.5 -> 128/255, 1 -> 1, 0.25 -> 64/255; 0.004 is below the view's 0.01, left out
    expected = np.zeros((4, 4))
    expected[0, 1], expected[1, 1] = 128 / 255, 1.0
    np.testing.assert_array_equal(heads[0, 0], expected)
    assert heads[1, 2][3, 0] == 64 / 255 and heads[1, 2].sum() == 64 / 255 and not heads[0, 1].any()
    assert data["presets"] == [{"label": "p", "input": 0, "layer": 1, "head": "2"}]
    for control in ("hs-input", "hs-layer", "hs-head", "hs-words", "hs-svg", "hs-png"):
        assert f"class='{control}'" in page
    assert "`" not in page  # no template literals: the report's HTML holds no backtick


def test_explorer_weights_round_trip_within_half_a_step_and_the_page_stays_small():
    """Softmax rows of 128 pieces on 6 x 12 heads, as many inputs as a protocol keeps by default (3): every
    weight decodes to within 1/510 of its value or, if left out, was under 2.5/255; the page is under 1.2 MB
    (uint8 weights; the earlier JSON took 3.7 MB for a real WikiText run)."""
    from headstats.analyses.pictures.figures import attention_explorer_html

    rng = np.random.default_rng(0)
    n, n_layers, n_heads = 128, 6, 12
    inputs, dense = [], []
    for k in range(3):
        logits = rng.normal(0, 3, (n_layers, n_heads, n, n))
        w = np.exp(logits - logits.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        dense.append(w)
        q, kk = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        inputs.append({"label": f"input {k}", "tokens": [f"t{i}" for i in range(n)],
                       "weights": {(l, h): (q.ravel(), kk.ravel(), w[l, h].ravel())
                                   for l in range(n_layers) for h in range(n_heads)}})
    page = attention_explorer_html(inputs, n_layers=n_layers, n_heads=n_heads)
    data = json.loads(re.search(r"<script type='application/json'>(.*?)</script>", page, re.S).group(1))
    for k, stored in enumerate(data["inputs"]):
        assert stored["width"] == 1
        back = _unpack(stored, n_layers, n_heads)
        for l in range(n_layers):
            for h in range(n_heads):
                true, got = dense[k][l, h], back[l, h]
                kept = got > 0
                assert np.abs(got - true)[kept].max() <= 0.5 / 255 + 1e-12
                assert (true[~kept] < 2.5 / 255 + 1e-12).all()
    assert len(page.encode()) < 1_200_000  # 0.91 MB here; the JSON of [query, key, round(255 w)] was 2.8 MB


def test_explorer_weights_of_inputs_over_255_pieces_take_two_bytes_per_position():
    from headstats.analyses.pictures.figures import attention_explorer_html

    n = 300
    weights = {(0, 1): ([299, 0, 299], [280, 299, 3], [0.6, 0.5, 0.4])}
    page = attention_explorer_html([{"label": "long", "tokens": ["t"] * n, "weights": weights}], n_layers=1, n_heads=2)
    stored = json.loads(re.search(r"<script type='application/json'>(.*?)</script>", page, re.S).group(1))["inputs"][0]
    assert stored["width"] == 2
    # 2 heads x (300 counts + keys) x 2 bytes + one byte per weight: 2 * 600 + 3 * 2 + 3
    assert len(base64.b64decode(stored["data"])) == 1209
    back = _unpack(stored, 1, 2)[0, 1]
    assert back[299, 3] == 102 / 255 and back[299, 280] == 153 / 255 and back[0, 299] == 128 / 255
    assert np.count_nonzero(back) == 3


def test_cjk_pieces_draw_without_a_missing_glyph_warning(recwarn, tmp_path):
    """A WikiText piece with CJK characters: drawn by a fallback font where one is installed, else as a box,
    and never a ``Glyph ... missing from font(s) DejaVu Sans`` warning (drawing and saving every format)."""
    from headstats.plots import style

    tokens = ["[CLS]", "東京", "tower", "[SEP]"]
    for draw in (attention_heatmap, line_view):
        style.save(draw(W, tokens, title="東京 input"), tmp_path, draw.__name__)
    assert not [w for w in recwarn if "missing from font" in str(w.message)], [str(w.message) for w in recwarn]
    labels = [t.get_text() for t in attention_heatmap(W, tokens).axes[0].get_xticklabels()]
    assert labels[1] == style.drawable("東京") and labels[1] in ("東京", "□□")


def test_long_inputs_label_every_kth_piece_at_7_pt():
    n = 128
    tokens = [f"p{i}" for i in range(n)]
    weights = np.full((n, n), 1 / n)
    fig = attention_heatmap(weights, tokens)
    ax = fig.axes[0]
    labels = ax.get_xticklabels()
    k = int(round(ax.get_xticks()[1] - ax.get_xticks()[0]))
    assert k > 1 and [t.get_text() for t in labels] == tokens[::k]
    assert {t.get_fontsize() for t in labels} == {7.0}
    assert ax.get_xlabel() == f"key (attended to, every {k}{'rd' if k == 3 else 'th'} piece labelled)"
    lines = line_view(weights, tokens)
    texts = [t for t in lines.axes[0].texts]
    assert {t.get_fontsize() for t in texts} == {7.0} and len(texts) == 2 * len(range(0, n, 2))
    assert lines.get_size_inches()[1] <= 9.0  # a printed page's height
