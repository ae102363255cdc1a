"""Report section of the ``clustering`` analysis (Clark et al. 2019, section 6): the JS divergence between heads,
the MDS by layer and by behaviour, and the layer-clustering test with the registry's verdict (``claims.csv``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from headstats.analyses.clustering import figures
from headstats.analyses.clustering.tables import CLUSTERING_TESTS, JS_DISTANCE, MDS
from headstats.report.blocks import figure_tag
from headstats.report.figures import draw_figure
from headstats.report.sections import claim_lines
from headstats.tables import RunTables


def clustering_claims(tests: pd.DataFrame) -> list[str]:
    """The paper's claim that heads of one layer sit together, one line per row of ``clustering_tests``."""
    lines = []
    for r in tests.itertuples():
        lines.append(
            f"- *Heads of one layer sit together* ({r.model} on {r.dataset}; test: mean JS divergence per query of "
            f"same-layer pairs against different-layer pairs, one-sided permutation test of the layer labels, "
            f"{r.n_permutations} permutations, seed {r.seed}, alpha = {r.alpha:g}): "
            f"within {r.within_mean:.3f}, between {r.between_mean:.3f} nats (ratio {r.ratio:.2f}), p = {r.p_value:.2g}.")
    return lines


def clustering_section(report: Any, root: Path, tables: RunTables) -> None:
    """JS divergence between heads, the MDS by layer and by behaviour, and the layer-clustering test."""
    js, mds = tables[JS_DISTANCE], tables[MDS]
    tests = tables.get(CLUSTERING_TESTS)
    report.heading("Clustering heads (Clark et al. 2019)")
    report.text(
        "The distance between two heads is the Jensen-Shannon divergence of their attention rows for the same "
        "query (rows smoothed as 0.999 A + 0.001 / n), per query (`js_mean`; the released code's sum is "
        "`js_sum`), over the first inputs of each data set (protocol key "
        "`analysis_options.clustering.max_inputs`). A seeded metric MDS puts the heads in two dimensions "
        "(`mds.csv`); it is defined up to rotation and reflection, so read distances, not axes."
    )
    if tests is not None and len(tests):
        report.text("\n".join(clustering_claims(tests) + claim_lines(tables, ("layer_heads_cluster",))))
        report.table(tests, "The layer-clustering test per model and data set.", csv="clustering_tests.csv",
                     fold=False)
    for (model, dataset), part in mds.groupby(["model", "dataset"], sort=False):
        tag = figure_tag(model, dataset)
        where = f"{model} on {dataset}"
        pj = js[(js["model"] == model) & (js["dataset"] == dataset)]
        n_inputs = int(pj["n_inputs"].iloc[0]) if len(pj) else 0
        report.figure(draw_figure(root, f"js_distance_{tag}", figures.js_heatmap, pj, title=f"JS divergence between heads: {where}"),
                      f"JS divergence per query between every pair of heads ({n_inputs} inputs), heads in layer "
                      "order; dark blocks on the diagonal mean heads of one layer attend alike.",
                      alt=f"JS divergence, {where}")
        if part[["x", "y"]].isna().all().all():
            continue
        report.figure(draw_figure(root, f"mds_layer_{tag}", figures.mds_plot, part, colour_by="layer", title=f"heads by layer: {where}"),
                      "Heads placed by MDS of their JS divergence, coloured by layer (Clark et al. Figure 6): "
                      "heads of one layer close together support the clustering claim. A head whose label would "
                      "overlap another label or point is left unlabelled (the axis says how many are); every head "
                      "is in `mds.csv`.", alt=f"MDS by layer, {where}")
        report.figure(draw_figure(root, f"mds_behaviour_{tag}", figures.mds_plot, part, colour_by="behaviour", title=f"heads by behaviour: {where}"),
                      "The same map coloured by each head's dominant behaviour (more than half its mass on the "
                      "previous, current or next piece, [CLS], [SEP] or punctuation; else broad if its entropy is "
                      "near uniform, else mixed): heads of one behaviour cluster together.",
                      alt=f"MDS by behaviour, {where}")
