"""init reads the data: roles that apply, and a tau per role that the data's ceilings allow (METHODS 1.6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from headstats.study.drafting import MASS_TAU, PAPER_TAU, Survey, choose_tau, survey

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("ceiling, chosen", [
    (4.5, ("bias", 3.0)), (20.0, ("bias", 3.0)),    # the paper's tau, with a margin of 1.5
    (4.49, ("bias", 2.5)), (3.0, ("bias", 2.0)),    # the largest half step at most 2/3 of the ceiling
    (2.99, ("mass", MASS_TAU)), (1.2, ("mass", MASS_TAU)),
])
def test_tau_follows_the_ceiling(ceiling, chosen):
    assert choose_tau(ceiling) == chosen


def test_single_sentences_drop_block_and_arcless_relations_and_score_short_local_as_mass(tmp_path, tiny_model_dir):
    data = tmp_path / "one.txt"
    data.write_text("the cat sat .\n")  # [CLS] the cat sat . [SEP]: 6 pieces
    found = survey(str(tiny_model_dir), [data])
    assert found.datasets[0].kind == "single sentences, raw text"
    assert found.left_out["block"] == "the data hold no sentence pairs"
    assert found.left_out["syntactic:dobj"] == "no input has an arc of dobj"  # spaCy: cat <-nsubj- sat only
    assert "block" not in found.roles and "syntactic:nsubj" in found.roles and found.relations == ["nsubj"]
    # local, window 2: key sets of 3, 4, 5, 5, 4, 3 pieces; ceiling mean(6 / |S|) = 9.4 / 6
    assert found.ceilings["local"] == pytest.approx(9.4 / 6, rel=1e-6)
    assert found.ceilings["delimiter_cls"] == pytest.approx(6.0)  # one key of 6
    assert (found.scale["local"], found.tau["local"]) == ("mass", MASS_TAU)
    assert found.tau["delimiter_cls"] == PAPER_TAU
    assert found.scale_spec() == {"default": "bias", "local": "mass"}
    # delimiter: [CLS] and [SEP] of 6 pieces, ceiling 6 / 2 = 3, so tau 2 (two thirds of it)
    assert found.ceilings["delimiter"] == pytest.approx(3.0)
    assert found.tau_spec() == {"default": PAPER_TAU, "local": MASS_TAU, "delimiter": 2.0}


def test_pairs_keep_block_at_its_ceiling(tmp_path, tiny_model_dir):
    data = tmp_path / "pairs.txt"
    data.write_text("the cat sat .\tthe dog ran .\n")
    found = survey(str(tiny_model_dir), [data])
    assert found.datasets[0].kind == "sentence pairs, raw text"
    assert found.ceilings["block"] == pytest.approx(2 + 2 / 4 + 1 / 4)  # 2 + 2/a + 1/b, a = b = 4 pieces
    assert found.scale["block"] == "mass" and "block" not in found.left_out


def test_conllu_uses_its_gold_parses(tiny_model_dir):
    found = survey(str(tiny_model_dir), [REPO / "data" / "demo" / "mini.conllu"])
    assert found.datasets[0].kind == "single sentences, parsed"
    assert "syntactic" in found.roles and found.relations


def test_without_a_parser_raw_text_gets_no_arc_roles(tmp_path, tiny_model_dir, monkeypatch):
    import headstats.study.drafting as drafting

    monkeypatch.setattr(drafting, "parser_installed", lambda name: False)
    data = tmp_path / "one.txt"
    data.write_text("the cat sat .\n")
    found = survey(str(tiny_model_dir), [data])
    assert not [r for r in found.roles if r.startswith("syntactic")]
    assert "not installed" in found.left_out["syntactic"]


def test_specs_write_one_number_when_all_agree():
    same = Survey([], ["a", "b"], [], {"a": 3.0, "b": 3.0}, {"a": "bias", "b": "bias"}, {"a": 9.0, "b": 9.0})
    assert same.tau_spec() == 3.0 and same.scale_spec() == "bias"
