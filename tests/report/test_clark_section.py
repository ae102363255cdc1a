"""The Clark et al. sections: claims stated with their test and verdict, passing heads listed, figures written,
and the interactive view inlined in the HTML only."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.report.blocks import Report, render_html, render_markdown
from headstats.report.clark_section import (
    clustering_claims,
    clustering_section,
    pictures_section,
    surface_claims,
    surface_section,
)


def surface_tables():
    rows, tests = [], []
    for layer in range(2):
        for head in range(3):
            rows.append({"model": "m", "dataset": "d", "layer": layer, "head": head, "prev": 0.9 if (layer, head) == (1, 2) else 0.1,
                         "self": 0.1, "next": 0.1, "cls": 0.2, "sep": 0.3, "punct": 0.05, "sep_to_sep": 0.8,
                         "other_to_sep": 0.2, "entropy": 4.0 if layer == 0 else 2.0, "entropy_cls": 3.0,
                         "entropy_uniform": 4.5})
            for name, measure, thr in (("previous_token", "prev", 0.5), ("next_token", "next", 0.5),
                                       ("broad", "entropy_ratio", 0.75)):
                reject = (measure == "prev" and (layer, head) == (1, 2)) or (measure == "entropy_ratio" and layer == 0)
                tests.append({"model": "m", "dataset": "d", "role": name, "layer": layer, "head": head, "test": "t",
                              "correction": "holm", "family": "model=m|dataset=d", "alpha": 0.05,
                              "reject": reject, "measure": measure, "threshold": thr})
    return {"surface": pd.DataFrame(rows), "surface_tests": pd.DataFrame(tests)}


def test_surface_claims_and_section(tmp_path):
    tables = surface_tables()
    lines = surface_claims(tables["surface_tests"])
    assert "previous token" in lines[0] and "**holds**: 1 head(s) pass (1-2)" in lines[0]
    assert "next token" in lines[1] and "**does not hold**: 0 head(s) pass (none)" in lines[1]
    assert "first layer attend broadly" in lines[2] and "**holds**: 3 of 3 heads of layer 0 pass (100%), 0 of 3" in lines[2]
    report = Report("t")
    surface_section(report, tmp_path, tables)
    md = render_markdown(report, tmp_path)
    assert "holm correction over model=m|dataset=d" in md
    for name in ("surface_position", "surface_kinds", "surface_sep", "surface_entropy"):
        assert list((tmp_path / "figures").glob(f"{name}_m__d.png"))


def test_clustering_claims_and_section(tmp_path):
    k = np.arange(6)
    a, b = np.meshgrid(k, k, indexing="ij")
    js = pd.DataFrame({"model": "m", "dataset": "d", "layer_a": (a // 3).ravel(), "head_a": (a % 3).ravel(),
                       "layer_b": (b // 3).ravel(), "head_b": (b % 3).ravel(), "js_sum": 0.0,
                       "js_mean": np.where((a // 3) == (b // 3), 0.1, 0.4).ravel() * (a != b).ravel(),
                       "n_queries": 10, "n_inputs": 2})
    mds = pd.DataFrame({"model": "m", "dataset": "d", "layer": k // 3, "head": k % 3, "x": [0, 0.1, 0.2, 1, 1.1, 1.2],
                        "y": [0, 0.1, 0, 1, 1, 1.1], "stress": 0.0, "behaviour": ["prev", "broad", "mixed"] * 2})
    tests = pd.DataFrame([{"model": "m", "dataset": "d", "claim": "heads of one layer sit together", "n_items": 6,
                           "n_groups": 2, "within_mean": 0.1, "between_mean": 0.4, "statistic": 0.3, "ratio": 0.25,
                           "p_value": 0.1, "n_permutations": 9, "seed": 0, "alpha": 0.05, "reject": False}])
    assert "**does not hold**: within 0.100, between 0.400 nats (ratio 0.25), p = 0.1" in clustering_claims(tests)[0]
    report = Report("t")
    clustering_section(report, tmp_path, {"js_distance": js, "mds": mds, "clustering_tests": tests})
    assert {p.stem for p in (tmp_path / "figures").glob("*.png")} == {"js_distance_m__d", "mds_layer_m__d",
                                                                       "mds_behaviour_m__d"}


def test_pictures_section_inlines_the_interactive_view_in_html_only(tmp_path):
    gallery = pd.DataFrame([{"model": "m", "dataset": "d", "pattern": "previous_word", "measure": "prev", "layer": 0,
                             "head": 1, "mean": 0.9, "sentence_id": "7", "value": 0.95}])
    q, k = np.meshgrid(np.arange(3), np.arange(3), indexing="ij")
    maps = pd.DataFrame({"model": "m", "dataset": "d", "sentence_id": "7", "layer": 0, "head": 1,
                         "query": (q + 5).ravel(), "key": (k + 5).ravel(), "weight": np.eye(3, k=-1).ravel()})
    tokens = pd.DataFrame({"model": "m", "dataset": "d", "sentence_id": "7", "position": [5, 6, 7],
                           "token": ["a", "b", "c"], "segment": [0, 0, 1], "special": False})
    report = Report("t")
    pictures_section(report, tmp_path, {"gallery": gallery, "attention_maps": maps, "attention_tokens": tokens})
    figure = [b for b in report.blocks if b.kind == "figure"][0]
    assert "attends to the previous word" in figure.caption
    html = render_html(report, tmp_path)
    assert "hs-attention-view" in html and '"tokens":["a","b","c"]' in html
    assert '"weights":[[0.0,0.0,0.0],[1.0,0.0,0.0],[0.0,1.0,0.0]]' in html  # positions 5..7 drawn as 0..2
    md = render_markdown(report, tmp_path)
    assert "hs-attention-view" not in md and "interactive view of these heads is in report.html" in md
