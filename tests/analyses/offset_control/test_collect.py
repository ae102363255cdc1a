"""The offset-matched control of METHODS 6.2 on planted attention whose answer is computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from headstats.analyses.offset_control.collect import offset_excess, word_arcs, word_bias
from headstats.model.encoding import Arc, EncodedInput

N = 7  # [CLS] w0 w1 w2 w3 w4 [SEP]: word u is piece u + 1


def sentence(arcs):
    special = np.zeros(N, bool)
    special[[0, N - 1]] = True
    cls = special & (np.arange(N) == 0)
    sep = special & (np.arange(N) == N - 1)
    return EncodedInput(0, "s", np.arange(N), np.zeros(N, int), special, cls, sep, np.zeros(N, int), False,
                        word_pieces=[(u + 1,) for u in range(5)],
                        arcs=[Arc((d + 1,), (g + 1,), rel) for d, g, rel in arcs])


def planted(rows: dict[int, int]) -> torch.Tensor:
    """One layer, one head: query piece i puts all its weight on key piece rows[i] (else on [CLS])."""
    A = torch.zeros(1, 1, 1, N, N)
    for i in range(N):
        A[0, 0, 0, i, rows.get(i, 0)] = 1.0
    return A


ARCS = [(1, 2, "amod"), (0, 4, "amod"), (3, 1, "nsubj")]
REAL = torch.ones(1, N, dtype=torch.bool)


def test_word_bias_is_the_arc_bias_of_methods_1_3():
    A = planted({2: 3})  # piece 2 (word 1) -> piece 3 (word 2)
    words = word_arcs([sentence(ARCS)], N, ["amod", "nsubj"], "dependent_to_head")
    bias = word_bias(A, words.weights, REAL)
    # b(1 -> 2) = A[2, 3] / mean_j A[2, j] = 1 / (1/7)
    assert bias[0, 0, 0, 1, 2].item() == pytest.approx(7.0)
    assert bias[0, 0, 0, 1, 3].item() == 0.0


def test_a_next_word_head_has_no_excess_and_an_arc_following_head_has_all_of_it():
    words = word_arcs([sentence(ARCS)], N, ["amod", "nsubj"], "dependent_to_head")
    assert words.arcs == [[(1, 2, "amod"), (0, 4, "amod"), (3, 1, "nsubj")]]
    roles = [("amod",), ("nsubj",), ("amod", "nsubj")]
    next_word = planted({i: i + 1 for i in range(1, 5)})
    excess, left_out = offset_excess(next_word, words, REAL, roles)
    # amod arc 1 -> 2 (offset +1): b = 7; words 0, 2, 3 have a word at +1, each with b = 7: c = 7, e = 0.
    # amod arc 0 -> 4 (offset +4): only word 0 has a word at +4, and it is the arc's own: left out.
    # nsubj arc 3 -> 1 (offset -2): b = 0; words 2, 4 have a word at -2, b = 0 each: e = 0.
    np.testing.assert_allclose(excess[0, 0, 0].numpy(), [0.0, 0.0, 0.0], atol=1e-6)
    assert left_out.tolist() == [[1, 0, 1]]
    following = planted({2: 3, 4: 2})  # word 1 -> word 2 (the amod arc), word 3 -> word 1 (the nsubj arc)
    excess, _ = offset_excess(following, words, REAL, roles)
    # amod 1 -> 2: b = 7; the others at +1 (0, 2, 3) look at [CLS] or at word 1 (word 3: offset -2): c = 0
    # nsubj 3 -> 1: b = 7; at -2 word 2 -> 0 (b 0) and word 4 -> 2 (b 0): c = 0; the union averages 7 and 7
    np.testing.assert_allclose(excess[0, 0, 0].numpy(), [7.0, 7.0, 7.0], rtol=1e-6)


def test_an_input_without_an_arc_of_a_role_is_nan_and_the_other_direction_swaps_the_ends():
    words = word_arcs([sentence([(1, 2, "amod")])], N, ["amod", "advmod"], "head_to_dependent")
    assert words.arcs == [[(2, 1, "amod")]]
    excess, _ = offset_excess(planted({3: 2}), words, REAL, [("amod",), ("advmod",)])
    # head_to_dependent: query word 2 -> key word 1 (offset -1): b = 7; words 1, 3, 4 at -1 look at [CLS]: e = 7
    assert excess[0, 0, 0, 0].item() == pytest.approx(7.0)
    assert np.isnan(excess[0, 0, 0, 1].item())
    with pytest.raises(ValueError, match="arc direction"):
        word_arcs([sentence([])], N, ["amod"], "sideways")


def test_a_run_tests_the_excess_of_every_head_and_arc_role(tmp_path, tiny_model_dir):
    """``analyses: [offset_control]`` on gold parses: ``offset_control_tests`` has one row per head and arc role,
    and the per-input values are :func:`offset_excess` of the model's own maps."""
    import yaml

    from headstats.config.protocol import load_protocol
    from headstats.study.run import run_study

    demo = __import__("pathlib").Path(__file__).resolve().parents[3] / "data" / "demo" / "mini.conllu"
    protocol = {"name": "t", "models": [{"name": "tiny", "path": str(tiny_model_dir)}],
                "datasets": [{"name": "ud", "path": str(demo)}], "scoring": {"roles": ["syntactic:amod"]},
                "statistics": {"test": "t", "tau": 1.0, "sensitivity": False}, "analyses": ["offset_control"],
                "analysis_options": {"offset_control": {"relations": ["nsubj", "amod"]}},
                "report": {"figures": {"formats": ["png"], "dpi": 72}}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(protocol))
    study = run_study(load_protocol(tmp_path / "p.yaml"), tmp_path / "run")
    import pandas as pd

    tests = pd.read_csv(study.out / "offset_control_tests.csv")
    assert sorted(set(tests["role"])) == ["syntactic:amod_beyond_offset", "syntactic:nsubj_beyond_offset",
                                           "syntactic_beyond_offset"]
    assert len(tests) == 3 * 2 * 2 and (tests["alternative"] == "greater").all()
    assert tests["p_unc"].between(0, 1).all()
