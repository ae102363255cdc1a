"""The pictures section: a caption per pattern, and the interactive view inlined in the HTML only."""

from __future__ import annotations

import base64
import json
import re
import zlib

import numpy as np
import pandas as pd

from headstats.analyses.pictures.section import pictures_section
from headstats.report.blocks import Report, render_html, render_markdown
from headstats.tables import RunTables


def test_pictures_section_inlines_the_interactive_view_in_html_only(tmp_path):
    gallery = pd.DataFrame([{"model": "m", "dataset": "d", "pattern": "previous_word", "measure": "prev", "layer": 0,
                             "head": 1, "mean": 0.9, "sentence_id": "7", "value": 0.95}])
    q, k = np.meshgrid(np.arange(3), np.arange(3), indexing="ij")
    maps = pd.DataFrame({"model": "m", "dataset": "d", "sentence_id": "7", "layer": 0, "head": 1,
                         "query": (q + 5).ravel(), "key": (k + 5).ravel(), "weight": np.eye(3, k=-1).ravel()})
    tokens = pd.DataFrame({"model": "m", "dataset": "d", "sentence_id": "7", "position": [5, 6, 7],
                           "token": ["a", "b", "c"], "segment": [0, 0, 1], "special": False})
    report = Report("t")
    pictures_section(report, tmp_path, RunTables({"gallery": gallery, "attention_maps": maps,
                                                 "attention_tokens": tokens}))
    figure = [b for b in report.blocks if b.kind == "figure"][0]
    assert "attends to the previous word" in figure.caption
    html = render_html(report, tmp_path)
    assert "class='hs-viewer'" in html and '"tokens":["a","b","c"]' in html
    # a 1 x 2 model, positions 5..7 drawn as 0..2 (pack_explorer_weights): head 0-0 not kept, counts 0 0 0;
    # head 0-1 counts 0 1 1, keys 0 1, weights 255 255 -> bytes 00 00 00 00 01 01 00 01 ff ff (zlib, base64)
    data = json.loads(re.search(r"class='hs-data'>(.*?)</script>", html).group(1))
    item = data["inputs"][0]
    assert zlib.decompress(base64.b64decode(item["data"])) == bytes.fromhex("00000000010100 01ffff".replace(" ", ""))
    assert item["label"] == "d: input #7" and item["sieve_kinds"] == []  # a report's maps lack weights: no sums
    assert data["start"] == {"mode": "head", "layer": 0, "heads": [1], "input": 0}  # opens on the gallery's head
    assert data["stats"] is None  # no run's tables in this folder
    md = render_markdown(report, tmp_path)
    assert "hs-viewer" not in md and "interactive view of m on d (every kept input" in md


def test_a_weak_gallery_example_is_labelled_weak(tmp_path):
    gallery = pd.DataFrame([{"model": "m", "dataset": "d", "pattern": "same_word_other_sentence",
                             "measure": "same_token_other", "layer": 0, "head": 1, "mean": 0.25, "strength": 0.5,
                             "weak": True, "sentence_id": "7", "value": 0.6}])
    maps = pd.DataFrame({"model": "m", "dataset": "d", "sentence_id": "7", "layer": 0, "head": 1, "query": [0, 1],
                         "key": [1, 0], "weight": 1.0})
    tokens = pd.DataFrame({"model": "m", "dataset": "d", "sentence_id": "7", "position": [0, 1], "token": ["a", "a"],
                           "segment": [0, 1], "special": False})
    report = Report("t")
    pictures_section(report, tmp_path, RunTables({"gallery": gallery, "attention_maps": maps,
                                                 "attention_tokens": tokens}))
    figure = [b for b in report.blocks if b.kind == "figure"][0]
    assert figure.caption.startswith("Weak example: even the best head's mean 0.25 is below the stated strength 0.5")


def test_html_of_long_pictures_stays_small(tmp_path):
    """Pictures of a 128-piece input (a heat map, 300 dpi PNG on disk for print) are inlined as screen copies:
    before, a line view alone took 3.7 MB of the HTML and a clark2019 report 33 MB. The gallery draws one figure
    per pattern: the line views are the interactive view's (issue 34: the Pictures section kept to the gallery)."""
    n, rng = 128, np.random.default_rng(0)
    gallery = pd.DataFrame([{"model": "m", "dataset": "d", "pattern": "broad", "measure": "entropy_ratio",
                             "layer": 0, "head": 1, "mean": 0.9, "sentence_id": "7", "value": 0.95}])
    q, k = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    maps = pd.DataFrame({"model": "m", "dataset": "d", "sentence_id": "7", "layer": 0, "head": 1,
                         "query": q.ravel(), "key": k.ravel(),
                         "weight": rng.dirichlet(np.full(n, 0.2), size=n).ravel()})
    tokens = pd.DataFrame({"model": "m", "dataset": "d", "sentence_id": "7", "position": np.arange(n),
                           "token": [f"piece{i}" for i in range(n)], "segment": np.arange(n) >= n // 2,
                           "special": False})
    report = Report("t")
    pictures_section(report, tmp_path, RunTables({"gallery": gallery, "attention_maps": maps,
                                                 "attention_tokens": tokens}))
    figures = [b.content for b in report.blocks if b.kind == "figure"]
    on_disk = sum((tmp_path / f).stat().st_size for f in figures)
    html = render_html(report, tmp_path)
    from headstats.report.blocks import png_dpi

    assert all(round(png_dpi((tmp_path / f).read_bytes())) == 300 for f in figures)  # print quality kept
    import re

    inlined = [len(d) * 3 // 4 for d in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html)]
    assert len(inlined) == len(figures) == 1 and "attention_heatmap" in figures[0]
    assert sum(inlined) < on_disk / 3  # screen copies, not the print files
    assert len(html) < 1_000_000, f"{len(html)} bytes"  # 0.55 MB measured; inlining the files: over 4 MB
