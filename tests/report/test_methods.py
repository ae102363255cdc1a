"""The methods paragraph: the parameter each test is about, the registry's words for every test and
correction, and the methods heading."""

from __future__ import annotations

import pandas as pd
import pytest

from headstats.config.protocol import Protocol
from headstats.report.blocks import Report, render_markdown
from headstats.report.methods import methods_paragraph, methods_section


@pytest.mark.parametrize("test, parameter", [("t", "mean"), ("wilcoxon", "pseudo-median"), ("sign", "median"),
                                             ("bootstrap", "mean")])
def test_methods_paragraph_names_the_parameter_the_test_is_about(test, parameter):
    # issue 8: it said "H0: mean score <= tau" for every test; Wilcoxon is about the pseudo-median, sign the median
    protocol = Protocol.model_validate({"name": "p", "models": ["m"], "datasets": [{"name": "d1", "path": "x.txt"}],
                                        "statistics": {"test": test, "correction": "fdr_bh"}})
    manifest = {"protocol_sha256": "0" * 64, "models": {"m": {"architecture": "BertModel", "n_layers": 6,
                                                              "n_heads": 2}},
                "datasets": {"d1": {"n_read": 20, "pairs": 0, "parses": "none"}}}
    text = methods_paragraph(protocol, manifest, pd.DataFrame({"n_resamples": [143999, 143999]}))
    assert f"H0: {parameter} score <= tau = 3" in text and f"H1: {parameter} score > tau" in text
    assert "p_corr <= alpha" in text and "`ci_low_adj`" in text and "false-coverage-rate" in text
    assert "effect of interest d = 0.5" in text and "power at the observed effect" in text  # says it is NOT that
    assert ("143999 resamples" in text) == (test == "bootstrap")


def test_methods_paragraph_says_how_many_heads_stopped_resampling_early():
    protocol = Protocol.model_validate({"name": "p", "models": ["m"], "datasets": [{"name": "d1", "path": "x.txt"}],
                                        "statistics": {"test": "bootstrap"}})
    manifest = {"protocol_sha256": "0" * 64, "models": {"m": {"architecture": "BertModel", "n_layers": 6,
                                                              "n_heads": 2}},
                "datasets": {"d1": {"n_read": 20, "pairs": 0, "parses": "none"}}}
    drawn = pd.DataFrame({"n_resamples": pd.array([143999, 250, 500, 143999, None], dtype="Int64")})
    text = methods_paragraph(protocol, manifest, drawn)
    assert "The test drew up to 143999 resamples per head" in text
    assert "2 of 4 heads stopped earlier, once their corrected decision was settled" in text


def test_the_methods_paragraph_names_every_registered_test_and_correction_by_its_registry_entry():
    # The drift this catches: TEST_NAMES / CORRECTION_NAMES copied the registries' words and missed t_ddof0
    # (the methods paragraph then said "a one-sided t_ddof0"). Every registered name is described from its entry.
    from headstats.stats.corrections import CORRECTIONS
    from headstats.stats.onesample import ONE_SAMPLE_TESTS

    manifest = {"protocol_sha256": "0" * 64, "models": {"m": {"architecture": "BertModel", "n_layers": 6,
                                                              "n_heads": 2}},
                "datasets": {"d1": {"n_read": 20, "pairs": 0, "parses": "none"}}}
    assert "t_ddof0" in ONE_SAMPLE_TESTS
    for test, correction in zip(ONE_SAMPLE_TESTS.names(), [*CORRECTIONS.names()] * 3):
        protocol = Protocol.model_validate({"name": "p", "models": ["m"], "datasets": [{"name": "d1", "path": "x.txt"}],
                                            "statistics": {"test": test, "correction": correction}})
        text = methods_paragraph(protocol, manifest)
        assert f"one-sided {ONE_SAMPLE_TESTS.get(test).description}, and" in text
        assert f"multiple comparisons with {CORRECTIONS.get(correction).description} over" in text
    assert ONE_SAMPLE_TESTS.describe("t_ddof0").startswith("one-sample t-test with the sd of ddof = 0")
    assert CORRECTIONS.describe("fdr_bh", "short") == "Benjamini-Hochberg" and CORRECTIONS.describe("x") == "x"


def test_methods_section_is_a_heading_and_the_paragraph():
    protocol = Protocol.model_validate({"name": "p", "models": ["m"], "datasets": [{"name": "d1", "path": "x.txt"}]})
    manifest = {"protocol_sha256": "ab" * 32, "models": {"m": {"architecture": "BertModel", "n_layers": 6,
                                                               "n_heads": 2}},
                "datasets": {"d1": {"n_read": 20, "pairs": 0, "parses": "none"}}}
    report = Report("t")
    methods_section(report, protocol, manifest)
    md = render_markdown(report)
    assert "## Methods\n" in md and methods_paragraph(protocol, manifest) in md
    assert "We scored every attention head of m (BertModel, 6 layers x 2 heads) on d1 (20 inputs, 0 of them " \
           "pairs; no parse)." in md and "protocol sha256 `abababababababab`" in md


@pytest.mark.parametrize("statistics, said", [
    ({"test": "bootstrap"}, True),
    ({"test": "bootstrap", "sensitivity": False}, False),
    ({"test": "bootstrap", "sequential": False}, False),
    ({"test": "bootstrap", "n_resamples": 99999}, False),
    ({"test": "permutation"}, False),
])
def test_methods_paragraph_says_when_the_tau_grid_decides_by_importance_sampling(statistics, said):
    protocol = Protocol.model_validate({"name": "p", "models": ["m"], "datasets": [{"name": "d1", "path": "x.txt"}],
                                        "statistics": statistics})
    manifest = {"protocol_sha256": "0" * 64, "models": {"m": {"architecture": "BertModel", "n_layers": 6,
                                                              "n_heads": 2}},
                "datasets": {"d1": {"n_read": 20, "pairs": 0, "parses": "none"}}}
    text = methods_paragraph(protocol, manifest, pd.DataFrame({"n_resamples": [143999, 250]}))
    assert ("decided by importance sampling" in text) == said
