"""Pictures of one head: heat map, line view, and the offline interactive view."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

from headstats.analyses.pictures.figures import attention_heatmap, line_view

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
