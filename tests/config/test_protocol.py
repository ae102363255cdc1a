"""YAML protocols: validation with the path of the problem, name checks, path resolution, fingerprint, dump."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from headstats.errors import HeadstatsError, ProtocolError
from headstats.config.protocol import DEFAULT_ROLES, FinetuneRecipe, Protocol, dump_protocol, load_protocol

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


MINIMAL = "datasets:\n  - name: d\n    path: data.txt\n"


def test_quickstart_loads():
    protocol = load_protocol(REPO / "protocols" / "quickstart.yaml")
    assert protocol.name == "quickstart"
    assert [m.name for m in protocol.models] == ["default"]
    assert [d.name for d in protocol.datasets] == ["demo_single", "demo_pairs"]
    assert protocol.scoring.roles == list(DEFAULT_ROLES)
    assert protocol.scoring.relations == ["nsubj", "dobj", "amod", "advmod"]
    assert (protocol.statistics.test, protocol.statistics.tau, protocol.statistics.correction) == ("t", 3.0, "holm")
    assert protocol.report.top_k == 5
    for ds in protocol.datasets:
        assert Path(ds.path).is_absolute() and Path(ds.path).is_file(), ds.path


def test_defaults(tmp_path):
    protocol = load_protocol(write(tmp_path, MINIMAL))
    assert [m.name for m in protocol.models] == ["default"]
    assert protocol.scoring.window == 2 and protocol.scoring.count_special_queries
    assert protocol.scoring.arc_direction == "dependent_to_head"
    assert (protocol.statistics.alpha, protocol.statistics.tau, protocol.statistics.family) == (0.05, 3.0, ["model", "dataset"])


def test_unknown_nested_key(tmp_path):
    with pytest.raises(HeadstatsError, match=r"unknown key 'scoring\.windw'"):
        load_protocol(write(tmp_path, MINIMAL + "scoring:\n  windw: 2\n"))
    with pytest.raises(HeadstatsError, match=r"unknown key 'datasets\.0\.pth'"):
        load_protocol(write(tmp_path, "datasets:\n  - name: d\n    pth: x.txt\n"))


def test_unknown_key_suggests_the_nearest_key_of_its_section(tmp_path):
    with pytest.raises(HeadstatsError) as info:
        load_protocol(write(tmp_path, MINIMAL + "statistcs:\n  tau: 2\n"))
    assert str(info.value) == "unknown key 'statistcs' in protocol; did you mean 'statistics'?"
    with pytest.raises(HeadstatsError, match=r"unknown key 'scoring\.windw' in protocol; did you mean 'window'\?$"):
        load_protocol(write(tmp_path, MINIMAL + "scoring:\n  windw: 2\n"))
    text = "models:\n  - name: ft\n    finetune: {task: sst2, learning_rte: 0.1}\ndatasets: [{name: d, path: x.txt}]\n"
    with pytest.raises(HeadstatsError, match=r"'models\.0\.finetune\.learning_rte' .*did you mean 'learning_rate'"):
        load_protocol(write(tmp_path, text))
    with pytest.raises(HeadstatsError, match=r"unknown key 'colour' in protocol; remove it or check its spelling"):
        load_protocol(write(tmp_path, MINIMAL + "colour: red\n"))  # nothing near: no guess


def test_invalid_yaml_gives_line(tmp_path):
    text = "name: x\ndatasets:\n  - name: d\n    path: [unclosed\nscoring: {window: 2}\n"
    with pytest.raises(HeadstatsError, match=r"not valid YAML at line \d+") as info:
        load_protocol(write(tmp_path, text))
    line = int(str(info.value).split("at line ")[1].split(";")[0])
    assert 4 <= line <= 5
    bad_indent = "datasets:\n  - name: d\n    path: x\n   scoring: 1\n"
    with pytest.raises(HeadstatsError, match="at line 4"):
        load_protocol(write(tmp_path, bad_indent))


def test_missing_file_and_non_mapping(tmp_path):
    with pytest.raises(HeadstatsError, match="does not exist"):
        load_protocol(tmp_path / "nope.yaml")
    with pytest.raises(HeadstatsError, match="YAML mapping"):
        load_protocol(write(tmp_path, "- a\n- b\n"))
    with pytest.raises(HeadstatsError, match="missing the required key 'datasets'"):
        load_protocol(write(tmp_path, "name: x\n"))


def test_bad_values_name_their_key(tmp_path):
    with pytest.raises(HeadstatsError, match=r"'statistics\.alpha'"):
        load_protocol(write(tmp_path, MINIMAL + "statistics:\n  alpha: 1.5\n"))
    with pytest.raises(HeadstatsError, match=r"'scoring\.arc_direction'"):
        load_protocol(write(tmp_path, MINIMAL + "scoring:\n  arc_direction: sideways\n"))


def test_unknown_role_lists_valid(tmp_path):
    with pytest.raises(HeadstatsError, match="unknown role 'lokal'") as info:
        load_protocol(write(tmp_path, MINIMAL + "scoring:\n  roles: [local, lokal]\n"))
    for name in ("local", "delimiter", "block", "syntactic"):
        assert name in str(info.value)


def test_unknown_test_lists_valid(tmp_path):
    with pytest.raises(HeadstatsError, match="unknown test 'ttest'") as info:
        load_protocol(write(tmp_path, MINIMAL + "statistics:\n  test: ttest\n"))
    for name in ("t", "wilcoxon", "sign", "bootstrap", "permutation"):
        assert name in str(info.value)


def test_unknown_correction_lists_valid(tmp_path):
    with pytest.raises(HeadstatsError, match="unknown correction 'bh'") as info:
        load_protocol(write(tmp_path, MINIMAL + "statistics:\n  correction: bh\n"))
    for name in ("holm", "bonferroni", "fdr_bh", "fdr_by", "none"):
        assert name in str(info.value)
    text = MINIMAL + "models: [a, b]\ncompare:\n  - base: a\n    finetuned: [b]\n    correction: sidak\n"
    with pytest.raises(HeadstatsError, match="unknown correction 'sidak'"):
        load_protocol(write(tmp_path, text))


def test_dataset_with_path_and_glue(tmp_path):
    text = "datasets:\n  - name: d\n    path: x.txt\n    glue: {task: mrpc}\n"
    with pytest.raises(HeadstatsError, match="exactly one of 'path' or 'glue'"):
        load_protocol(write(tmp_path, text))
    with pytest.raises(HeadstatsError, match="exactly one of 'path' or 'glue'"):
        load_protocol(write(tmp_path, "datasets:\n  - name: d\n"))


def test_duplicate_names(tmp_path):
    text = "datasets:\n  - {name: d, path: a.txt}\n  - {name: e, path: b.txt}\n  - {name: d, path: c.txt}\n"
    with pytest.raises(HeadstatsError, match="dataset names must be unique; repeated: d"):
        load_protocol(write(tmp_path, text))
    with pytest.raises(HeadstatsError, match="model names must be unique; repeated: m"):
        load_protocol(write(tmp_path, MINIMAL + "models: [m, m]\n"))


class CountedName(str):
    """A name that counts how often it is compared for equality (the work of a duplicate check)."""

    comparisons = 0

    def __eq__(self, other):
        CountedName.comparisons += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_the_duplicate_name_checks_compare_each_name_a_few_times_not_every_pair():
    """validate on 100,000 data sets took over 10 minutes: every name was compared with every other. The
    check of model and data set names now makes a number of comparisons linear in the names (one Counter),
    so 2,000 data sets cost a few thousand comparisons, not 2,000 x 2,000."""
    from headstats.config.protocol import DatasetSpec, ModelSpec

    n = 2000
    names = [CountedName(f"d{i}") for i in range(n)] + [CountedName("d7")]
    protocol = Protocol.model_construct(
        models=[ModelSpec.model_construct(name=CountedName("m"))],
        datasets=[DatasetSpec.model_construct(name=name) for name in names], compare=[])
    CountedName.comparisons = 0
    with pytest.raises(ValueError, match="dataset names must be unique; repeated: d7$"):
        protocol._names_unique_and_known()
    assert CountedName.comparisons <= 4 * n


def test_compare_names_known_models(tmp_path):
    text = MINIMAL + "models: [a]\ncompare:\n  - base: a\n    finetuned: [zz]\n"
    with pytest.raises(HeadstatsError, match="names model 'zz'"):
        load_protocol(write(tmp_path, text))


def test_relation_alias_normalised(tmp_path):
    protocol = load_protocol(write(tmp_path, MINIMAL + "scoring:\n  relations: [nsubj, obj, amod]\n"))
    assert protocol.scoring.relations == ["nsubj", "dobj", "amod"]


def test_relative_paths_resolved_against_protocol_folder(tmp_path, monkeypatch):
    study = tmp_path / "study"
    (study / "data").mkdir(parents=True)
    (study / "data" / "x.txt").write_text("the cat sat\n")
    (study / "models" / "m").mkdir(parents=True)
    text = ("models:\n  - {name: m, path: models/m}\n"
            "datasets:\n  - {name: d, path: data/x.txt}\n  - {name: g, glue: {task: mrpc, root: data}}\n"
            "  - {name: missing, path: data/none.txt}\n")
    path = write(study, text)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    protocol = load_protocol(path)
    assert protocol.datasets[0].path == str((study / "data" / "x.txt").resolve())
    assert protocol.datasets[1].glue.root == str((study / "data").resolve())
    assert protocol.models[0].path == str((study / "models" / "m").resolve())
    assert protocol.datasets[2].path == "data/none.txt"  # found nowhere: left as written
    # the working directory wins when the path exists there
    (elsewhere / "data").mkdir()
    (elsewhere / "data" / "x.txt").write_text("a dog\n")
    assert load_protocol(path).datasets[0].path == str((elsewhere / "data" / "x.txt").resolve())


def test_fingerprint(tmp_path):
    path = write(tmp_path, MINIMAL + "statistics:\n  tau: 3.0\n")
    first = load_protocol(path).fingerprint()
    assert len(first) == 64 and set(first) <= set("0123456789abcdef")
    assert load_protocol(path).fingerprint() == first
    other = load_protocol(write(tmp_path, MINIMAL + "statistics:\n  tau: 2.5\n", "q.yaml"))
    assert other.fingerprint() != first
    changed = load_protocol(path)
    changed.statistics.tau = 2.5
    assert changed.fingerprint() == other.fingerprint()


def test_dump_round_trip():
    protocol = load_protocol(REPO / "protocols" / "quickstart.yaml")
    text = dump_protocol(protocol)
    again = Protocol.model_validate(yaml.safe_load(text))
    assert again == protocol
    assert again.fingerprint() == protocol.fingerprint()
    assert dump_protocol(again) == text


# ------------------------------------------------------------------------------------ files that are not protocols


def test_protocol_path_that_is_a_folder(tmp_path):
    with pytest.raises(ProtocolError, match="is a folder; give the protocol's YAML file"):
        load_protocol(tmp_path)


def test_protocol_not_utf8(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: café\n".encode("latin-1"))
    with pytest.raises(ProtocolError, match=r"is not UTF-8 text \(byte 9\); save it as UTF-8"):
        load_protocol(path)


def test_protocol_nested_too_deeply(tmp_path):
    with pytest.raises(ProtocolError, match="nested more than 100 levels deep"):
        load_protocol(write(tmp_path, "a: " + "[" * 5000 + "]" * 5000 + "\n"))
    # brackets in quotes and comments do not count
    text = MINIMAL + "description: '" + "[" * 200 + "'  # " + "{" * 200 + "\n"
    assert load_protocol(write(tmp_path, text)).description == "[" * 200
    deep = "".join(" " * i + f"k{i}:\n" for i in range(150)) + " " * 150 + "v\n"  # block nesting
    with pytest.raises(ProtocolError, match="nested more than 100 levels deep"):
        load_protocol(write(tmp_path, deep))


def test_recursion_error_of_the_parser_is_one_line(tmp_path, monkeypatch):
    def recurse(text, Loader=None):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(yaml, "load", recurse)
    with pytest.raises(ProtocolError, match="is nested too deeply to read"):
        load_protocol(write(tmp_path, MINIMAL))


@pytest.mark.parametrize("text, kind", [("- a\n- b\n", "a YAML list"), ("3\n", "a YAML int"),
                                        ("just words\n", "a YAML str"), ("", "empty")])
def test_protocol_that_is_not_a_mapping(tmp_path, text, kind):
    with pytest.raises(ProtocolError, match=f"is {kind}; it must be a YAML mapping with at least 'datasets'"):
        load_protocol(write(tmp_path, text))


def test_key_with_nul_is_shown_escaped(tmp_path):
    with pytest.raises(ProtocolError) as info:
        load_protocol(write(tmp_path, MINIMAL + '"sco\\0ring": 1\n'))
    assert str(info.value) == "unknown key 'sco\\x00ring' in protocol; did you mean 'scoring'?"


def test_unknown_key_reported_before_other_problems(tmp_path):
    with pytest.raises(ProtocolError, match=r"^unknown key 'scoring\.windw' in protocol"):
        load_protocol(write(tmp_path, "datasets: []\nscoring: {windw: 2}\n"))


# ------------------------------------------------------------------------------------------------ strict values


@pytest.mark.parametrize("extra, where, words", [
    ("seed: true\n", "seed", "expected a number, not true"),
    ("seed: 1.5\n", "seed", "1.5 is not allowed; it must be a whole number"),
    ("seed: '3'\n", "seed", "'3' is not allowed; it must be a whole number"),
    ("seed: -1\n", "seed", "-1 is not allowed; it must be a number >= 0"),
    ("statistics: {tau: .nan}\n", "statistics.tau", "finite number (NaN and inf are refused)"),
    ("statistics: {tau: -.inf}\n", "statistics.tau", "finite number"),
    ("statistics: {tau: -0.5}\n", "statistics.tau", "greater than or equal to 0"),
    ("statistics: {tau: false}\n", "statistics.tau", "not false"),
    ("scoring: {window: true}\n", "scoring.window", "not true"),
    ("scoring: {roles: []}\n", "scoring.roles", "the list is empty; give at least one role or leave the key out"),
    ("scoring: {relations: []}\n", "scoring.relations", "at least one relation"),
    ("models: []\n", "models", "at least one model"),
])
def test_strict_values(tmp_path, extra, where, words):
    with pytest.raises(ProtocolError) as info:
        load_protocol(write(tmp_path, MINIMAL + extra))
    assert f"invalid protocol at '{where}'" in str(info.value) and words in str(info.value), str(info.value)


def test_whole_numbers_still_read_as_floats(tmp_path):
    protocol = load_protocol(write(tmp_path, MINIMAL + "statistics: {tau: 2}\nseed: 7\n"))
    assert protocol.statistics.tau == 2.0 and isinstance(protocol.statistics.tau, float) and protocol.seed == 7


def test_unknown_relation_in_syntactic_role_refused_at_load(tmp_path):
    with pytest.raises(ProtocolError, match="unknown dependency relation 'subj'"):
        load_protocol(write(tmp_path, MINIMAL + "scoring:\n  roles: [local, 'syntactic:subj']\n"))
    protocol = load_protocol(write(tmp_path, MINIMAL + "scoring:\n  roles: ['syntactic:obj']\n"))
    assert protocol.scoring.roles == ["syntactic:obj"]  # the role keeps its name; its relation is dobj


@pytest.mark.parametrize("field, value, words", [
    ("epochs", -1, "greater than 0"), ("epochs", 0, "greater than 0"), ("epochs", float("nan"), "finite"),
    ("learning_rate", 0, "greater than 0"), ("learning_rate", 2, "less than or equal to 1"),
    ("batch_size", 0, "greater than or equal to 1"), ("max_length", 4, "greater than or equal to 8"),
    ("train_rows", 0, "greater than or equal to 1"), ("eval_rows", -3, "greater than or equal to 1"),
    ("weight_decay", -0.1, "greater than or equal to 0"), ("warmup_ratio", 1.0, "less than 1"),
    ("seed", True, "not true"), ("seed", -1, "greater than or equal to 0"), ("train_split", "test", "'train' or 'dev'"),
])
def test_finetune_recipe_bounds(field, value, words):
    with pytest.raises(ValidationError) as info:
        FinetuneRecipe(task="sst2", **{field: value})
    error = info.value.errors()[0]
    assert error["loc"][0] == field and words in error["msg"], error
    assert FinetuneRecipe(task="sst2").epochs == 1.0


def test_statistics_n_resamples_auto_and_effect_of_interest():
    from headstats.config.protocol import StatisticsOptions

    default = StatisticsOptions()
    assert default.n_resamples == "auto" and default.effect_of_interest == 0.5
    assert StatisticsOptions(n_resamples=20000).n_resamples == 20000
    for bad in (50, "many", 1000.5, True):
        with pytest.raises(ValidationError, match="must be 'auto' or a whole number >= 99"):
            StatisticsOptions(n_resamples=bad)
    for bad in (0, -0.5, float("inf")):
        with pytest.raises(ValidationError):
            StatisticsOptions(effect_of_interest=bad)
# ------------------------------------------------------------------------ scales, variants, tau per role (issue 8)
def test_tau_and_scale_per_role(tmp_path):
    protocol = load_protocol(write(tmp_path, MINIMAL + "statistics: {tau: {default: 3, block: 1.5}}\n"
                                   "scoring: {roles: [local, block], scale: {block: mass}}\n"))
    st, sc = protocol.statistics, protocol.scoring
    assert st.tau_of("block") == 1.5 and st.tau_of("local") == 3.0 and st.tau_text() == "3 (block: 1.5)"
    assert sc.scale_of("block") == "mass" and sc.scale_of("local") == "bias"
    assert st.tau_by_role(["local", "block"]) == {"local": 3.0, "block": 1.5}
    plain = load_protocol(write(tmp_path, MINIMAL + "statistics: {tau: 2}\n", "p.yaml"))
    assert plain.statistics.tau == 2.0 and plain.statistics.tau_of("block") == 2.0
    assert plain.scoring.scale == "bias" and plain.scoring.local_edges == "exact"


@pytest.mark.parametrize("extra, words", [
    ("statistics: {tau: {default: 3, blok: 1}}\n", "statistics.tau names 'blok', which is not in scoring.roles"),
    ("statistics: {tau: {block: .nan}}\n", "finite number"),
    ("statistics: {tau: {block: -1}}\n", "greater than or equal to 0"),
    ("statistics: {tau: {}}\n", "the mapping is empty"),
    ("scoring: {scale: grams}\n", "must be one of bias, mass, ceiling"),
    ("scoring: {scale: {local: mas}}\n", "scale of 'local' must be one of bias, mass, ceiling"),
    ("scoring: {local_edges: paper}\n", "scoring.local_edges"),
    ("scoring: {block_entropy: true, scale: {block: mass}}\n", "needs scale 'bias' for block"),
])
def test_bad_tau_and_scale_refused_in_one_line(tmp_path, extra, words):
    with pytest.raises(ProtocolError) as info:
        load_protocol(write(tmp_path, MINIMAL + extra))
    assert words in str(info.value) and "\n" not in str(info.value), str(info.value)
def test_clark_analysis_options_defaults_and_checks():
    from headstats.config.protocol import validate_protocol
    from headstats.errors import ProtocolError

    base = {"datasets": [{"name": "d", "path": "x.txt"}], "analyses": ["surface", "clustering", "pictures"]}
    p = validate_protocol(base)
    names = {h.name: (h.measure, h.threshold) for h in p.options_of("surface").hypotheses}
    assert names["previous_token"] == ("prev", 0.5) and names["broad"] == ("entropy_ratio", 0.75)
    clustering, pictures = p.options_of("clustering"), p.options_of("pictures")
    assert (clustering.max_inputs, clustering.n_permutations, clustering.broad_share) == (100, 9999, 0.75)
    assert clustering.datasets is None  # every data set
    assert (pictures.n_inputs, pictures.max_pieces, pictures.heads, pictures.sentence_ids) == (3, 64, [], None)

    def given(**options):
        return validate_protocol({**base, "analysis_options": options})

    mine = given(surface={"hypotheses": [{"name": "a", "measure": "next", "threshold": 0.3, "layers": [0, 1]}]})
    assert [h.model_dump() for h in mine.options_of("surface").hypotheses] == [
        {"name": "a", "measure": "next", "threshold": 0.3, "layers": [0, 1]}]
    with pytest.raises(ProtocolError, match="unknown measure 'nxt'"):
        given(surface={"hypotheses": [{"name": "a", "measure": "nxt", "threshold": 0.3}]})
    with pytest.raises(ProtocolError, match="unique"):
        given(surface={"hypotheses": [{"name": "a", "measure": "next", "threshold": 0.3}] * 2})
    with pytest.raises(ProtocolError, match="analysis_options.clustering.max_inputz"):
        given(clustering={"max_inputz": 3})
    with pytest.raises(ProtocolError, match="analysis_options.pictures.n_inputs"):
        given(pictures={"n_inputs": 0})
    assert given(clustering={"datasets": ["d"]}).options_of("clustering").datasets == ["d"]
    with pytest.raises(ProtocolError, match="analysis_options.clustering.datasets names 'e', which is not in "
                                            "'datasets'; use one of d$"):
        given(clustering={"datasets": ["d", "e"]})
    with pytest.raises(ProtocolError, match="analysis_options.clustering.datasets"):
        given(clustering={"datasets": []})  # clustering on no data set: leave it out of 'analyses'
    with pytest.raises(ProtocolError, match=r"move it to analysis_options: \{clustering: \{broad_share"):
        given(surface={"broad_share": 0.6})


@pytest.mark.parametrize("key, value", [("surface", {"hypotheses": []}), ("clustering", {"max_inputs": 5}),
                                        ("pictures", {"n_inputs": 2})])
def test_old_top_level_analysis_keys_are_one_error_with_the_fix(tmp_path, key, value):
    from headstats.study.preflight import check_values

    raw = {"datasets": [{"name": "d", "path": "x.txt"}], "analyses": [key], key: value}
    with pytest.raises(ProtocolError) as info:
        load_protocol(write(tmp_path, yaml.safe_dump(raw)))
    message = str(info.value)
    assert message == (f"invalid protocol: '{key}:' is no longer a top-level key; move '{key}:' under "
                       f"analysis_options: {{{key}: ...}} (with {key} in 'analyses')")
    fixed = load_protocol(write(tmp_path, yaml.safe_dump(
        {**{k: v for k, v in raw.items() if k != key}, "analysis_options": {key: value}})))
    check_values(fixed)  # the preflight's second look agrees


def test_resolved_protocols_of_old_runs_are_upgraded():
    from headstats.config.protocol import upgrade_resolved, validate_protocol

    old = {"datasets": [{"name": "d", "path": "x.txt"}], "analyses": ["surface", "clustering"],
           "surface": {"hypotheses": [], "broad_share": 0.6}, "clustering": {"max_inputs": 7},
           "pictures": {"n_inputs": 3}, "analysis_options": {}}
    new = upgrade_resolved(old)
    assert new["analysis_options"] == {"surface": {"hypotheses": []},
                                       "clustering": {"max_inputs": 7, "broad_share": 0.6}}
    assert not {"surface", "clustering", "pictures"} & set(new) and "surface" in old  # a copy
    assert validate_protocol(new).analysis_options["clustering"]["broad_share"] == 0.6
    today = {"datasets": [{"name": "d", "path": "x.txt"}]}
    assert upgrade_resolved(today) is today


def test_clark2019_protocol_loads():
    protocol = load_protocol(REPO / "protocols" / "clark2019.yaml")
    assert protocol.analyses[:3] == ["surface", "clustering", "pictures"]
    assert (protocol.scoring.max_length, protocol.scoring.too_long) == (128, "truncate")
    wiki = next(d for d in protocol.datasets if d.name == "wiki_pairs")
    assert wiki.path.endswith("wiki.test.raw") and wiki.parse == "none" and wiki.limit == 1000
    clustering = protocol.options_of("clustering")  # the paper's 1,000 WikiText segments, WikiText only
    assert (clustering.datasets, clustering.max_inputs) == (["wiki_pairs"], 1000)
    from headstats.analyses import analysis_options

    assert {h.name for h in protocol.options_of("surface").hypotheses} >= {
        "previous_token", "next_token", "broad"}
    assert protocol.options_of("clustering").max_inputs == 1000  # the paper's 1,000 WikiText segments
    assert "gradients" not in protocol.analyses  # no loss on the default model: it could only skip
    assert protocol.options_of("pictures").n_inputs == 3
def _seeds_raw(**model):
    return {"models": ["default", {"name": "ft", "finetune": {"task": "sst2", "seed": 5}, **model}],
            "datasets": [{"name": "d", "path": "x.txt"}],
            "compare": [{"base": "default", "finetuned": ["ft"], "min_change": 0.2, "min_change_scale": "share"}]}


def test_seeds_expand_into_one_model_per_seed_and_the_comparison_names_them_all():
    from headstats.config.protocol import Protocol, validate_protocol

    protocol = validate_protocol(_seeds_raw(seeds=[0, 1, 2]))
    names = [m.name for m in protocol.models]
    assert names == ["default", "ft@seed0", "ft@seed1", "ft@seed2"]
    assert [m.finetune.seed for m in protocol.models[1:]] == [0, 1, 2]
    assert {m.replicate_of for m in protocol.models[1:]} == {"ft"}
    assert protocol.compare[0].finetuned == names[1:]
    assert protocol.compare[0].min_change == 0.2 and protocol.compare[0].min_change_scale == "share"
    assert protocol.replicate_groups() == {"ft": names[1:]}
    # the resolved protocol validates to itself (validate == run, protocol.resolved.yaml reruns)
    assert Protocol.model_validate(protocol.model_dump()).model_dump() == protocol.model_dump()


@pytest.mark.parametrize("model, message", [
    ({"seeds": []}, "'seeds' is empty"),
    ({"seeds": [1, 1]}, "repeats a seed"),
    ({"seeds": [0, True]}, "expected a number"),
])
def test_bad_seeds_are_one_line_protocol_errors(model, message):
    from headstats.config.protocol import validate_protocol

    with pytest.raises(HeadstatsError, match=message):
        validate_protocol(_seeds_raw(**model))


def test_seeds_need_a_recipe_and_min_change_must_be_positive():
    from headstats.config.protocol import validate_protocol

    raw = _seeds_raw()
    raw["models"][1] = {"name": "ft", "path": "somewhere", "seeds": [0, 1]}
    with pytest.raises(ProtocolError, match="'seeds' repeats a fine-tuning recipe"):
        validate_protocol(raw)
    raw = _seeds_raw(seeds=[0, 1])
    raw["compare"][0]["min_change"] = 0
    with pytest.raises(ProtocolError, match="min_change"):
        validate_protocol(raw)


@pytest.mark.parametrize("key, name, message", [
    ("test", "wilcox", r"compare\[0\]\.test: unknown paired test 'wilcox'; did you mean 'wilcoxon'\?; "
                       r"choose one of wilcoxon, t"),
    ("seed_test", "moderated", r"compare\[0\]\.seed_test: unknown test over seeds 'moderated'; did you mean "
                               r"'moderated_t'\?; choose one of moderated_t, t"),
])
def test_a_comparison_names_its_tests_from_their_registries(tmp_path, key, name, message):
    text = MINIMAL + f"models: [a, b]\ncompare:\n  - base: a\n    finetuned: [b]\n    {key}: {name}\n"
    with pytest.raises(HeadstatsError, match=message):
        load_protocol(write(tmp_path, text))


def test_a_paired_test_and_a_test_over_seeds_registered_in_python_are_valid_in_yaml(tmp_path):
    from headstats.stats.paired import PAIRED_TESTS, paired_t, register_paired_test
    from headstats.stats.seeds import SEED_TESTS, register_seed_test, t_over_seeds

    register_paired_test("my_paired", paired_t, parameter="mean", effect_size="cohen_dz")
    register_seed_test("my_seeds", t_over_seeds)
    try:
        text = (MINIMAL + "models: [a, b]\ncompare:\n  - base: a\n    finetuned: [b]\n    test: my_paired\n"
                "    seed_test: my_seeds\n")
        protocol = load_protocol(write(tmp_path, text))
        assert (protocol.compare[0].test, protocol.compare[0].seed_test) == ("my_paired", "my_seeds")
    finally:
        PAIRED_TESTS.unregister("my_paired")
        SEED_TESTS.unregister("my_seeds")
    with pytest.raises(HeadstatsError, match="unknown paired test .my_paired."):
        load_protocol(write(tmp_path, text))


def test_an_analysis_turned_on_by_a_protocol_section_runs_when_that_section_is_not_empty(tmp_path):
    """``protocol_field``: the analysis runs when its section has a value, before those of ``analyses``, and
    its options are that section's value."""
    from headstats.analyses import ANALYSES, register_analysis

    register_analysis("compare_field_test", "headstats.analyses.distance.collect:AttentionDistance",
                      selectable=False, protocol_field="compare")
    try:
        plain = Protocol.model_validate({"name": "x", "datasets": [{"name": "d", "path": "x.txt"}],
                                         "analyses": ["distance"]})
        assert plain.enabled_analyses() == ["pande_roles", "distance"]  # the roles: turned on by ``scoring``
        compared = Protocol.model_validate({
            "name": "x", "models": [{"name": "a", "path": "a"}, {"name": "b", "path": "b"}],
            "datasets": [{"name": "d", "path": "x.txt"}], "analyses": ["distance"],
            "compare": [{"base": "a", "finetuned": ["b"]}]})
        # the roles (scoring) and the comparison (compare) are on too; the comparison reads the study's tables, so it
        # comes after those that make them; those of ``analyses`` last
        enabled = compared.enabled_analyses()
        assert sorted(enabled[:3]) == ["compare_field_test", "finetune_comparison", "pande_roles"]
        assert enabled[2:] == ["finetune_comparison", "distance"]
        assert compared.options_of("compare_field_test") is compared.compare
    finally:
        ANALYSES.unregister("compare_field_test")
