"""The viewer inside a run's report: the kept inputs of ``pictures``, with each head's roles, stored scores
against tau and claims."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from report.viewer.helpers import chromium, dump_dom


def test_the_reports_viewer_shows_the_runs_roles_and_stored_scores_of_its_kept_inputs(viewer_run):
    html = (viewer_run / "report.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r"class='hs-data'>(.*?)</script>", html).group(1))
    assert data["stats"]["where"] == "tiny on single" and data["window"] == 1
    roles = pd.read_csv(viewer_run / "roles.csv").fillna({"roles": ""})
    assert data["stats"]["roles"] == {f"{r.layer}-{r.head}": [x for x in r.roles.split("+") if x]
                                      for r in roles.itertuples()}
    scores = pd.read_parquet(viewer_run / "scores.parquet").astype({"sentence_id": str, "role": str})
    kept = pd.read_csv(viewer_run / "attention_tokens.csv").astype({"sentence_id": str})
    assert [v["sentence_id"] for v in data["inputs"]] == list(dict.fromkeys(kept["sentence_id"]))
    for item in data["inputs"]:  # a role's grid is the stored per-input score of this input
        for role in ("local", "delimiter_sep"):
            mine = scores[(scores["sentence_id"] == item["sentence_id"]) & (scores["role"] == role)]
            grid = np.full((2, 2), np.nan)
            grid[mine["layer"], mine["head"]] = mine["score"]
            np.testing.assert_allclose(item["stored"][role], grid.ravel(), rtol=1e-12)
    if chromium() is None:
        pytest.skip("needs Chromium for the page's panel")
    held = next(k for k, v in data["stats"]["roles"].items() if v)
    layer, head = held.split("-")
    dom = dump_dom(viewer_run / "report.html", f"#mode=head&layer={layer}&heads={head}")
    panel = dom[dom.index('class="hs-info"'):]
    assert f"Roles held in the run (tiny on single): {', '.join(data['stats']['roles'][held])}" in panel
    value = data["inputs"][data["start"]["input"] if data["start"] else 0]["stored"]["local"][int(layer) * 2 + int(head)]
    assert f"local on this input: {value:.3f}" in panel
    dom = dump_dom(viewer_run / "report.html", "#mode=sieve&sieve=local")
    assert "the run's stored per-input scores (scores.parquet)" in dom
