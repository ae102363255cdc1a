"""--set KEY=VALUE and --limit N: applied to the protocol's mapping before validation, checked as its own keys."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from headstats.config.overrides import apply_overrides, load_overridden, parse_assignment
from headstats.config.protocol import dump_protocol, load_protocol
from headstats.errors import HeadstatsError, ProtocolError
from headstats.registry import did_you_mean, nearest_name

REPO = Path(__file__).resolve().parents[2]
CLARK = REPO / "protocols" / "clark2019.yaml"
RAW = {"models": ["default"],
       "datasets": [{"name": "a", "path": "a.txt", "limit": 20}, {"name": "b", "path": "b.txt"},
                    {"name": "g", "glue": {"task": "sst2", "n": 500}}],
       "analyses": ["clustering"]}


@pytest.mark.parametrize("text, parts, value", [
    ("statistics.tau=2", ["statistics", "tau"], 2),
    ("statistics.tau=2.5", ["statistics", "tau"], 2.5),
    ("statistics.correction=fdr_bh", ["statistics", "correction"], "fdr_bh"),
    ("scoring.roles=[local, block]", ["scoring", "roles"], ["local", "block"]),
    ("output=null", ["output"], None),
    ("description=a=b", ["description"], "a=b"),          # only the first '=' splits
    ("statistics.sensitivity=false", ["statistics", "sensitivity"], False),
])
def test_values_are_read_as_yaml(text, parts, value):
    assert parse_assignment(text) == (parts, value)


def test_set_reaches_nested_keys_list_entries_and_analysis_options():
    out = apply_overrides(RAW, ["statistics.tau=2", "datasets.b.limit=7", "datasets.0.parse=none",
                                "models.default.revision=main", "analysis_options.clustering.n_permutations=99"])
    assert out["statistics"] == {"tau": 2}
    assert out["datasets"][1] == {"name": "b", "path": "b.txt", "limit": 7}
    assert out["datasets"][0]["parse"] == "none"
    assert out["models"] == [{"name": "default", "revision": "main"}]  # a name string becomes its mapping
    assert out["analysis_options"] == {"clustering": {"n_permutations": 99}}
    assert RAW["datasets"][1] == {"name": "b", "path": "b.txt"}  # the given mapping is left as it was
    assert apply_overrides(RAW, {"statistics.tau": 1.5})["statistics"] == {"tau": 1.5}  # from Python


def test_limit_caps_every_data_set_the_glue_sample_and_max_inputs():
    out = apply_overrides(RAW, limit=50)
    assert [d.get("limit") for d in out["datasets"]] == [20, 50, 50]  # 20 stays: already below
    assert out["datasets"][2]["glue"]["n"] == 50
    assert out["analysis_options"]["clustering"]["max_inputs"] == 50  # the default 100, capped
    wide = apply_overrides(RAW, limit=1000)
    assert wide["analysis_options"]["clustering"]["max_inputs"] == 100  # the default, below the limit
    assert wide["datasets"][2]["glue"]["n"] == 500
    every = apply_overrides(RAW, ["analysis_options.clustering.max_inputs=null"], limit=30)
    assert every["analysis_options"]["clustering"]["max_inputs"] == 30  # None (all inputs) is capped too
    # the assignments come first, the limit after: --set datasets.a.limit=5 --limit 10 reads 5
    assert apply_overrides(RAW, ["datasets.a.limit=5"], limit=10)["datasets"][0]["limit"] == 5


def test_overrides_are_validated_and_kept_in_the_resolved_protocol():
    protocol = load_overridden(CLARK, ["statistics.tau=2", "analysis_options.clustering.n_permutations=99",
                                               "datasets.ewt_dev.limit=7"], limit=50)
    assert protocol.statistics.tau == 2.0
    assert protocol.options_of("clustering").n_permutations == 99
    assert protocol.options_of("clustering").max_inputs == 50
    assert [(d.name, d.limit) for d in protocol.datasets] == [("wiki_pairs", 50), ("ewt_dev", 7), ("gum_dev", 50),
                                                             ("gap_dev", 50)]
    resolved = yaml.safe_load(dump_protocol(protocol))
    assert resolved["statistics"]["tau"] == 2.0
    assert resolved["analysis_options"]["clustering"]["n_permutations"] == 99
    assert [d["limit"] for d in resolved["datasets"]] == [50, 7, 50, 50]
    assert load_protocol(CLARK).fingerprint() != protocol.fingerprint()


@pytest.mark.parametrize("overrides, needles", [
    (["statistics.tua=2"], ["--set statistics.tua=2: unknown protocol key 'statistics.tua'",
                            "did you mean 'statistics.tau'?"]),
    (["stats.tau=1"], ["unknown protocol key 'stats'", "did you mean 'statistics'?"]),
    (["analysis_options.clustering.n_permutation=99"], ["did you mean 'analysis_options.clustering.n_permutations'?"]),
    (["analysis_options.clusterin.max_inputs=9"], ["unknown analysis 'clusterin'", "did you mean 'clustering'?"]),
    (["datasets.ewt.limit=3"], ["'datasets' has no entry named 'ewt'", "did you mean 'ewt_dev'?"]),
    (["datasets.9.limit=3"], ["'datasets' has 4 entries; give an index from 0 to 3"]),
    (["seed"], ["--set 'seed' is not KEY=VALUE"]),
    (["statistics.tau={a: 1}"], ["give one value or a list, not a mapping"]),
    (["name=x", "seed.x=1"], ["--set seed.x=1: invalid protocol at 'seed'", "it must be a whole number"]),
    (["statistics.tau=abc"], ["--set statistics.tau=abc: invalid protocol at 'statistics.tau': 'abc' is not "
                              "allowed; it must be expected a number, not 'abc'"]),
    (["statistics.correction=fdr"], ["--set statistics.correction=fdr: unknown correction 'fdr'",
                                     "did you mean 'fdr_bh'?"]),
    (["scoring.roles=[local, blok]"], ["--set scoring.roles=[local, blok]: unknown role 'blok'"]),
    (["statistics.tau=2", "datasets.0.limit=0"], ["--set datasets.0.limit=0: invalid protocol at "
                                                  "'datasets.0.limit': 0 is not allowed; it must be a number >= 1"]),
    (["analysis_options.clustering.n_permutations=5"], ["--set analysis_options.clustering.n_permutations=5: "
                                                        "invalid analysis_options.clustering.n_permutations"]),
])
def test_a_bad_override_is_one_message_naming_it(overrides, needles):
    with pytest.raises(HeadstatsError) as caught:
        load_overridden(CLARK, overrides)
    message = str(caught.value)
    assert "\n" not in message
    assert message.count("--set") == 1 or "KEY=VALUE" in message, message
    for needle in needles:
        assert needle in message, message


def test_a_problem_of_the_file_itself_is_not_blamed_on_an_override(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("datasets:\n  - {name: d, path: d.txt}\nstatistics: {test: tt}\n")
    with pytest.raises(HeadstatsError) as caught:
        load_overridden(path, ["statistics.tau=2"])
    assert "--set" not in str(caught.value) and "unknown test 'tt'" in str(caught.value)
    with pytest.raises(ProtocolError, match="--limit must be a whole number >= 1"):
        load_overridden(CLARK, limit=0)


def test_the_nearest_name_goes_to_the_first_registered_of_equals():
    # fdr is as near to fdr_bh as to fdr_by (difflib ratio 2*3/9 each): users mean Benjamini-Hochberg, listed first
    assert nearest_name("fdr", ["holm", "bonferroni", "fdr_bh", "fdr_by", "none"]) == "fdr_bh"
    assert nearest_name("fdr", ["fdr_by", "fdr_bh"]) == "fdr_by"
    assert did_you_mean("wilcox", ["t", "wilcoxon", "sign"]) == "; did you mean 'wilcoxon'?"
    assert did_you_mean("zzz", ["t", "wilcoxon"]) == ""
