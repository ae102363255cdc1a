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
