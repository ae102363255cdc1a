"""Dependency relations in single heads (METHODS 2.3): planted word-level maps with hand-computed predictions,
accuracies, offsets and discordant counts, and the analysis on a tiny random model through a protocol."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from headstats.analyses.dependency.collect import (DependencyAccuracy, head_predictions, offset_predictions, relation_label)
from headstats.engine.batch import view_of
from headstats.engine.collector import Context
from headstats.model.encoding import Arc, EncodedInput


# units: 0 [CLS], 1 a, 2 b, 3 c, 4 d, 5 [SEP]; gold: a -det-> b, b -nsubj-> c, d -dobj-> c, c is the root
ROWS = [
    [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.1, 0.0, 0.5, 0.2, 0.2, 0.0],   # a: b
    [0.0, 0.1, 0.0, 0.2, 0.3, 0.4],   # b: [SEP] dropped, then d
    [0.0, 0.3, 0.3, 0.0, 0.1, 0.3],   # c: a and b tie -> a (lowest index)
    [0.0, 0.1, 0.1, 0.3, 0.5, 0.0],   # d: itself dropped, then c
    [0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
]
ARCS = [Arc((1,), (2,), "det"), Arc((2,), (3,), "nsubjpass"), Arc((4,), (3,), "dobj")]


def sentence(index: int) -> EncodedInput:
    n = 6
    special = np.zeros(n, bool)
    special[[0, 5]] = True
    return EncodedInput(index, f"s{index}", np.arange(n), np.zeros(n, int), special, special & (np.arange(n) == 0),
                        special & (np.arange(n) == 5), np.zeros(n, int), False,
                        word_pieces=[(1,), (2,), (3,), (4,)], arcs=list(ARCS))


def planted() -> torch.Tensor:
    """Head 0: ROWS; head 1: uniform (every prediction a tie)."""
    attn = torch.zeros(2, 1, 2, 6, 6)
    attn[:, 0, 0] = torch.tensor(ROWS)
    attn[:, 0, 1] = 1 / 6
    return attn


def context() -> Context:
    return Context(("m",), "d", 1, 2)


def test_head_predictions_by_hand():
    view = view_of(planted()[:1], [sentence(0)])
    to_head, to_dep = head_predictions(view.word_attention(), view.word_units.textual)
    # dependent -> head rows (units a..d): b, d, a (tie), c
    assert to_head[0, 0, 0, 1:5].tolist() == [2, 4, 1, 3]
    # head -> dependent: for a, max of W[b|c|d, a] = 0.1, 0.3, 0.1 -> c; for b: W[a,b] .5 -> a; for d: W[b,d] .3 -> b
    assert to_dep[0, 0, 0, [1, 2, 4]].tolist() == [3, 1, 2]
    # uniform head: the lowest word that is not the word itself
    assert to_head[0, 0, 1, 1:5].tolist() == [2, 1, 1, 1]


def test_head_predictions_equal_a_plain_loop_with_many_ties():
    # word maps of values in {0, 1/2, 1} (ties everywhere), some units not candidates: both directions against
    # numpy's argmax (the first maximum) over the allowed units, one unit at a time
    g = torch.Generator().manual_seed(3)
    attn = torch.randint(0, 3, (3, 2, 2, 7, 7), generator=g).to(torch.float32) / 2
    candidates = torch.rand(3, 7, generator=g) > 0.3
    to_head, to_dep = head_predictions(attn, candidates)
    a, c = attn.numpy(), candidates.numpy()
    for b in range(3):
        for layer in range(2):
            for head in range(2):
                for d in range(7):
                    allowed = c[b] & (np.arange(7) != d)
                    row = np.where(allowed, a[b, layer, head, d], -np.inf)
                    col = np.where(allowed, a[b, layer, head, :, d], -np.inf)
                    assert to_head[b, layer, head, d] == np.argmax(row)
                    assert to_dep[b, layer, head, d] == np.argmax(col)


def test_offsets_clip_to_the_sentence():
    words = np.array([1, 2, 3, 4])
    assert offset_predictions(words, [-1, 1]).tolist() == [[1, 2], [1, 3], [2, 4], [3, 4]]


def test_labels_fold_subtypes_but_keep_dobj():
    assert relation_label("nsubjpass") == "nsubj"
    assert relation_label("dobj") == "dobj"
    assert relation_label("nsubjpass", "canonical") == "nsubjpass"


def collected() -> DependencyAccuracy:
    collector = DependencyAccuracy(context())
    collector.update(view_of(planted(), [sentence(0), sentence(1)]))
    return collector


def test_accuracies_by_hand():
    heads = collected().tables()["dependency_heads"].set_index(["relation", "layer", "head", "direction"])
    # head 0, dependent -> head: a right, b wrong, d right, in both inputs
    assert heads.loc[("all", 0, 0, "dependent_to_head"), "accuracy"] == pytest.approx(2 / 3)
    assert heads.loc[("all", 0, 0, "dependent_to_head"), "n"] == 6
    assert heads.loc[("det", 0, 0, "dependent_to_head"), "accuracy"] == 1.0
    assert heads.loc[("nsubj", 0, 0, "dependent_to_head"), "accuracy"] == 0.0   # nsubjpass counted as nsubj
    # head 0, head -> dependent: every prediction wrong
    assert heads.loc[("all", 0, 0, "head_to_dependent"), "accuracy"] == 0.0
    # uniform head: only a (-> b) right, both ways
    assert heads.loc[("all", 0, 1, "dependent_to_head"), "accuracy"] == pytest.approx(1 / 3)
    assert heads.loc[("all", 0, 1, "head_to_dependent"), "accuracy"] == pytest.approx(1 / 3)


def test_offset_and_discordant_counts_by_hand():
    counts = collected().tables()["dependency_counts"]
    one = counts[(counts.relation == "all") & (counts.layer == 0) & (counts["head"] == 0)
                 & (counts.direction == "dependent_to_head")].set_index("offset")
    # offset +1: a -> b and b -> c right, d -> d (clipped) wrong; -1: only d -> c; others none
    assert one["offset_correct_choose"].to_dict() == {-3: 0, -2: 0, -1: 1, 1: 2, 2: 0}
    assert one["n_choose"].iloc[0] == 3 and one["n_test"].iloc[0] == 3   # inputs 0 (even) and 1 (odd)
    # against +1: only the head gets d, only the offset gets b
    assert (one.loc[1, "head_only_test"], one.loc[1, "offset_only_test"]) == (1, 1)
    # against -1: the head alone gets a; the offset alone gets nothing (d is right for both)
    assert (one.loc[-1, "head_only_choose"], one.loc[-1, "offset_only_choose"]) == (1, 0)


def test_merge_equals_one_pass():
    a, b = DependencyAccuracy(context()), DependencyAccuracy(context())
    a.update(view_of(planted()[:1], [sentence(0)]))
    b.update(view_of(planted()[1:], [sentence(1)]))
    merged = DependencyAccuracy(context())
    merged.load_state(DependencyAccuracy.merge([a.state(), b.state()]))
    pd.testing.assert_frame_equal(merged.tables()["dependency_counts"], collected().tables()["dependency_counts"])


def test_split_words_sum_to_and_average_from(tiny_model):
    """A word of two pieces is one unit; the multiword pair sharing pieces is skipped, and counted."""
    n = 6
    special = np.zeros(n, bool)
    special[[0, 5]] = True
    item = EncodedInput(0, "s", np.arange(n), np.zeros(n, int), special, special & (np.arange(n) == 0),
                        special & (np.arange(n) == 5), np.zeros(n, int), False,
                        word_pieces=[(1, 2), (3,), (4,), (4,)],
                        arcs=[Arc((1, 2), (3,), "nsubj"), Arc((4,), (4,), "aux"), Arc((4,), (3,), "dobj")])
    attn = torch.zeros(1, 1, 1, n, n)
    attn[0, 0, 0] = torch.eye(n)
    attn[0, 0, 0, 1] = torch.tensor([0, 0, 0, 0.6, 0.2, 0.2])
    attn[0, 0, 0, 2] = torch.tensor([0, 0.2, 0, 0.2, 0.2, 0.4])
    collector = DependencyAccuracy(Context(("m",), "d", 1, 1))
    collector.update(view_of(attn, [item]))
    assert collector.state()["notes"]["same_unit"] == 1
    heads = collector.tables()["dependency_heads"].set_index(["relation", "direction"])
    # the split word's mean row: to c (0.6 + 0.2) / 2 = 0.4, the largest -> right
    assert heads.loc[("nsubj", "dependent_to_head"), "accuracy"] == 1.0


DEMO = Path(__file__).resolve().parents[3] / "data" / "demo"


def test_enabled_from_a_protocol_on_a_tiny_model(tmp_path, tiny_model_dir):
    """The analysis through a protocol on the tiny random model: the tables agree with each other, with a
    straight recomputation of one head from the Hugging Face attentions, and the report states the claim."""
    from headstats.config.protocol import load_protocol
    from headstats.inputs.readers import read_records
    from headstats.model.encoding import encode_records
    from headstats.model.loading import load_model
    from headstats.report.builder import build_report
    from headstats.study.run import run_study

    protocol = {
        "name": "dependency-demo", "models": [{"name": "tiny", "path": str(tiny_model_dir)}],
        "datasets": [{"name": "mini", "path": str(DEMO / "mini.conllu")}],
        "scoring": {"roles": ["local"]}, "statistics": {"tau": 1.0, "sensitivity": False},
        "report": {"figures": {"formats": ["png"], "dpi": 72}},
        "analyses": ["dependency"], "analysis_options": {"dependency": {"min_count": 1, "labels": "canonical"}},
    }
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(protocol))
    result = run_study(load_protocol(path), tmp_path / "out", report=build_report)
    heads = pd.read_csv(result.out / "dependency_heads.csv")
    table = pd.read_csv(result.out / "dependency_table.csv")
    assert list(table.columns[:8]) == ["relation", "n", "layer", "head", "direction", "accuracy", "offset",
                                       "offset_accuracy"]
    # intervals clustered on sentences: defined from two sentences on, and they contain the accuracy
    many = heads.n_sentences >= 2
    assert many.any() and heads.loc[~many, "ci_low"].isna().all()
    assert ((heads.ci_low <= heads.accuracy) & (heads.accuracy <= heads.ci_high))[many].all()
    assert set(table["test"]) == {"signflip_sentences"}
    # Table 1's head is the best of dependency_heads for its relation
    for row in table.itertuples():
        assert row.accuracy == pytest.approx(heads[heads.relation == row.relation].accuracy.max())
    # one head recomputed straight from the model's attentions: layer 1, head 0, dependent -> head, all words
    loaded = load_model(str(tiny_model_dir))
    records = read_records(DEMO / "mini.conllu")
    right = total = 0
    per_sentence = []  # (words right, words) of each sentence: the clustered sums
    for item in encode_records(records, loaded.tokenizer).inputs:
        before = (right, total)
        with torch.no_grad():
            out = loaded.model(input_ids=torch.from_numpy(item.input_ids)[None], output_attentions=True)
        a = out.attentions[1][0, 0].numpy().astype(np.float64)
        words = list(dict.fromkeys(item.word_pieces))  # the words of a multiword token share their pieces
        for arc in item.arcs:
            if arc.dependent == arc.head:
                continue  # "Maria 's": one unit, not counted
            d, h = words.index(arc.dependent), words.index(arc.head)
            row = np.array([a[list(words[d])][:, list(w)].sum(1).mean() for w in words])
            row[d] = -np.inf
            right += int(np.argmax(row) == h)
            total += 1
        if total > before[1]:
            per_sentence.append((right - before[0], total - before[1]))
    mine = heads[(heads.relation == "all") & (heads.layer == 1) & (heads["head"] == 0)
                 & (heads.direction == "dependent_to_head")].iloc[0]
    assert (mine.n, mine.correct) == (total, right)
    c, n = np.array(per_sentence).T
    assert (mine.n_sentences, mine.c2, mine.cn, mine.nn) == (len(c), (c * c).sum(), (c * n).sum(), (n * n).sum())
    report = (result.out / "report.md").read_text()
    assert "Dependency relations in single heads" in report and "*Detail per relation (the verdict is the claim's line):*" in report


# Options: defaults, refusals, their check in a protocol before any model.


def test_defaults_follow_the_paper():
    from headstats.analyses.dependency.options import DependencyOptions

    options = DependencyOptions()
    assert (options.from_word, options.labels, options.offsets) == ("mean", "base", [-3, -2, -1, 1, 2])
    assert options.selection == "split" and options.alternative == "greater"


def options_protocol_file(tmp_path, **extra) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"models": [{"name": "x", "path": str(tmp_path / "no-model")}],
                                    "datasets": [{"name": "mini", "path": str(DEMO / "mini.conllu")}], **extra}))
    return path


def test_bad_option_is_one_protocol_error_naming_the_key(tmp_path):
    from headstats.config.protocol import load_protocol
    from headstats.errors import ProtocolError

    path = options_protocol_file(tmp_path, analyses=["dependency"],
                                 analysis_options={"dependency": {"from_word": "last"}})
    with pytest.raises(ProtocolError, match="analysis_options.dependency.from_word"):
        load_protocol(path)


def test_options_of_an_analysis_not_run_are_refused(tmp_path):
    from headstats.config.protocol import load_protocol
    from headstats.errors import ProtocolError

    path = options_protocol_file(tmp_path, analyses=["entropy"], analysis_options={"dependency": {"min_count": 5}})
    with pytest.raises(ProtocolError, match="not in 'analyses'"):
        load_protocol(path)


def star(index: int) -> EncodedInput:
    """[CLS] w1 .. w8 [SEP]: every word w1..w7 attaches to w8 (``dep``), w8 is the root."""
    n = 10
    special = np.zeros(n, bool)
    special[[0, 9]] = True
    return EncodedInput(index, f"star{index}", np.arange(n), np.zeros(n, int), special, special & (np.arange(n) == 0),
                        special & (np.arange(n) == 9), np.zeros(n, int), False,
                        word_pieces=[(i,) for i in range(1, 9)], arcs=[Arc((i,), (8,), "dep") for i in range(1, 8)])


def test_a_sentence_difference_above_four_is_counted_and_tested_by_its_exact_law():
    """Head 0 attends from every word to w8 (right on all 7 arcs); the best offset, +2, is right on w6 and w7
    (clipped to w8): each sentence has d = 7 - 2 = 5. Counted only up to |d| = 4 it fell to the normal
    approximation (p = 0.159 on the one tested sentence); counted now, one sentence of |d| = 5 gives the binomial
    p = 1/2."""
    from headstats.analyses.dependency.finish import dependency_table

    attn = torch.zeros(2, 1, 2, 10, 10)
    attn[:, 0, 0, :, 8] = 1.0
    attn[:, 0, 1] = 1 / 10
    collector = DependencyAccuracy(context())
    collector.update(view_of(attn, [star(0), star(1)]))
    collector.update(view_of(planted(), [sentence(2), sentence(3)]))  # a later batch with smaller |d|
    counts = collector.tables()["dependency_counts"]
    one = counts[(counts.relation == "dep") & (counts["head"] == 0) & (counts.direction == "dependent_to_head")
                 & (counts.offset == 2)].iloc[0]
    assert [one[f"absd{m}_test"] for m in range(1, 8)] == [0, 0, 0, 0, 1, 0, 0] and one["d2_test"] == 25
    assert "absd8_test" not in counts  # as many columns as the largest |d| (here 7: head 0 against -3, -2, -1)
    assert (counts[[c for c in counts if c.startswith("absd")]] >= 0).all().all()
    # shards merge into the one pass, whatever their largest |d|
    a, b = DependencyAccuracy(context()), DependencyAccuracy(context())
    a.update(view_of(attn, [star(0), star(1)]))
    b.update(view_of(planted(), [sentence(2), sentence(3)]))
    merged = DependencyAccuracy(context())
    merged.load_state(DependencyAccuracy.merge([b.state(), a.state()]))
    pd.testing.assert_frame_equal(merged.tables()["dependency_counts"], counts)
    row = dependency_table(counts[counts.relation == "dep"], min_count=1).iloc[0]
    assert (row["tested_head"], row["tested_offset"]) == (0, 2)
    assert row["method"] == "binomial" and row["p_unc"] == pytest.approx(0.5, rel=1e-12)
