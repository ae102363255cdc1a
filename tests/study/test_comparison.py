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
        "report": {"figures": {"formats": ["png"], "dpi": 72}},  # tables are tested here; figures in tests/report
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
    with pytest.raises(HeadstatsError, match="different tokenizers"):
        check_comparable(protocol, {"base": str(tiny_model_dir), "other": str(other)})
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(compare_protocol(tmp_path, tiny_model_dir, other)), "--out", str(out)])
    assert result.exit_code == 2 and "different tokenizers" in result.output
    assert not out.exists()


def comparison_case(tmp_path: Path, tiny_model_dir: Path):
    """Two models, two data sets, batches of 4: 15 pairs and 10 singles."""
    other = build_tiny_bert(tmp_path / "other", seed=1)
    path = compare_protocol(tmp_path, tiny_model_dir, other)
    protocol = yaml.safe_load(path.read_text())
    protocol["datasets"].append({"name": "singles", "path": str(DEMO / "sentences.txt"), "limit": 10})
    protocol["scoring"] = {"batch_size": 4}
    path.write_text(yaml.safe_dump(protocol))

    def check(result, protocol):
        similarity = result.tables["compare_similarity"]
        assert set(similarity["dataset"]) == {"pairs", "singles"}
        assert similarity.groupby("dataset")["n"].max().to_dict() == {"pairs": 15, "singles": 10}
        mass = result.tables["compare_special_mass"]
        assert set(mass["model"]) == {"base", "other"} and len(mass) == 2 * 2 * 4 * 3

    return path, [tiny_model_dir, other], {"base": 4 + 3, "other": 4 + 3}, check


def seeds_protocol(folder: Path, base: Path, seeds: list[Path]) -> Path:
    protocol = {
        "name": "seeds",
        "models": [{"name": "base", "path": str(base)},
                   *[{"name": f"ft-s{i}", "path": str(p), "replicate_of": "ft"} for i, p in enumerate(seeds)]],
        "datasets": [{"name": "pairs", "path": str(DEMO / "pairs.txt"), "limit": 15}],
        "statistics": {"tau": 1.0, "sensitivity": False},
        "scoring": {"batch_size": 4},
        "compare": [{"base": "base", "finetuned": ["ft"], "test": "t", "min_change": 0.05}],
        "report": {"figures": {"formats": ["png"], "dpi": 72}},  # tables are tested here; figures in tests/report
    }
    path = folder / "seeds.yaml"
    path.write_text(yaml.safe_dump(protocol))
    return path


def seeds_case(tmp_path: Path, tiny_model_dir: Path):
    """A replicate group of three seeds, 15 pairs in batches of 4; the seed-level tables hold the mean over seeds
    of each seed's paired change, and seed-to-seed distances."""
    seeds = [build_tiny_bert(tmp_path / f"s{i}", seed=10 + i) for i in range(3)]

    def check(result, protocol):
        assert protocol.compare[0].finetuned == ["ft-s0", "ft-s1", "ft-s2"]
        scores = result.scores_frame()
        changes = result.tables["compare_seed_changes"]
        assert len(changes) == 4 * 10 and set(changes["group"]) == {"ft"}
        row = changes[(changes.role == "local") & (changes.layer == 1) & (changes["head"] == 0)].iloc[0]
        one = scores[(scores.role == "local") & (scores.layer == 1) & (scores["head"] == 0)]
        before = one[one.model == "base"].set_index("sentence_id").score
        per_seed = [(one[one.model == f"ft-s{i}"].set_index("sentence_id").score - before).mean() for i in range(3)]
        from scipy import stats as sps

        ref = sps.ttest_1samp(per_seed, 0.0)
        assert row["mean_change"] == pytest.approx(sum(per_seed) / 3)
        assert row["p_t"] == pytest.approx(ref.pvalue) and row["seed_test"] == "moderated_t"
        assert row["p_unc"] != pytest.approx(ref.pvalue)  # the moderated t borrows the other cells' variances
        assert row["signflip_floor"] == pytest.approx(0.25) and row["n_seeds"] == 3
        # seed-to-seed similarity pairs are collected in the same pass, and kept out of the base comparison
        distance = result.tables["compare_seed_distance"]
        assert len(distance) == 4 and distance["cos_seed_seed"].between(0, 1).all()
        assert set(result.tables["compare_similarity"]["model_a"]) == {"base"}
        claims = result.tables["claims"]
        seeds = claims[claims["unit"] == "seeds"]
        assert {"later_layers_change_most", "sep_attention_falls", "delimiter_heads_lost",
                "syntactic_heads_gained"} <= set(seeds["claim"])
        # three seeds: the exact sign-flip test cannot reach alpha (floor 1/8 one-sided), so none is decided
        assert set(seeds["verdict"]) == {"cannot tell"} and seeds["reason"].str.startswith("too few seeds").all()
        assert (tmp_path / "out" / "claims.csv").is_file()
        report = (tmp_path / "out" / "report.md").read_text()
        # the report leads with the claims table, then the answer: the seed-level section comes before the
        # per-model summary, and repeats the registry's verdicts of the seed claims
        answer = report.index("\n## The answer: what fine-tuning changed beyond seed noise\n")
        assert report.index("\n## Claims, tested\n") < answer
        assert answer < report.index("\n## Summary\n") < report.index("\n## Pretrained vs fine-tuned\n")
        assert '- Claim "delimiter heads are lost": **cannot tell** (too few seeds' in report[answer:]
        assert report.index("**ft on ", answer) < report.index("\n## Summary\n")

    return (seeds_protocol(tmp_path, tiny_model_dir, seeds), [tiny_model_dir, *seeds],
            {name: 4 for name in ["base", "ft-s0", "ft-s1", "ft-s2"]}, check)


@pytest.mark.parametrize("case", [comparison_case, seeds_case], ids=["comparison", "seeds"])
def test_each_model_is_loaded_once_and_each_batch_runs_once_through_it(case, tmp_path, tiny_model_dir, monkeypatch):
    """Every model of a study (compared pairs, replicate seeds) is loaded once, and each batch goes through each
    model once, whatever the number of data sets and collectors."""
    from collections import Counter

    from headstats.engine import forward as extraction
    from headstats.model import loading as models
    from headstats.report.builder import build_report
    from headstats.study.run import run_study

    path, model_dirs, expected_forwards, check = case(tmp_path, tiny_model_dir)
    loads, forwards = Counter(), Counter()
    real_load = models.load_model

    def load(spec, **kwargs):
        loads[spec] += 1
        return real_load(spec, **kwargs)

    def counted(real):
        def forward(loaded, *args, **kwargs):
            forwards[loaded.name] += 1
            return real(loaded, *args, **kwargs)
        return forward

    monkeypatch.setattr(models, "load_model", load)
    for name in ("forward_attentions", "forward_fused"):  # transformers' eager path, or the fused one (every pass)
        monkeypatch.setattr(extraction, name, counted(getattr(extraction, name)))
    protocol = load_protocol(path)
    result = run_study(protocol, tmp_path / "out", report=build_report)
    assert loads == {str(p): 1 for p in model_dirs}
    assert forwards == expected_forwards
    check(result, protocol)


def test_a_paired_test_and_a_test_over_seeds_registered_from_outside_run_from_a_protocol(tmp_path, tiny_model_dir):
    """``compare: test`` and ``seed_test`` name registry entries: a sign test and a sign-flip test over seeds
    registered here are what the run's tables hold (checked against scipy)."""
    import numpy as np
    from scipy import stats as sps

    from headstats.stats.paired import PAIRED_TESTS, paired_t, register_paired_test
    from headstats.stats.seeds import SEED_TESTS, register_seed_test, signflip_over_seeds, t_over_seeds
    from headstats.study.run import run_study

    def sign_test(d, *, alternative, confidence):
        out = paired_t(d, alternative=alternative, confidence=confidence)
        nz = d[d != 0]
        out["p_unc"] = float(sps.binomtest(int((nz > 0).sum()), nz.size, alternative=alternative).pvalue)
        return out

    def signflip(values, *, mu=0.0, alternative="two-sided", confidence=0.95):
        return {**t_over_seeds(values, mu=mu, alternative=alternative, confidence=confidence),
                "p": signflip_over_seeds(values, mu=mu, alternative=alternative)}

    register_paired_test("sign", sign_test, parameter="mean", effect_size="cohen_dz")
    register_seed_test("signflip", signflip)
    try:
        seeds = [build_tiny_bert(tmp_path / f"s{i}", seed=10 + i) for i in range(3)]
        path = seeds_protocol(tmp_path, tiny_model_dir, seeds)
        raw = yaml.safe_load(path.read_text())
        raw["compare"][0].update(test="sign", seed_test="signflip")
        path.write_text(yaml.safe_dump(raw))
        result = run_study(load_protocol(path), tmp_path / "out")
    finally:
        PAIRED_TESTS.unregister("sign")
        SEED_TESTS.unregister("signflip")
    scores = result.scores_frame()
    one = scores[(scores.role == "local") & (scores.layer == 1) & (scores["head"] == 0)]
    before = one[one.model == "base"].set_index("sentence_id").score
    paired = result.tables["compare_paired_tests"]
    row = paired[(paired.model_after == "ft-s0") & (paired.role == "local") & (paired.layer == 1)
                 & (paired["head"] == 0)].iloc[0]
    d = (one[one.model == "ft-s0"].set_index("sentence_id").score - before).to_numpy()
    assert row["test"] == "sign"
    assert row["p_unc"] == pytest.approx(sps.binomtest(int((d > 0).sum()), int((d != 0).sum())).pvalue)
    changes = result.tables["compare_seed_changes"]
    cell = changes[(changes.role == "local") & (changes.layer == 1) & (changes["head"] == 0)].iloc[0]
    per_seed = np.array([(one[one.model == f"ft-s{i}"].set_index("sentence_id").score - before).mean()
                         for i in range(3)])
    exact = sps.permutation_test((per_seed,), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue
    assert cell["seed_test"] == "signflip" and cell["p_unc"] == pytest.approx(exact)  # 2/8 or 1 with 3 seeds
