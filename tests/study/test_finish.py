"""The end of a study on a tiny random model: the tables it writes equal scipy and statsmodels applied to the
per-input scores it wrote, and the manifest carries the typed provenance."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from tiny_study import DEMO, tiny_protocol

from headstats.config.protocol import load_protocol
from headstats.study.run import run_study


def test_run_study_tables_equal_scipy_and_statsmodels_on_its_own_scores(tmp_path, tiny_model_dir):
    protocol = load_protocol(tiny_protocol(tmp_path, tiny_model_dir, ["local", "delimiter"]))
    result = run_study(protocol, tmp_path / "out")
    scores = pd.read_parquet(tmp_path / "out" / "scores.parquet")
    tests = pd.read_csv(tmp_path / "out" / "tests.csv")
    assert len(tests) == 2 * 2 * 2  # layers x heads x roles
    expected = []
    for (role, layer, head), group in scores.groupby(["role", "layer", "head"], observed=True):
        row = tests[(tests.role == role) & (tests.layer == layer) & (tests["head"] == head)].iloc[0]
        ref = stats.ttest_1samp(group.score.to_numpy(float), 1.0, alternative="greater")
        assert row["n"] == len(group) == 12
        assert row["mean"] == pytest.approx(group.score.mean(), rel=1e-6)
        assert row["p_unc"] == pytest.approx(ref.pvalue, rel=1e-6, abs=1e-300)
        expected.append((row["p_unc"], row["p_corr"], row["reject"]))
    p_unc, p_corr, reject = map(np.array, zip(*expected))
    ref_reject, ref_corr, _, _ = multipletests(p_unc, alpha=0.05, method="holm")
    np.testing.assert_allclose(p_corr, ref_corr, rtol=1e-9)
    assert (reject == ref_reject).all()
    # the result object carries the same numbers as the folder
    assert len(result.scores_frame()) == len(scores)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["written_by"] == "headstats" and "tests.csv" in manifest["output_files"]
    # the typed provenance (headstats.provenance): weights, tokenizer, the data file's sha256, versions
    import hashlib

    provenance = manifest["provenance"]["tiny"]
    assert provenance["weights_sha256"] == manifest["models"]["tiny"]["weights_sha256"]
    assert provenance["tokenizer_fingerprint"] == manifest["models"]["tiny"]["vocab_sha256"]
    assert provenance["data_sha256"] == {"single": hashlib.sha256((DEMO / "sentences.txt").read_bytes()).hexdigest()}
    assert provenance["versions"]["numpy"] == np.__version__


def test_an_analysis_that_reads_the_studys_tables_finishes_on_them_and_keeps_only_its_own():
    """A spec's ``reads``: the study adds the role table and the models table (each model's group, seed and
    provenance) to the analysis' tables before its finish step, and keeps what the finish returns besides them; an
    analysis that reads nothing is left as the pass finished it."""
    from types import SimpleNamespace

    from headstats.analyses import ANALYSES, register_analysis
    from headstats.study.finish import finish_reading_study
    from headstats.tables.study_tables import MODELS, ROLES

    seen = {}

    def finish(tables, statistics, options, seed):
        seen.update(tables)
        return {"held": tables["roles"].assign(n_models=len(tables["models"]))}

    register_analysis("_reads_study", "headstats.analyses.distance.collect:AttentionDistance", selectable=False,
                      finish=finish, reads=(ROLES, MODELS))
    roles = pd.DataFrame({"model": ["a"], "dataset": ["d"], "layer": [0], "head": [0], "local": [True]})
    protocol = SimpleNamespace(statistics=None, seed=0, options_of=lambda name: None,
                               models=[SimpleNamespace(name="a", replicate_of="g", finetune=SimpleNamespace(seed=3))])
    passes = SimpleNamespace(provenance={"a": {"weights_sha256": "x"}}, arrays=[])
    primary = SimpleNamespace(roles=roles, tests=None, tables={})
    try:
        out = finish_reading_study(protocol, {"_reads_study": {"own": roles}, "distance": {"distance": roles}},
                                   passes, primary)
    finally:
        ANALYSES.unregister("_reads_study")
    assert set(seen) == {"own", "roles", "models"} and seen["roles"] is roles
    assert seen["models"].to_dict("records") == [{"model": "a", "replicate_of": "g", "finetune_seed": 3,
                                                  "provenance": {"weights_sha256": "x"}}]
    assert list(out["_reads_study"]) == ["own", "held"] and out["_reads_study"]["held"]["n_models"].tolist() == [1]
    assert out["distance"] == {"distance": roles}
