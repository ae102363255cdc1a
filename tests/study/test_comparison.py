"""A protocol that compares two models end to end, and the early refusal of models with other tokenizers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from conftest import build_tiny_bert
from headstats.cli.main import app
from headstats.study.comparison import check_comparable
from headstats.errors import HeadstatsError
from headstats.config.protocol import load_protocol

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def compare_protocol(folder: Path, base: Path, other: Path) -> Path:
    protocol = {
        "name": "cmp",
        "models": [{"name": "base", "path": str(base)}, {"name": "other", "path": str(other)}],
        "datasets": [{"name": "pairs", "path": str(DEMO / "pairs.txt"), "limit": 15}],
        "statistics": {"tau": 1.0, "sensitivity": False},
        "compare": [{"base": "base", "finetuned": ["other"], "test": "wilcoxon"}],
    }
    path = folder / "cmp.yaml"
    path.write_text(yaml.safe_dump(protocol))
    return path


def test_compare_two_models_end_to_end(tmp_path, tiny_model_dir):
    other = build_tiny_bert(tmp_path / "other", seed=1)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(compare_protocol(tmp_path, tiny_model_dir, other)), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    paired = pd.read_parquet(out / "compare_paired_tests.parquet")
    # 2 layers x 2 heads x 10 roles (pairs: block included), each paired over the 15 inputs
    assert len(paired) == 4 * 10
    scores = pd.read_parquet(out / "scores.parquet")
    one = scores[(scores.role == "local") & (scores.layer == 1) & (scores["head"] == 0)]
    before = one[one.model == "base"].set_index("sentence_id").score
    after = one[one.model == "other"].set_index("sentence_id").score
    row = paired[(paired.role == "local") & (paired.layer == 1) & (paired["head"] == 0)].iloc[0]
    assert row["n"] == 15
    assert row["median_diff"] == pytest.approx((after - before).median())
    similarity = pd.read_csv(out / "compare_similarity.csv")
    assert len(similarity) == 4 and similarity["cosine_mean"].between(0, 1).all()
    assert (out / "compare_transitions.csv").exists()
    assert "Pretrained vs fine-tuned" in (out / "report.md").read_text()


def test_models_with_different_tokenizers_are_refused_before_scoring(tmp_path, tiny_model_dir):
    other = build_tiny_bert(tmp_path / "other", seed=1)
    vocab = (other / "vocab.txt").read_text().splitlines()
    vocab[vocab.index("book")] = "zebra"  # same size as the model's embeddings, one word different
    (other / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (other / "tokenizer.json").unlink()
    protocol = load_protocol(compare_protocol(tmp_path, tiny_model_dir, other))
    with pytest.raises(HeadstatsError, match="tokenizers differ"):
        check_comparable(protocol, {"base": str(tiny_model_dir), "other": str(other)})
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(compare_protocol(tmp_path, tiny_model_dir, other)), "--out", str(out)])
    assert result.exit_code == 2 and "tokenizers differ" in result.output
    assert not out.exists()


def test_a_comparison_study_loads_each_model_once_and_runs_each_batch_once(tmp_path, tiny_model_dir, monkeypatch):
    """Two models, two data sets, batches of 4: exactly one load per model and one forward per (model, batch)."""
    from collections import Counter

    from headstats.engine import forward as extraction
    from headstats.model import loading as models
    from headstats.study.run import run_study

    other = build_tiny_bert(tmp_path / "other", seed=1)
    loads, forwards = Counter(), Counter()
    real_load, real_forward = models.load_model, extraction.forward_attentions

    def load(spec, **kwargs):
        loads[spec] += 1
        return real_load(spec, **kwargs)

    def forward(loaded, batch):
        forwards[loaded.name] += 1
        return real_forward(loaded, batch)

    monkeypatch.setattr(models, "load_model", load)
    monkeypatch.setattr(extraction, "forward_attentions", forward)
    path = compare_protocol(tmp_path, tiny_model_dir, other)
    protocol = yaml.safe_load(path.read_text())
    protocol["datasets"].append({"name": "singles", "path": str(DEMO / "sentences.txt"), "limit": 10})
    protocol["scoring"] = {"batch_size": 4}
    path.write_text(yaml.safe_dump(protocol))
    result = run_study(load_protocol(path), tmp_path / "out")
    assert loads == {str(tiny_model_dir): 1, str(other): 1}
    assert forwards == {"base": 4 + 3, "other": 4 + 3}  # 15 pairs and 10 singles in batches of 4
    similarity = result.tables["compare_similarity"]
    assert set(similarity["dataset"]) == {"pairs", "singles"}
    assert similarity.groupby("dataset")["n"].max().to_dict() == {"pairs": 15, "singles": 10}
    mass = result.tables["compare_special_mass"]
    assert set(mass["model"]) == {"base", "other"} and len(mass) == 2 * 2 * 4 * 3
