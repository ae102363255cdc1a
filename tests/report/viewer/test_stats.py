"""Beside a run, the viewer shows each head's roles, the run's tau, its claims and where it scores highest."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import headstats as hs
from headstats.report.viewer.stats import claim_roles
from report.viewer.helpers import SENTENCE, SIEVE_ROLES, chromium, dump_dom


def test_a_claim_names_the_roles_in_its_key_and_sentence():
    roles = ["local", "delimiter", "delimiter_cls", "delimiter_sep", "syntactic"]
    assert claim_roles("cls_early", "[CLS] heads sit in the early layers", roles) == ["delimiter_cls"]
    assert claim_roles("local_syntactic", "local and syntactic heads", roles) == ["local", "syntactic"]
    assert claim_roles("delimiter_largest", "delimiter heads are the largest group", roles) == ["delimiter"]
    assert claim_roles("few_multi_role_late", "few heads hold several roles", roles) == []


def test_beside_a_run_the_page_shows_roles_tau_claims_and_where_each_head_scores_highest(viewer_run, tiny_model,
                                                                                           tmp_path):
    import pandas as pd

    view = hs.view(tiny_model, SENTENCE, run=viewer_run)
    stats, data = view.data["stats"], view.data
    assert stats["where"] == "tiny on single" and stats["tau"] == {r: 1.0 for r in SIEVE_ROLES}
    assert data["window"] == 1  # the run's scoring, so that the grid is the run's score
    roles = pd.read_csv(viewer_run / "roles.csv").fillna({"roles": ""})
    assert stats["roles"] == {f"{r.layer}-{r.head}": [x for x in r.roles.split("+") if x] for r in roles.itertuples()}
    # the ranking is the stored per-input scores, highest first (no model)
    scores = pd.read_parquet(viewer_run / "scores.parquet").astype({"sentence_id": str, "role": str})
    for role in SIEVE_ROLES:
        mine = scores[(scores["role"] == role) & (scores["layer"] == 1) & (scores["head"] == 0)]
        top = mine.sort_values("score", ascending=False, kind="stable").head(5)
        assert [e[0] for e in stats["rank"][role]["1-0"]] == top["sentence_id"].tolist()
        np.testing.assert_allclose([e[1] for e in stats["rank"][role]["1-0"]], top["score"], atol=5e-5)
        assert all(e[2] for e in stats["rank"][role]["1-0"])  # the sentence's text, read from the run's data set
    claims = pd.read_csv(viewer_run / "claims.csv")
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


def test_beside_a_run_of_two_measures_the_page_shows_the_primary_one(tiny_model_dir, tiny_model, tmp_path):
    """``measures: [norm, weights]``: the roles and rankings beside the attention are the primary (norm) rows of
    roles.csv and scores.parquet, never a mix of both measures."""
    import pandas as pd
    import yaml

    from headstats.report.viewer.stats import run_stats

    protocol = {"name": "tiny", "models": [{"name": "tiny", "path": str(tiny_model_dir)}],
                "datasets": [{"name": "single", "path": str(Path(__file__).resolve().parents[3] / "data" / "demo"
                                                            / "sentences.txt"), "limit": 12}],
                "scoring": {"roles": ["local", "delimiter_cls"], "window": 1, "measures": ["norm", "weights"]},
                "statistics": {"test": "t", "tau": 1.0, "sensitivity": False},
                "report": {"html": False, "figures": {"formats": ["png"], "dpi": 72}}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(protocol))
    run = hs.run(tmp_path / "p.yaml", tmp_path / "run", progress=False).out
    stats, _ = run_stats(run)
    roles = pd.read_csv(run / "roles.csv").fillna({"roles": ""})
    assert roles["measure"].unique().tolist() == ["norm", "weights"]
    norm = roles[roles["measure"] == "norm"]
    assert stats["roles"] == {f"{r.layer}-{r.head}": [x for x in r.roles.split("+") if x] for r in norm.itertuples()}
    scores = pd.read_parquet(run / "scores.parquet").astype({"sentence_id": str, "role": str, "measure": str})
    mine = scores[(scores["measure"] == "norm") & (scores["role"] == "local") & (scores["layer"] == 1)
                  & (scores["head"] == 0)].sort_values("score", ascending=False, kind="stable").head(5)
    np.testing.assert_allclose([e[1] for e in stats["rank"]["local"]["1-0"]], mine["score"], atol=5e-5)
