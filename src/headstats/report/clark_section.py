"""Report sections of the Clark et al. (2019) analyses: surface patterns, clustering of heads, pictures.

Each section explains its figures in a sentence, lists the heads that pass each test, and states the paper's
claims that can be checked here with their test and whether they hold (**holds** / **does not hold**).
Registered for the analyses ``surface``, ``clustering`` and ``pictures`` (:mod:`headstats.report.sections`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from headstats.plots import attention_plots, surface_plots
from headstats.report.blocks import figure_tag, save_figure
from headstats.report.sections import register_section
from headstats.stats.hypotheses import passing_heads


def _verdict(holds: bool) -> str:
    return "**holds**" if holds else "**does not hold**"


def _heads(frame: pd.DataFrame) -> str:
    return ", ".join(f"{int(r.layer)}-{int(r.head)}" for r in frame.itertuples()) or "none"


def _test_words(tests: pd.DataFrame) -> str:
    row = tests.iloc[0]
    return (f"one-sided {row['test']} test per head, {row['correction']} correction over {row['family']}, "
            f"alpha = {row['alpha']:g}")


def surface_claims(tests: pd.DataFrame) -> list[str]:
    """The paper's claims on surface patterns that ``surface_tests.csv`` decides, one line each."""
    lines = []
    for (model, dataset), part in tests.groupby(["model", "dataset"], sort=False):
        passed = part[part["reject"].fillna(False).astype(bool)]
        where = f"{model} on {dataset}"
        for measure, what in (("prev", "previous"), ("next", "next")):
            hyp = part[part["measure"] == measure]
            if hyp.empty:
                continue
            thr = float(hyp["threshold"].iloc[0])
            held = passed[passed["measure"] == measure]
            lines.append(f"- *Some heads attend mostly to the {what} token* ({where}; test: H0 mean {measure} <= "
                         f"{thr:g}, {_test_words(part)}): {_verdict(len(held) > 0)}: {len(held)} head(s) pass "
                         f"({_heads(held)}).")
        hyp = part[part["measure"] == "entropy_ratio"]
        if not hyp.empty:
            thr = float(hyp["threshold"].iloc[0])
            first = int(hyp["layer"].min())
            layer0 = hyp[hyp["layer"] == first]
            held0 = layer0[layer0["reject"].fillna(False).astype(bool)]
            others = hyp[hyp["layer"] != first]
            held_other = others[others["reject"].fillna(False).astype(bool)]
            share0 = len(held0) / max(len(layer0), 1)
            share_other = len(held_other) / max(len(others), 1)
            holds = share0 >= 0.5 and share0 > share_other
            lines.append(
                f"- *Heads of the first layer attend broadly* ({where}; test: H0 mean entropy / ln n <= {thr:g} per "
                f"head, {_test_words(part)}; the claim holds when at least half of layer {first}'s heads pass and a "
                f"larger share than in the other layers): {_verdict(holds)}: {len(held0)} of {len(layer0)} heads "
                f"of layer {first} pass ({share0:.0%}), {len(held_other)} of {len(others)} in the other layers "
                f"({share_other:.0%}).")
    return lines


def surface_section(report: Any, root: Path, tables: Mapping[str, pd.DataFrame]) -> None:
    """Surface patterns by layer (Clark et al. Figures 1, 2, 4), the tests and the paper's claims."""
    surface = tables["surface"]
    tests = tables.get("surface_tests")
    report.heading("Surface patterns (Clark et al. 2019)")
    report.text(
        "Per head, the mean attention to the previous, current and next piece, to [CLS], to [SEP] and to "
        "\".\" and \",\", averaged over each input's queries, then over inputs; and the row entropy against the "
        "uniform reference ln n (METHODS 2.1). Per-input values are kept, so each declared hypothesis (protocol "
        "key `surface.hypotheses`) is tested per head, one-sided, with the protocol's test and correction: "
        "`surface_tests.csv` (column `role` is the hypothesis, `measure` and `threshold` what it tests). Every "
        "head: `surface.csv`."
    )
    if tests is not None and len(tests):
        report.heading("What the paper claims, tested", level=3)
        report.text("\n".join(surface_claims(tests)))
        report.table(passing_heads(tests), "Heads that pass each declared hypothesis (layer-head, 0-indexed).",
                     max_rows=60, csv="surface_tests.csv", fold=False)
    for (model, dataset), part in surface.groupby(["model", "dataset"], sort=False):
        tag = figure_tag(model, dataset)
        t = None if tests is None else tests[(tests["model"] == model) & (tests["dataset"] == dataset)]
        where = f"{model} on {dataset}"
        report.heading(f"Surface patterns: {where}", level=3)
        fig = surface_plots.surface_by_layer(part, ["prev", "self", "next"], tests=t,
                                             title=f"attention by relative position: {where}")
        report.figure(save_figure(fig, root, f"surface_position_{tag}"),
                      "Attention to the previous, current and next piece: a point per head at its layer, filled when "
                      "the head passes its hypothesis; the line joins the layer means. Heads near 1 attend almost "
                      "only to that neighbour (Clark et al. Figure 1).", alt=f"relative position, {where}")
        fig = surface_plots.surface_by_layer(part, ["cls", "sep", "punct"], tests=t,
                                             title=f"attention to [CLS], [SEP] and punctuation: {where}")
        report.figure(save_figure(fig, root, f"surface_kinds_{tag}"),
                      "Attention to [CLS], to every [SEP] and to \".\"/\",\" per head by layer (Clark et al. Figure 2): "
                      "look for the layers where [SEP] takes most of the mass.", alt=f"token kinds, {where}")
        fig = surface_plots.surface_by_layer(part, ["sep_to_sep", "other_to_sep"],
                                             title=f"[SEP] -> [SEP] against other -> [SEP]: {where}")
        report.figure(save_figure(fig, root, f"surface_sep_{tag}"),
                      "Mass on [SEP] from [SEP] queries (left) and from every other query (right): when the left is "
                      "much higher, heads park [SEP]'s attention on itself (a no-op), as Clark et al. argue.",
                      alt=f"sep to sep, {where}")
        fig = surface_plots.entropy_by_layer(part, tests=t, title=f"attention entropy: {where}")
        report.figure(save_figure(fig, root, f"surface_entropy_{tag}"),
                      "Mean row entropy (left; filled: passes the broad-attention hypothesis) and the [CLS] row's "
                      "entropy (right) per head by layer; dashed: uniform attention (mean ln n). Points near the "
                      "line attend broadly (Clark et al. Figure 4).", alt=f"entropy, {where}")
    report.table(surface, "Surface measures of every head (means over inputs).", max_rows=30, csv="surface.csv",
                 fold=True)


def clustering_claims(tests: pd.DataFrame) -> list[str]:
    lines = []
    for r in tests.itertuples():
        lines.append(
            f"- *Heads of one layer sit together* ({r.model} on {r.dataset}; test: mean JS divergence per query of "
            f"same-layer pairs against different-layer pairs, one-sided permutation test of the layer labels, "
            f"{r.n_permutations} permutations, seed {r.seed}, alpha = {r.alpha:g}): {_verdict(bool(r.reject))}: "
            f"within {r.within_mean:.3f}, between {r.between_mean:.3f} nats (ratio {r.ratio:.2f}), p = {r.p_value:.2g}.")
    return lines


def clustering_section(report: Any, root: Path, tables: Mapping[str, pd.DataFrame]) -> None:
    """JS divergence between heads, the MDS by layer and by behaviour, and the layer-clustering test."""
    js, mds = tables["js_distance"], tables["mds"]
    tests = tables.get("clustering_tests")
    report.heading("Clustering heads (Clark et al. 2019)")
    report.text(
        "The distance between two heads is the Jensen-Shannon divergence of their attention rows for the same "
        "query (rows smoothed as 0.999 A + 0.001 / n), per query (`js_mean`; the released code's sum is "
        "`js_sum`), over the first inputs of each data set (protocol key `clustering.max_inputs`). A seeded "
        "metric MDS puts the heads in two dimensions (`mds.csv`); it is defined up to rotation and reflection, "
        "so read distances, not axes."
    )
    if tests is not None and len(tests):
        report.text("\n".join(clustering_claims(tests)))
        report.table(tests, "The layer-clustering test per model and data set.", csv="clustering_tests.csv",
                     fold=False)
    for (model, dataset), part in mds.groupby(["model", "dataset"], sort=False):
        tag = figure_tag(model, dataset)
        where = f"{model} on {dataset}"
        pj = js[(js["model"] == model) & (js["dataset"] == dataset)]
        n_inputs = int(pj["n_inputs"].iloc[0]) if len(pj) else 0
        fig = surface_plots.js_heatmap(pj, title=f"JS divergence between heads: {where}")
        report.figure(save_figure(fig, root, f"js_distance_{tag}"),
                      f"JS divergence per query between every pair of heads ({n_inputs} inputs), heads in layer "
                      "order; dark blocks on the diagonal mean heads of one layer attend alike.",
                      alt=f"JS divergence, {where}")
        if part[["x", "y"]].isna().all().all():
            continue
        fig = surface_plots.mds_plot(part, colour_by="layer", title=f"heads by layer: {where}")
        report.figure(save_figure(fig, root, f"mds_layer_{tag}"),
                      "Heads placed by MDS of their JS divergence, coloured by layer (Clark et al. Figure 6): "
                      "heads of one layer close together support the clustering claim.", alt=f"MDS by layer, {where}")
        fig = surface_plots.mds_plot(part, colour_by="behaviour", title=f"heads by behaviour: {where}")
        report.figure(save_figure(fig, root, f"mds_behaviour_{tag}"),
                      "The same map coloured by each head's dominant behaviour (more than half its mass on the "
                      "previous, current or next piece, [CLS], [SEP] or punctuation; else broad if its entropy is "
                      "near uniform, else mixed): heads of one behaviour cluster together.",
                      alt=f"MDS by behaviour, {where}")


def _picture(maps: pd.DataFrame, tokens: pd.DataFrame, model: str, dataset: str, sentence_id: str, layer: int,
             head: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    tok = tokens[(tokens["model"] == model) & (tokens["dataset"] == dataset)
                 & (tokens["sentence_id"].astype(str) == str(sentence_id))].sort_values("position")
    m = maps[(maps["model"] == model) & (maps["dataset"] == dataset) & (maps["sentence_id"].astype(str) == str(sentence_id))
             & (maps["layer"] == layer) & (maps["head"] == head)]
    n = len(tok)
    index = pd.Index(tok["position"].to_numpy(int))
    weights = np.zeros((n, n))
    weights[index.get_indexer(m["query"].to_numpy(int)), index.get_indexer(m["key"].to_numpy(int))] = \
        m["weight"].to_numpy(float)
    return weights, tok["token"].astype(str).tolist(), tok["segment"].to_numpy(int)


PATTERN_WORDS = {
    "next_word": "attends to the next word", "previous_word": "attends to the previous word",
    "identical_words": "attends to identical words elsewhere in the input",
    "same_word_other_sentence": "attends to the same word in the other sentence",
    "delimiters": "attends to the delimiters [CLS] and [SEP]", "broad": "attends broadly",
}


def pictures_section(report: Any, root: Path, tables: Mapping[str, pd.DataFrame]) -> None:
    """The gallery of BertViz patterns: per pattern, a heat map and a line view; then the interactive view."""
    gallery, maps, tokens = tables["gallery"], tables["attention_maps"], tables["attention_tokens"]
    report.heading("Pictures of attention (BertViz patterns)")
    report.text(
        "For each of the six patterns BertViz shows, the head whose mean over all inputs of the matching "
        "measure is largest (`gallery.csv`: next word `next`, previous word `prev`, identical words `same_token`, "
        "the same word in the other sentence `same_token_other`, delimiters `cls + sep`, broad attention "
        "`entropy_ratio`), drawn on the kept input where that head shows it most. Long inputs are drawn on the "
        "first pieces of each sentence (protocol key `pictures.max_pieces`; weights to pieces not drawn are left "
        "out); the maps drawn are in `attention_maps.csv` and `attention_tokens.csv`."
    )
    if gallery.empty:
        report.text("No input was kept, so there is nothing to draw.")
        return
    report.table(gallery, "The head chosen for each pattern, its mean over inputs and the input shown.",
                 csv="gallery.csv", fold=False)
    views = []
    for r in gallery.itertuples():
        weights, toks, segment = _picture(maps, tokens, r.model, r.dataset, r.sentence_id, int(r.layer), int(r.head))
        title = f"{r.pattern.replace('_', ' ')}: head {r.layer}-{r.head}, input {r.sentence_id}"
        tag = figure_tag(r.model, r.dataset, r.pattern)
        words = PATTERN_WORDS.get(r.pattern, r.pattern)
        fig = attention_plots.attention_heatmap(weights, toks, title=title)
        report.figure(save_figure(fig, root, f"attention_heatmap_{tag}"),
                      f"Head {r.layer}-{r.head} of {r.model} ({r.dataset}, input {r.sentence_id}), which {words} "
                      f"({r.measure} = {r.value:.2f} on this input, {r.mean:.2f} on average): each row is a query's "
                      "attention over the keys.", alt=title)
        fig = attention_plots.line_view(weights, toks, segment=segment, title=title)
        report.figure(save_figure(fig, root, f"attention_lines_{tag}"),
                      f"The same map as lines from each query (left) to the keys it attends to (right), opacity = "
                      f"weight: head {r.layer}-{r.head} {words}.", alt=f"line view, {title}")
        views.append({"label": f"{r.model} / {r.dataset}: {title}", "tokens": toks, "weights": weights,
                      "segment": segment, "caption": f"Head {r.layer}-{r.head} {words}."})
    shown = {(r.model, r.dataset, str(r.sentence_id), int(r.layer), int(r.head)) for r in gallery.itertuples()}
    extra = maps[["model", "dataset", "sentence_id", "layer", "head"]].drop_duplicates()
    for r in extra.itertuples():
        if (r.model, r.dataset, str(r.sentence_id), int(r.layer), int(r.head)) in shown:
            continue
        weights, toks, segment = _picture(maps, tokens, r.model, r.dataset, r.sentence_id, int(r.layer), int(r.head))
        views.append({"label": f"{r.model} / {r.dataset}: head {r.layer}-{r.head}, input {r.sentence_id}",
                      "tokens": toks, "weights": weights, "segment": segment,
                      "caption": "A head named in the protocol (pictures.heads)."})
    report.heading("Interactive view", level=3)
    report.html(attention_plots.interactive_view_html(views, element_id=f"hs-attention-{len(report.blocks)}"),
                note="The interactive view of these heads is in report.html (it works offline).")


register_section("surface", surface_section)
register_section("clustering", clustering_section)
register_section("pictures", pictures_section)
