"""Probing classifiers (METHODS 2.5): features gathered from planted maps, a probe that must find the one
informative head, right-branching by hand, and the analysis through a protocol on a tiny random model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from headstats.analyses.probing.collect import ProbeFeatures, held_out, right_branching, run_probe, run_probes
from headstats.engine.batch import view_of
from headstats.engine.collector import Context
from headstats.model.encoding import Arc, EncodedInput

DEMO = Path(__file__).resolve().parents[3] / "data" / "demo"
#: words a b c d at positions 1..4: a -> b, b -> d, c -> d, d is the root
ARCS = [Arc((1,), (2,), "det"), Arc((2,), (4,), "nsubj"), Arc((3,), (4,), "punct")]
GOLD = [1, 3, 3, -1]


def sentence(index: int) -> EncodedInput:
    n = 6
    special = np.zeros(n, bool)
    special[[0, 5]] = True
    return EncodedInput(index, f"s{index}", np.arange(n), np.zeros(n, int), special, special & (np.arange(n) == 0),
                        special & (np.arange(n) == 5), np.zeros(n, int), False,
                        word_pieces=[(1,), (2,), (3,), (4,)], arcs=list(ARCS))


def planted(b: int) -> torch.Tensor:
    """Head 0 of layer 0 points every word at its gold head (the root at itself); head 1 is uniform."""
    attn = torch.zeros(b, 1, 2, 6, 6)
    attn[:, 0, 1] = 1 / 6
    attn[:, 0, 0] = torch.eye(6)
    for d, h in enumerate(GOLD):
        if h >= 0:
            attn[:, 0, 0, d + 1] = 0
            attn[:, 0, 0, d + 1, h + 1] = 1.0
    return attn


def features() -> list[dict]:
    collector = ProbeFeatures(Context(("m",), "d", 1, 2))
    collector.update(view_of(planted(10), [sentence(k) for k in range(10)]))
    return collector.state()["sentences"]


def test_features_are_word_pairs_with_gold_heads():
    s = features()[0]
    assert s["attention"].shape == (2, 4, 4) and s["attention"].dtype == np.float16
    assert s["gold"].tolist() == GOLD and s["punct"].tolist() == [False, False, True, False]
    assert s["attention"][0, 0].tolist() == [0, 1, 0, 0]
    assert [held_out(k) for k in range(10)].count(True) == 2


def test_right_branching_by_hand():
    assert right_branching(4).tolist() == [1, 2, 3, 2]
    # scored words (not punct, not root): a (gold b: right), b (gold d; predicted c: wrong)
    test = [s for s in features() if held_out(s["index"])]
    assert run_probe("right_branching", [], test, None).tolist() == [True, False] * 2


def test_attention_only_probe_finds_the_informative_head():
    sentences = features()
    train = [s for s in sentences if not held_out(s["index"])]
    test = [s for s in sentences if held_out(s["index"])]
    # any positive weight on head 0 breaks the ties of the uniform head the right way: every held-out word right
    assert run_probe("attention_only", train, test, None, seed=0).tolist() == [True] * 4
    # no training sentence: no probe, every held-out word counts as wrong
    assert run_probe("attention_only", [], test, None).tolist() == [False] * 4


def test_enabled_from_a_protocol_on_a_tiny_model(tmp_path, tiny_model_dir):
    from headstats.config.protocol import load_protocol
    from headstats.inputs.readers import read_records
    from headstats.report.builder import build_report
    from headstats.study.run import run_study

    protocol = {"name": "probes", "models": [{"name": "tiny", "path": str(tiny_model_dir)}],
                "datasets": [{"name": "mini", "path": str(DEMO / "mini.conllu")}],
                "scoring": {"roles": ["local"]}, "statistics": {"tau": 1.0, "sensitivity": False},
                "report": {"figures": {"formats": ["png"], "dpi": 72}},
                "analyses": ["probing"], "seed": 3}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(protocol))
    result = run_study(load_protocol(path), tmp_path / "out", report=build_report)
    probes = pd.read_csv(result.out / "probes.csv").set_index("probe")
    assert list(probes.index) == ["right_branching", "distance_and_words", "attention_only", "attention_and_words"]
    assert probes["n_words"].nunique() == 1 and ((probes.uas >= 0) & (probes.uas <= 1)).all()
    # right-branching straight from the gold parses of the held-out sentences (no multiword token among them)
    records = read_records(DEMO / "mini.conllu")
    right = total = 0
    for k, rec in enumerate(records):
        if not held_out(k):
            continue
        m = len(rec.words_a)
        for i, w in enumerate(rec.words_a):
            if w.head < 0 or w.deprel == "punct":
                continue
            total += 1
            right += int((i + 1 if i + 1 < m else max(m - 2, 0)) == w.head)
    assert (probes.loc["right_branching", "n_words"], probes.loc["right_branching", "correct"]) == (total, right)
    assert probes.loc["attention_and_words", "vectors"] == "input_embeddings"
    assert "Probing classifiers over all heads" in (result.out / "report.md").read_text()


def test_probes_are_trained_once_in_the_finish_step_not_in_tables(monkeypatch):
    """tables() hands the sentences over (a shard merge or a second call trains nothing); the finish step
    trains each probe once per (model, data set) and drops the sentences, so they are never written."""
    import headstats.analyses.probing.collect as probing
    from headstats.analyses import get_analysis

    collector = ProbeFeatures(Context(("m",), "d", 1, 2, provenance={"m": {"path": "/nowhere"}}, seed=4))
    collector.update(view_of(planted(10), [sentence(k) for k in range(10)]))
    monkeypatch.setattr(probing, "run_probes", lambda *a, **k: (_ for _ in ()).throw(AssertionError("trained")))
    sentences = collector.tables()["probe_sentences"]
    assert len(sentences) == 10 and sentences["index"].tolist() == list(range(10))
    assert (sentences["source"] == "/nowhere").all()
    monkeypatch.undo()
    trained: list[str] = []

    def counted(kinds, *args, **kwargs):
        trained.extend(kinds)
        return run_probes(kinds, *args, **kwargs)

    monkeypatch.setattr(probing, "run_probes", counted)
    embeddings = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    monkeypatch.setattr(probing, "word_vectors", lambda *a, **k: (("embeddings", embeddings, 3, None), "planted"))
    # the spec's steps in order: train the probes (collect.py), then test them (finish.py)
    lines: list[str] = []
    out = get_analysis("probing").finished(collector.tables(), SimpleStatistics, probing.ProbingOptions(), 4,
                                           log=lines.append)
    assert "probe_sentences" not in out and trained == list(probing.PROBES)
    model, dataset = out["probes"][["model", "dataset"]].iloc[0]
    assert lines == [f"probing: training {len(probing.PROBES)} probes on {model} / {dataset} (10 sentences, 2 epochs)"]
    probes = out["probes"].set_index("probe")
    assert probes.loc["attention_only", "correct"] == 4 and (probes["seed"] == 4).all()
    assert probes.loc["right_branching", "correct"] == 2 and "ci_low" in probes  # then the statistics layer's step


class SimpleStatistics:
    correction, alpha, confidence = "holm", 0.05, 0.95


def test_batched_probes_give_the_logits_of_one_sentence_at_a_time():
    """A batch pads sentences of different lengths: every real word's logits over its real candidates are the
    ones the probe gives the sentence alone (the pair maps computed by halves equal the pair tensor's)."""
    import headstats.analyses.probing.collect as probing

    rng = np.random.default_rng(0)
    K, D = 3, 4
    table = rng.standard_normal((20, D)).astype(np.float32)
    vectors = ("embeddings", table, D, None)

    def one(m):
        gold = rng.integers(0, m, m)
        return {"attention": rng.random((K, m, m)).astype(np.float16), "gold": gold, "punct": np.zeros(m, bool),
                "pieces": [(int(rng.integers(20)),) for _ in range(m)]}

    sentences = [one(5), one(3)]
    torch.manual_seed(0)
    for kind in ("attention_only", "attention_and_words", "distance_and_words"):
        probe = probing._probe_class()(kind, K, D, 7)
        for name, p in probe.named_parameters():
            torch.nn.init.normal_(p)
        batch = probing._padded(sentences, vectors, True)
        together = probing._batch_logits(probe, batch)
        for b, s in enumerate(sentences):
            m = len(s["gold"])
            alone = probing._batch_logits(probe, probing._padded([s], vectors, True))[0]
            # the pair tensor v_c ++ v_d, as the probe's linear maps take it
            v = probing.sentence_vectors(s, vectors)
            pair = torch.cat([v[None, :, :].expand(m, m, -1), v[:, None, :].expand(m, m, -1)], -1)
            a = torch.from_numpy(s["attention"].astype(np.float32))
            if kind == "attention_and_words":
                direct = torch.einsum("dck,kdc->dc", probe.W(pair), a) + torch.einsum("dck,kcd->dc", probe.U(pair), a)
                direct = direct.masked_fill(torch.eye(m, dtype=torch.bool), float("-inf"))
                torch.testing.assert_close(alone, direct, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(together[b, :m, :m], alone, rtol=1e-5, atol=1e-5)
            assert torch.isinf(together[b, :m, m:]).all()  # padding is never a candidate


def test_probes_trained_together_are_trained_as_alone():
    """One optimiser over the probes' summed losses trains each as alone (Adam is per parameter)."""
    sentences = features()
    train = [s for s in sentences if not held_out(s["index"])]
    test = [s for s in sentences if held_out(s["index"])]
    embeddings = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    vectors = ("embeddings", embeddings, 3, None)
    together = run_probes(("attention_only", "distance_and_words"), train, test, vectors, seed=2)
    alone = run_probes(("attention_only",), train, test, vectors, seed=2)
    assert together["attention_only"].tolist() == alone["attention_only"].tolist() == [True] * 4
