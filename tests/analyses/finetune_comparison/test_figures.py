"""Comparison figures: each draws headless from the comparison tables and returns a Figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from headstats.analyses.finetune_comparison.figures import (
    change_map,
    heads_per_layer_before_after,
    similarity_map,
    special_mass_plot,
)


@pytest.fixture
def paired():
    rng = np.random.default_rng(0)
    rows = []
    for role in ("local", "delimiter"):
        for layer in range(3):
            for head in range(4):
                p = float(rng.uniform(0, 0.2))
                rows.append({"model_before": "base", "model_after": "ft", "dataset": "d", "role": role,
                             "layer": layer, "head": head, "median_diff": float(rng.normal()),
                             "estimate": float(rng.normal()), "effect_size": float(rng.uniform(-1, 1)),
                             "p_unc": p, "p_corr": min(1.0, 3 * p), "reject": 3 * p < 0.05})
    frame = pd.DataFrame(rows)
    frame.loc[0, ["median_diff", "p_corr"]] = np.nan  # an untested head stays blank
    return frame


@pytest.mark.parametrize("value", ["median_diff", "neglog10p", "effect_size"])
def test_change_map(paired, value, tmp_path):
    fig = change_map(paired, role="local", value=value)
    assert isinstance(fig, Figure)
    fig.savefig(tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_change_map_colours_the_tested_estimate_and_says_le_alpha(paired):
    """Issue 20: the stars test the estimate (Hodges-Lehmann for wilcoxon), so the colour is the estimate, not
    median_diff; the legend says the package's decision, p_corr <= alpha."""
    fig = change_map(paired, role="local")
    shown = np.ma.filled(fig.axes[0].images[0].get_array(), np.nan)
    part = paired[paired.role == "local"]
    want = np.full((3, 4), np.nan)
    want[part["layer"], part["head"]] = part["estimate"]
    np.testing.assert_allclose(shown, want)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["p_corr <= alpha"]
    signed = change_map(paired, role="local", value="neglog10p")
    grid = np.ma.filled(signed.axes[0].images[0].get_array(), np.nan)
    ok = np.isfinite(grid) & (grid != 0)
    assert (np.sign(grid[ok]) == np.sign(want[ok])).all()


def test_change_map_into_given_axes_and_errors(paired):
    fig = Figure()
    ax = fig.add_subplot()
    assert change_map(paired, role="delimiter", dataset="d", model_after="ft", ax=ax) is fig
    with pytest.raises(ValueError, match="value must be"):
        change_map(paired, role="local", value="p")
    with pytest.raises(ValueError, match="no paired tests"):
        change_map(paired, role="block")
    with pytest.raises(ValueError, match="choose one with dataset="):
        change_map(pd.concat([paired, paired.assign(dataset="e")]), role="local")


def test_heads_per_layer_before_after(tmp_path):
    rows = [{"model": m, "stage": s, "dataset": "d", "layer": layer, "role": role, "n_heads": n,
             "n_total": 12, "share": n / 12}
            for m, s, k in (("base", "before", 0), ("ft", "after", 2)) for layer in range(4)
            for role, n in (("local", 3 + k - layer), ("delimiter", 6 - k), ("block", 1 + layer))]
    fig = heads_per_layer_before_after(pd.DataFrame(rows), roles=["local", "delimiter", "block", ])
    assert isinstance(fig, Figure) and len([a for a in fig.axes if a.get_visible()]) == 3
    fig.savefig(tmp_path / "h.png")


def test_similarity_map_and_special_mass(tmp_path):
    sim = pd.DataFrame({"model_a": "base", "model_b": "ft", "dataset": "d", "layer": np.repeat(np.arange(3), 4),
                        "head": np.tile(np.arange(4), 3), "cosine_mean": np.linspace(0.5, 1.0, 12),
                        "cosine_sd": 0.01, "n": 10})
    fig = similarity_map(sim)
    assert isinstance(fig, Figure)
    fig.savefig(tmp_path / "s.png")
    per_layer = pd.DataFrame([{"model": m, "dataset": "d", "layer": layer, "target": t, "mass": v}
                              for m, v in (("base", 0.5), ("ft", 0.3)) for layer in range(3)
                              for t in ("cls", "sep", "other")])
    fig = special_mass_plot(per_layer, models=["base", "ft"])
    assert isinstance(fig, Figure) and len(fig.axes[0].lines) == 4
    fig.savefig(tmp_path / "m.png")
