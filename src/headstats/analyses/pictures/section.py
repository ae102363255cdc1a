"""Report section of the ``pictures`` analysis: per BertViz pattern, the head that shows it best as a heat map
and a line view, then the offline interactive view of those heads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from headstats.analyses.pictures import figures
from headstats.analyses.pictures.tables import ATTENTION_MAPS, ATTENTION_TOKENS, GALLERY
from headstats.report.blocks import figure_tag
from headstats.report.figures import draw_figure
from headstats.tables import RunTables


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


def check_maps(maps: pd.DataFrame, tokens: pd.DataFrame) -> None:
    """Refuse, in one line, attention maps that are not what the run wrote: a query or key that is not a piece
    of its input (``attention_tokens.csv``), a weight that is missing, infinite or outside [0, 1], or a negative
    layer or head (a run folder from elsewhere is data, never trusted)."""
    from headstats.errors import HeadstatsError

    def printable(text: str) -> str:  # one line whatever the folder holds
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)

    def refuse(what: str) -> None:
        raise HeadstatsError(f"attention_maps.csv {what}, which no run writes; rerun `headstats run` (with the "
                             "pictures analysis) to rebuild its tables")

    weight = pd.to_numeric(maps["weight"], errors="coerce").to_numpy(float)
    bad = ~np.isfinite(weight) | (weight < 0) | (weight > 1 + 1e-6)
    if bad.any():
        refuse(f"holds the weight {printable(str(maps['weight'].iloc[int(np.argmax(bad))]))[:40]!r} (row {int(np.argmax(bad)) + 1}), "
               "not a number in [0, 1]")
    for column in ("layer", "head", "query", "key"):
        values = pd.to_numeric(maps[column], errors="coerce").to_numpy(float)
        wrong = ~np.isfinite(values) | (values < 0) | (values != np.round(values))
        if wrong.any():
            refuse(f"holds the {column} {printable(str(maps[column].iloc[int(np.argmax(wrong))]))[:40]!r} (row "
                   f"{int(np.argmax(wrong)) + 1}), not a position")
    pieces = pd.MultiIndex.from_arrays([tokens["dataset"].astype(str).to_numpy(object),
                                        tokens["sentence_id"].astype(str).to_numpy(object),
                                        tokens["position"].astype(int).to_numpy()])
    inputs = [maps["dataset"].astype(str).to_numpy(object), maps["sentence_id"].astype(str).to_numpy(object)]
    for column in ("query", "key"):  # every (data set, input, position) in the tokens' (one look-up per row)
        found = pd.MultiIndex.from_arrays([*inputs, pd.to_numeric(maps[column]).astype(int).to_numpy()]).isin(pieces)
        if not found.all():
            row = int(np.argmin(found))
            refuse(f"holds the {column} {int(maps[column].iloc[row])} of input "
                   f"{printable(str(maps['sentence_id'].iloc[row]))[:40]!r} (row {row + 1}), which has no such piece "
                   "in attention_tokens.csv")


def short_id(value: object, most: int = 18) -> str:
    """An input id as titles show it: whole up to ``most`` characters, else its start and end around an
    ellipsis (``wiki.test.raw:1234…-5678``), so that a title is never cut at the figure's edge."""
    text = str(value)
    return text if len(text) <= most else f"{text[: most - 7]}…{text[-6:]}"


PATTERN_WORDS = {
    "next_word": "attends to the next word", "previous_word": "attends to the previous word",
    "identical_words": "attends to identical words elsewhere in the input",
    "same_word_other_sentence": "attends to the same word in the other sentence",
    "delimiters": "attends to the delimiters [CLS] and [SEP]", "broad": "attends broadly",
}


def pictures_section(report: Any, root: Path, tables: RunTables) -> None:
    """The gallery of BertViz patterns: per pattern, a heat map of the head that shows it best; then the
    interactive view, which shows every head of every kept input as lines (BertViz's head view) and as a heat map.

    The gallery's line views are not drawn as figures (they doubled the section's figures and repeat the
    interactive view); :func:`headstats.analyses.pictures.figures.line_view` draws one for print from
    ``attention_maps.csv``."""
    gallery, maps, tokens = tables[GALLERY], tables[ATTENTION_MAPS], tables[ATTENTION_TOKENS]
    report.heading("Pictures of attention (BertViz patterns)")
    report.text(
        "For each of the six patterns BertViz shows, the head whose mean over all inputs of the matching "
        "measure is largest (`gallery.csv`: next word `next`, previous word `prev`, identical words `same_token`, "
        "the same word in the other sentence `same_token_other`, delimiters `cls + sep`, broad attention "
        "`entropy_ratio`), drawn on the kept input where that head shows it most. Long inputs are drawn on the "
        "first pieces of each sentence (protocol key `analysis_options.pictures.max_pieces`; weights to pieces "
        "not drawn are left out); the maps drawn are in `attention_maps.csv` and `attention_tokens.csv`."
    )
    if gallery.empty:
        report.text("No input was kept, so there is nothing to draw.")
        return
    check_maps(maps, tokens)
    report.table(gallery, "The head chosen for each pattern, its mean over inputs and the input shown.",
                 csv="gallery.csv", fold=False)
    for r in gallery.itertuples():
        weights, toks, _ = _picture(maps, tokens, r.model, r.dataset, r.sentence_id, int(r.layer), int(r.head))
        title = f"{r.pattern.replace('_', ' ')}: head {r.layer}-{r.head}, input #{short_id(r.sentence_id)}"
        tag = figure_tag(r.model, r.dataset, r.pattern)
        words = PATTERN_WORDS.get(r.pattern, r.pattern)
        weak = (f"Weak example: even the best head's mean {r.mean:.2f} is below the stated strength "
                f"{r.strength:g} of this pattern. " if bool(getattr(r, "weak", False)) else "")
        report.figure(draw_figure(root, f"attention_heatmap_{tag}", figures.attention_heatmap, weights, toks,
                                  title=title),
                      f"{weak}Head {r.layer}-{r.head} of {r.model} ({r.dataset}, input #{short_id(r.sentence_id)}), which {words} "
                      f"({r.measure} = {r.value:.2f} on this input, {r.mean:.2f} on average): each row is a query's "
                      "attention over the keys.", alt=title)
    report.heading("Interactive view", level=3)
    from headstats.report.viewer.in_report import report_viewers

    for model, dataset, fragment in report_viewers(root, gallery, maps, tokens):
        report.html(fragment, note=f"The interactive view of {model} on {dataset} (every kept input: a model view of "
                                   "every head, a head view with a colour key, a heat map and a sieve grid, with each "
                                   "head's roles, scores against tau and claims; pieces or words; saved as SVG or "
                                   "PNG) is in report.html; it works offline.")
